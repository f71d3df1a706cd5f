// Detection of this machine: hwloc for CPUs, NUMA and the PCI tree; sysfs for network
// interfaces and RDMA ports; NVML (loaded at run time) for GPUs and NVLinks.
#pragma once
#include <string>

#include "topology/model.h"

namespace coral::topology {

struct DetectOptions {
  std::string host = "localhost";
  std::string sysfs = "/sys";  // tests point this at a fake tree
  bool hwloc = true, net = true, nvml = true;
};

Topology detect(const DetectOptions& o = {});

// The pieces, each adding to t (detect runs them in this order).
// With xml (hwloc XML text) it reads that instead of this machine; throws without hwloc.
void detect_hwloc(Topology& t, int host, const std::string& xml = "", const std::string& origin = "");
void detect_net(Topology& t, int host, const std::string& sysfs);
void detect_nvml(Topology& t, int host);  // no-op (logged) without the NVIDIA driver
bool have_hwloc();

}  // namespace coral::topology
