// Network interfaces from sysfs: /sys/class/net (speed, NUMA node, PCI device) and
// /sys/class/infiniband (per port: link layer InfiniBand or Ethernet = RoCE, rate, GUIDs).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "topology/detect.h"

namespace coral::topology {
namespace {

namespace fs = std::filesystem;

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The PCI bus id a class device sits on ("0000:3b:00.0"), or "" for virtual devices.
std::string pci_of(const fs::path& dev) {
  std::error_code ec;
  fs::path real = fs::canonical(dev / "device", ec);
  if (ec) return "";
  std::string name = real.filename().string();
  bool looks = name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
  return looks ? name : "";
}

// Where a NIC belongs: the PCI device if the model has it, else the CPU of its NUMA node.
int attach_point(Topology& t, int host, const std::string& bus, const fs::path& dev, const std::string& name) {
  if (!bus.empty()) {
    if (int d = t.find(bus); d >= 0) {
      t.devices[d].kind = Kind::Nic;
      return d;
    }
  }
  std::string numa = read_line(dev / "device" / "numa_node");
  int cpu = t.find("cpu" + (numa.empty() || numa == "-1" ? std::string("0") : numa));
  if (cpu < 0) {
    auto cpus = t.of_kind(Kind::Cpu);
    cpu = cpus.empty() ? host : cpus.front();
  }
  std::string id = bus.empty() ? "virtual:" + name : bus;
  if (int d = t.find(id); d >= 0) return d;
  return t.add(
      Kind::Nic, id, cpu,
      bus.empty() ? std::map<std::string, std::string>{{"virtual", "1"}} : std::map<std::string, std::string>{});
}

// "100 Gb/sec (4X EDR)" -> "100000" (Mb/s, the unit NCCL's speed uses).
std::string rate_mbps(const std::string& rate) {
  double gb = std::atof(rate.c_str());
  return gb > 0 ? fmt::format("{:g}", gb * 1000) : "";
}

}  // namespace

void detect_net(Topology& t, int host, const std::string& sysfs) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(sysfs) / "class/net", ec)) {
    std::string name = e.path().filename().string();
    if (name == "lo") continue;
    std::string bus = pci_of(e.path());
    std::map<std::string, std::string> a{{"link_layer", "ethernet"}};
    // Mb/s; -1, unreadable or (some drivers) 4294967295 when unknown: kept only when plausible
    std::string speed = read_line(e.path() / "speed");
    if (!speed.empty() && speed != "0" && check_attr(Kind::Port, "speed", speed).empty()) a["speed"] = speed;
    if (auto v = read_line(e.path() / "address"); !v.empty()) a["address"] = v;
    if (auto v = read_line(e.path() / "operstate"); !v.empty()) a["state"] = v;
    if (int p = t.find(name); p >= 0) {  // hwloc saw it already: add what sysfs knows
      for (auto& [k, v] : a) t.devices[p].attrs[k] = v;
      continue;
    }
    t.add(Kind::Port, name, attach_point(t, host, bus, e.path(), name), std::move(a));
  }
  for (const auto& e : fs::directory_iterator(fs::path(sysfs) / "class/infiniband", ec)) {
    std::string name = e.path().filename().string();
    std::string bus = pci_of(e.path());
    std::string guid = read_line(e.path() / "node_guid");
    int nic = -1;
    std::error_code ec2;
    for (const auto& port : fs::directory_iterator(e.path() / "ports", ec2)) {
      std::string pn = port.path().filename().string();
      std::string layer = read_line(port.path() / "link_layer");
      std::map<std::string, std::string> a{{"port", pn}, {"link_layer", layer == "InfiniBand" ? "infiniband" : "roce"}};
      if (auto r = rate_mbps(read_line(port.path() / "rate")); !r.empty() && check_attr(Kind::Port, "speed", r).empty())
        a["speed"] = r;
      if (!guid.empty()) a["guid"] = guid;
      if (auto v = read_line(port.path() / "state"); !v.empty()) a["state"] = v;
      std::string id = name + ":" + pn;
      if (t.find(id) >= 0) continue;
      if (nic < 0) nic = attach_point(t, host, bus, e.path(), name);
      t.add(Kind::Port, id, nic, std::move(a));
    }
  }
}

}  // namespace coral::topology
