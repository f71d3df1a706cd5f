// The machine model every other part reads: devices in a tree (CPU/NUMA domains, PCI bridges and
// switches, GPUs, NVSwitches, NICs and their ports), extra links (NVLink, C2C, network) with
// bandwidths, and the path class between any two devices as NCCL and nvidia-smi name them.
// Detection (hwloc, sysfs, NVML) and import (NCCL XML, hwloc XML, our JSON) all produce this.
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace coral::topology {

enum class Kind { Host, Cpu, PciSwitch, Pci, Gpu, NvSwitch, Nic, Port };
enum class LinkType { Pcie, NvLink, C2C, Smp, Net };

// Ordered from best to worst, as NCCL's path types (NODE from nvidia-smi: across host bridges
// within one NUMA node's package).
enum class Path { LOC, NVL, NVB, C2C, PIX, PXB, PHB, NODE, SYS, NET };

struct Device {
  Kind kind;
  std::string id;   // PCI bus id "0000:0f:00.0", or "cpu0", "nvswitch:0000:1a:00.0", a port name
  int parent = -1;  // tree parent (PCI upstream, CPU for root devices, host for CPUs)
  std::map<std::string, std::string> attrs;  // kind-specific facts, kept verbatim for round trips
  std::string attr(const std::string& k, const std::string& def = "") const {
    auto it = attrs.find(k);
    return it == attrs.end() ? def : it->second;
  }
};

struct Link {
  int a, b;
  LinkType type;
  double bw;      // GB/s, one direction
  int lanes = 0;  // NVLink count
};

struct PathInfo {
  Path type;
  double bw;      // bottleneck GB/s
  int lanes = 0;  // NVLink lanes for NVL/NVB (the NV# of nvidia-smi)
};

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Deepest device tree a file may describe (host, CPU, then PCI levels); real machines use
// under 16. Loaders refuse deeper input with an error instead of recursing into it.
constexpr int kMaxDepth = 64;

struct Topology {
  std::vector<Device> devices;
  std::vector<Link> links;  // non-tree links (the PCI/CPU tree links are implied by parent)
  // What a loader dropped or changed, one sentence each (a self-link, an unknown element);
  // shown by coral-topo and logged by the library. Not part of the model's identity (==).
  std::vector<std::string> notes;

  int add(Kind k, std::string id, int parent, std::map<std::string, std::string> attrs = {});
  int find(const std::string& id) const;  // -1 if absent; constant time (ids never change once added)
  std::vector<int> of_kind(Kind k) const;
  std::vector<std::vector<int>> children() const;  // per device, in index order
  int depth(int d) const;                          // 0 for a root
  int hops(int a, int b) const;                    // tree edges between a and b
  // Network endpoints: every port, and every NIC listed without ports (partial files).
  std::vector<int> nic_endpoints() const;
  int host_of(int d) const;
  int cpu_of(int d) const;  // nearest CPU (NUMA domain) ancestor, -1 if none

  // Bandwidth of d's link to its parent (PCIe from link_speed/width, SMP for CPUs).
  double up_bw(int d) const;
  PathInfo path(int a, int b) const;
  bool operator==(const Topology& o) const;

 private:
  // id -> index for the devices indexed so far; find() catches up with devices added since.
  mutable std::unordered_map<std::string, int> index_;
  mutable size_t indexed_ = 0;
};

// "" when attribute key=value of a device of kind k is in range, else why not (with the range).
// Both loaders apply it, so what one exports the other reads back.
std::string check_attr(Kind k, const std::string& key, const std::string& value);
// A PCI bus id as lspci -D and NCCL write it: domain (1-8 hex digits), bus, device, function.
bool is_bus_id(const std::string& s);

// Several machines as one model: each copy's ids get the host's name as a prefix.
Topology combine(const std::vector<Topology>& machines, const std::vector<std::string>& names);

const char* kind_name(Kind k);
Kind kind_from(const std::string& s);  // throws Error
const char* link_name(LinkType t);
LinkType link_from(const std::string& s);
const char* path_name(Path p);

// "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> GB/s per lane after encoding; 0 when unparseable.
double pcie_lane_gbs(const std::string& link_speed);
// NVLink bandwidth per lane (GB/s) for a GPU's SM version, as NCCL tabulates it.
double nvlink_lane_gbs(int sm);

}  // namespace coral::topology
