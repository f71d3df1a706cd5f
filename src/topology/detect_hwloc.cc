#include <fmt/format.h>

#include "topology/detect.h"
#include "topology/formats.h"

#ifdef CORAL_HAVE_HWLOC
#include <hwloc.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <pugixml.hpp>
#include <unordered_map>
#endif

namespace coral::topology {

#ifndef CORAL_HAVE_HWLOC
bool have_hwloc() { return false; }
void detect_hwloc(Topology& t, int host, const std::string& xml, const std::string& origin) {
  (void)t, (void)host, (void)xml, (void)origin;
  throw Error("Coral was built without hwloc (meson option -Dhwloc)");
}
Topology from_hwloc_xml(const std::string& text, const std::string& origin) {
  Topology t;
  detect_hwloc(t, 0, text, origin);
  return t;
}
#else
bool have_hwloc() { return true; }

namespace {

// What hwloc would refuse with a reason it only prints under HWLOC_XML_VERBOSE, and what would
// overflow its recursive import (and ours): malformed XML, a newer format, absurd nesting.
void check_hwloc_xml(const std::string& xml, const std::string& origin) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_buffer(xml.data(), xml.size());
  auto line = [&](ptrdiff_t off) {
    return 1 +
           std::count(xml.begin(), xml.begin() + std::min<ptrdiff_t>(std::max<ptrdiff_t>(off, 0), xml.size()), '\n');
  };
  if (!r) throw Error(fmt::format("{}: line {}: malformed XML: {}", origin, line(r.offset), r.description()));
  pugi::xml_node top = doc.child("topology");
  if (!top) throw Error(fmt::format("{}: no <topology> element: not an hwloc XML file", origin));
  std::string version = top.attribute("version").value();
  int major = std::atoi(version.c_str());
  if (major > HWLOC_API_VERSION >> 16)
    throw Error(
        fmt::format("{}: hwloc XML version {} is newer than this hwloc reads (versions up to {}.x): "
                    "export it with hwloc {}.x (lstopo --of xml)",
                    origin, version, HWLOC_API_VERSION >> 16, HWLOC_API_VERSION >> 16));
  int depth = 0;
  for (pugi::xml_node n = top.first_child(); n;) {
    if (n.type() == pugi::node_element && n.first_child()) {
      if (++depth > 4 * kMaxDepth)
        throw Error(fmt::format("{}: line {}: elements nested more than {} levels deep", origin, line(n.offset_debug()),
                                4 * kMaxDepth));
      n = n.first_child();
      continue;
    }
    while (n != top && !n.next_sibling()) n = n.parent(), depth--;
    if (n == top) break;
    n = n.next_sibling();
  }
}

std::string busid(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", p.domain, p.bus, p.dev, p.func);
}

std::string info(hwloc_obj_t o, const char* name) {
  const char* v = o ? hwloc_obj_get_info_by_name(o, name) : nullptr;
  return v ? v : "";
}

class Walker {
 public:
  Walker(hwloc_topology_t topo, Topology& t, int host, std::string origin)
      : topo_(topo), t_(t), host_(host), origin_(std::move(origin)) {}

  void run() {
    cpus();
    for (hwloc_obj_t b = nullptr; (b = hwloc_get_next_bridge(topo_, b));)
      if (b->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) children(b, cpu_for(b));
    // PCI devices hanging directly off a CPU-side object, without a host bridge above them.
    for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_pcidev(topo_, p));)
      if (p->parent && p->parent->type != HWLOC_OBJ_BRIDGE && p->parent->type != HWLOC_OBJ_PCI_DEVICE)
        io(p, cpu_for(p));
    nvlinks();
  }

 private:
  void cpus() {
    int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    for (int i = 0; i < n; i++) {
      hwloc_obj_t numa = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, i);
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, numa);
      if (!pkg) pkg = hwloc_get_next_obj_covering_cpuset_by_type(topo_, numa->cpuset, HWLOC_OBJ_PACKAGE, nullptr);
      int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, numa->cpuset, HWLOC_OBJ_CORE);
      int pus = hwloc_get_nbobjs_inside_cpuset_by_type(topo_, numa->cpuset, HWLOC_OBJ_PU);
      char aff[1024];
      hwloc_bitmap_snprintf(aff, sizeof aff, numa->cpuset);
      std::map<std::string, std::string> a{{"numaid", std::to_string(numa->os_index)},
                                           {"cores", std::to_string(cores)},
                                           {"pus", std::to_string(pus)},
                                           {"affinity", aff}};
      if (pkg) a["package"] = std::to_string(pkg->logical_index);
      if (auto v = info(pkg, "CPUVendor"); !v.empty()) a["vendor"] = v;
      if (auto v = info(pkg, "CPUModel"); !v.empty()) a["model"] = v;
      if (auto v = info(root, "Architecture"); !v.empty()) a["arch"] = v;
      numa_dev_[numa->os_index] = t_.add(Kind::Cpu, fmt::format("cpu{}", numa->os_index), host_, std::move(a));
    }
  }

  // The CPU domain an I/O object is local to: the first NUMA node of its non-I/O ancestor.
  int cpu_for(hwloc_obj_t o) {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, o);
    for (auto& [os, dev] : numa_dev_) {
      hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(topo_, os);
      if (anc && numa && anc->nodeset && hwloc_bitmap_isset(anc->nodeset, os)) return dev;
    }
    return numa_dev_.empty() ? host_ : numa_dev_.begin()->second;
  }

  void children(hwloc_obj_t o, int parent) {
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) io(c, parent);
  }

  void io(hwloc_obj_t o, int parent) {
    if (o->type == HWLOC_OBJ_BRIDGE) {
      if (o->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_PCI) return children(o, parent);
      auto& p = o->attr->pcidev;
      int d = t_.add(Kind::PciSwitch, busid(p), parent, pci_attrs(p));
      return children(o, d);
    }
    if (o->type != HWLOC_OBJ_PCI_DEVICE) return;
    auto& p = o->attr->pcidev;
    unsigned cls = p.class_id;
    // An onboard VGA chip is not a GPU we use: only 3D controllers and NVIDIA display devices
    // (plus anything with a GPU OS device below, see the loop).
    bool nvswitch = cls == 0x0680 || (o->subtype && std::string(o->subtype) == "NVSwitch");
    Kind k = nvswitch                                                           ? Kind::NvSwitch
             : (cls == 0x0302 || ((cls >> 8) == 0x03 && p.vendor_id == 0x10de)) ? Kind::Gpu
             : (cls == 0x0200 || cls == 0x0207)                                 ? Kind::Nic
                                                                                : Kind::Pci;
    if (t_.find(busid(p)) >= 0) throw Error(fmt::format("{}: PCI bus id {} appears twice", origin_, busid(p)));
    int d = t_.add(k, busid(p), parent, pci_attrs(p));
    obj_dev_[o] = d;
    std::vector<hwloc_obj_t> nets, fabrics;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
      if (c->type != HWLOC_OBJ_OS_DEVICE) {
        io(c, d);
        continue;
      }
      obj_dev_[c] = d;
      auto type = c->attr->osdev.type;
      if (type == HWLOC_OBJ_OSDEV_NETWORK) nets.push_back(c);
      if (type == HWLOC_OBJ_OSDEV_OPENFABRICS) fabrics.push_back(c);
      if (type == HWLOC_OBJ_OSDEV_GPU || type == HWLOC_OBJ_OSDEV_COPROC) {
        // A compute runtime's handle makes it a GPU; a DRM display node (card0) does not.
        std::string n = c->name ? c->name : "";
        bool compute = false;
        for (const char* pre : {"cuda", "nvml", "rsmi", "opencl", "ze"}) compute |= n.rfind(pre, 0) == 0;
        if (compute && t_.devices[d].kind == Kind::Pci) t_.devices[d].kind = Kind::Gpu;
        if (auto v = info(c, "GPUModel"); !v.empty()) t_.devices[d].attrs["model"] = v;
      }
    }
    ports(d, nets, fabrics);
  }

  // A network function's ports. One physical port shows up twice, as an interface (ib0,
  // ens1f0) and as a port of an RDMA device (mlx5_0 port 1): it becomes one Port named after the
  // interface, with the RDMA name ("mlx5_0:1", as ibverbs and UCX name it) in attrs["rdma"].
  void ports(int d, const std::vector<hwloc_obj_t>& nets, const std::vector<hwloc_obj_t>& fabrics) {
    if (nets.empty() && fabrics.empty()) return;
    t_.devices[d].kind = Kind::Nic;
    std::vector<std::pair<std::string, std::map<std::string, std::string>>> rdma;
    for (hwloc_obj_t f : fabrics) {
      int n = 0;
      while (!info(f, fmt::format("Port{}State", n + 1).c_str()).empty()) n++;
      for (int k = 1; k <= std::max(n, 1); k++) {
        std::map<std::string, std::string> a{{"port", std::to_string(k)}};
        if (auto v = info(f, "NodeGUID"); !v.empty()) a["guid"] = v;
        rdma.push_back({fmt::format("{}:{}", f->name, k), std::move(a)});
      }
    }
    std::vector<bool> paired(rdma.size(), false);
    for (size_t i = 0; i < nets.size(); i++) {
      std::map<std::string, std::string> a;
      if (auto v = info(nets[i], "Address"); !v.empty()) a["address"] = v;
      // hwloc numbers an interface's port from 1 when it knows it; else interfaces and RDMA
      // ports pair up in order.
      std::string port = info(nets[i], "Port");
      size_t k = port.empty() ? i : static_cast<size_t>(std::max(1, std::atoi(port.c_str())) - 1);
      if (k < rdma.size() && !paired[k]) {
        paired[k] = true;
        for (auto& [key, v] : rdma[k].second) a[key] = v;
        a["rdma"] = rdma[k].first;
      }
      if (t_.find(nets[i]->name) < 0) t_.add(Kind::Port, nets[i]->name, d, std::move(a));
    }
    for (size_t k = 0; k < rdma.size(); k++)
      if (!paired[k] && t_.find(rdma[k].first) < 0) {
        rdma[k].second["rdma"] = rdma[k].first;
        t_.add(Kind::Port, rdma[k].first, d, std::move(rdma[k].second));
      }
  }

  static std::map<std::string, std::string> pci_attrs(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p) {
    std::map<std::string, std::string> a{{"class", fmt::format("0x{:04x}00", p.class_id)},
                                         {"vendor", fmt::format("0x{:04x}", p.vendor_id)},
                                         {"device", fmt::format("0x{:04x}", p.device_id)}};
    if (p.linkspeed > 0) a["link_gbs"] = fmt::format("{:g}", p.linkspeed);
    return a;
  }

  // hwloc's NVML backend records NVLink bandwidth (MB/s) between GPUs and NVSwitches.
  void nvlinks() {
    unsigned nr = 1;
    hwloc_distances_s* dist = nullptr;
    if (hwloc_distances_get_by_name(topo_, "NVLinkBandwidth", &nr, &dist, 0) != 0 || nr == 0) return;
    unsigned n = dist->nbobjs;
    for (unsigned i = 0; i < n; i++)
      for (unsigned j = i + 1; j < n; j++) {
        uint64_t v = std::max(dist->values[i * n + j], dist->values[j * n + i]);
        auto a = obj_dev_.find(dist->objs[i]), b = obj_dev_.find(dist->objs[j]);
        if (v == 0 || a == obj_dev_.end() || b == obj_dev_.end() || a->second == b->second) continue;
        int lanes = std::max(1, static_cast<int>(std::lround(static_cast<double>(v) / 25000.0)));
        t_.links.push_back({a->second, b->second, LinkType::NvLink, static_cast<double>(v) / 1000.0, lanes});
      }
    hwloc_distances_release(topo_, dist);
  }

  hwloc_topology_t topo_;
  Topology& t_;
  int host_;
  std::string origin_;
  std::map<unsigned, int> numa_dev_;
  std::unordered_map<hwloc_obj_t, int> obj_dev_;
};

}  // namespace

void detect_hwloc(Topology& t, int host, const std::string& xml, const std::string& origin) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) throw Error("hwloc_topology_init failed");
  std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> guard(topo, hwloc_topology_destroy);
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // The Linux backend reads the PCI tree from sysfs; the libpciaccess plugin adds nothing here,
  // is slower, and leaks at unload (LeakSanitizer flags it).
  hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
  if (!xml.empty()) check_hwloc_xml(xml, origin);
  const char* why = " (HWLOC_XML_VERBOSE=1 shows hwloc's reason)";
  if (!xml.empty() && hwloc_topology_set_xmlbuffer(topo, xml.data(), static_cast<int>(xml.size())) != 0)
    throw Error(fmt::format("{}: hwloc cannot read this XML{}", origin, why));
  if (hwloc_topology_load(topo) != 0)
    throw Error(xml.empty() ? "hwloc could not detect this machine" : origin + ": hwloc could not load it" + why);
  Walker(topo, t, host, xml.empty() ? "this machine" : origin).run();
}

Topology from_hwloc_xml(const std::string& text, const std::string& origin) {
  Topology t;
  int h = t.add(Kind::Host, "host0", -1);
  detect_hwloc(t, h, text, origin);
  return t;
}
#endif

}  // namespace coral::topology
