// GPUs and NVLinks through NVML, loaded with dlopen so that neither building nor running Coral
// needs the NVIDIA driver. Only the handful of entry points used are declared here.
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/log.h"
#include "topology/detect.h"

namespace coral::topology {
namespace {

struct NvmlPci {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
using Handle = void*;
constexpr int kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

template <class F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

std::string norm_bus(const char* s) {
  std::string b(s);
  std::transform(b.begin(), b.end(), b.begin(), [](unsigned char c) { return std::tolower(c); });
  if (b.size() == 16 && b[8] == ':') b = b.substr(4);  // 00000000:3b:00.0 -> 0000:3b:00.0
  return b;
}

}  // namespace

void detect_nvml(Topology& t, int host) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    log::info(log::Init, "topology: no NVML ({}): no GPUs detected", dlerror());
    return;
  }
  auto init = sym<int (*)()>(lib, "nvmlInit_v2");
  auto count = sym<int (*)(unsigned*)>(lib, "nvmlDeviceGetCount_v2");
  auto by_index = sym<int (*)(unsigned, Handle*)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  auto pci = sym<int (*)(Handle, NvmlPci*)>(lib, "nvmlDeviceGetPciInfo_v3");
  auto cc = sym<int (*)(Handle, int*, int*)>(lib, "nvmlDeviceGetCudaComputeCapability");
  auto name = sym<int (*)(Handle, char*, unsigned)>(lib, "nvmlDeviceGetName");
  auto link_state = sym<int (*)(Handle, unsigned, int*)>(lib, "nvmlDeviceGetNvLinkState");
  auto remote = sym<int (*)(Handle, unsigned, NvmlPci*)>(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  unsigned n = 0;
  if (!init || !count || !by_index || !pci || init() != 0 || count(&n) != 0) {
    log::warn(log::Init, "topology: NVML present but unusable: GPUs not detected");
    dlclose(lib);
    return;
  }
  std::vector<std::pair<int, std::vector<std::string>>> links;  // gpu device -> remote bus per lane
  for (unsigned i = 0; i < n; i++) {
    Handle h;
    NvmlPci p{};
    if (by_index(i, &h) != 0 || pci(h, &p) != 0) continue;
    std::string bus = norm_bus(p.bus_id);
    int d = t.find(bus);
    if (d < 0) {
      auto cpus = t.of_kind(Kind::Cpu);
      d = t.add(Kind::Gpu, bus, cpus.empty() ? host : cpus.front());
    }
    Device& dev = t.devices[d];
    dev.kind = Kind::Gpu;
    dev.attrs["dev"] = std::to_string(i);
    int major = 0, minor = 0;
    if (cc && cc(h, &major, &minor) == 0) dev.attrs["sm"] = std::to_string(major * 10 + minor);
    char nm[96] = {};
    if (name && name(h, nm, sizeof nm) == 0) dev.attrs["model"] = nm;
    std::vector<std::string> lanes;
    for (unsigned l = 0; link_state && remote && l < kMaxLinks; l++) {
      int active = 0;
      NvmlPci rp{};
      if (link_state(h, l, &active) != 0 || !active || remote(h, l, &rp) != 0) continue;
      lanes.push_back(norm_bus(rp.bus_id));
    }
    links.emplace_back(d, std::move(lanes));
  }
  for (auto& [gpu, lanes] : links) {
    std::map<int, int> per_target;
    for (const std::string& b : lanes) {
      int target = t.find(b);
      if (target < 0) target = t.find("nvswitch:" + b);
      if (target < 0) target = t.add(Kind::NvSwitch, "nvswitch:" + b, host, {{"class", "0x068000"}});
      per_target[target]++;
    }
    for (auto [target, count_lanes] : per_target) {
      if (t.devices[target].kind == Kind::Gpu && target < gpu) continue;  // listed from both sides
      double bw = count_lanes * nvlink_lane_gbs(std::atoi(t.devices[gpu].attr("sm", "0").c_str()));
      t.links.push_back({gpu, target, LinkType::NvLink, bw, count_lanes});
    }
  }
  dlclose(lib);
}

}  // namespace coral::topology
