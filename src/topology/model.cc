#include "topology/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <tuple>

namespace coral::topology {
namespace {

constexpr const char* kKinds[] = {"host", "cpu", "pci_switch", "pci", "gpu", "nvswitch", "nic", "port"};
constexpr const char* kLinks[] = {"pcie", "nvlink", "c2c", "smp", "net"};
constexpr const char* kPaths[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PHB", "NODE", "SYS", "NET"};
constexpr double kSmpGbs = 20;       // inter-socket interconnect, as NCCL assumes for recent CPUs
constexpr double kHostLinkGbs = 12;  // a device whose PCIe link is not described

}  // namespace

const char* kind_name(Kind k) { return kKinds[static_cast<int>(k)]; }
const char* link_name(LinkType t) { return kLinks[static_cast<int>(t)]; }
const char* path_name(Path p) { return kPaths[static_cast<int>(p)]; }

Kind kind_from(const std::string& s) {
  for (int i = 0; i < 8; i++)
    if (s == kKinds[i]) return static_cast<Kind>(i);
  throw Error("unknown device kind '" + s + "'");
}

LinkType link_from(const std::string& s) {
  for (int i = 0; i < 5; i++)
    if (s == kLinks[i]) return static_cast<LinkType>(i);
  throw Error("unknown link type '" + s + "'");
}

double pcie_lane_gbs(const std::string& s) {
  char* end;
  double gt = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(gt > 0) || gt > 1000) return 0;
  double eff = gt <= 5.0 ? 0.8 : 128.0 / 130.0;  // 8b/10b up to gen 2, 128b/130b after
  return gt * eff / 8;
}

double nvlink_lane_gbs(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm >= 70) return 20.0;
  return 18.0;
}

int Topology::add(Kind k, std::string id, int parent, std::map<std::string, std::string> attrs) {
  devices.push_back({k, std::move(id), parent, std::move(attrs)});
  return static_cast<int>(devices.size()) - 1;
}

int Topology::find(const std::string& id) const {
  if (indexed_ > devices.size()) index_.clear(), indexed_ = 0;  // devices were removed
  for (; indexed_ < devices.size(); indexed_++) index_.emplace(devices[indexed_].id, static_cast<int>(indexed_));
  auto it = index_.find(id);
  return it == index_.end() ? -1 : it->second;
}

std::vector<std::vector<int>> Topology::children() const {
  std::vector<std::vector<int>> kids(devices.size());
  for (size_t i = 0; i < devices.size(); i++)
    if (devices[i].parent >= 0) kids[static_cast<size_t>(devices[i].parent)].push_back(static_cast<int>(i));
  return kids;
}

int Topology::depth(int d) const {
  int n = 0;
  for (d = devices[d].parent; d >= 0 && n <= static_cast<int>(devices.size()); d = devices[d].parent) n++;
  return n;
}

int Topology::hops(int a, int b) const {
  int da = depth(a), db = depth(b), n = 0;
  for (; da > db; da--, n++) a = devices[a].parent;
  for (; db > da; db--, n++) b = devices[b].parent;
  for (; a != b && a >= 0 && b >= 0; n += 2) a = devices[a].parent, b = devices[b].parent;
  return a == b ? n : n + 1;  // different roots (hosts): one more hop, the network
}

bool is_bus_id(const std::string& s) {
  size_t c1 = s.find(':');
  if (c1 == std::string::npos || c1 < 1 || c1 > 8 || s.size() != c1 + 8) return false;
  for (size_t i = 0; i < s.size(); i++) {
    size_t r = i - c1;  // position after the domain: ":bb:dd.f"
    bool sep = i == c1 || (i > c1 && (r == 3 || r == 6));
    char want = r == 6 ? '.' : ':';
    if (sep ? s[i] != want : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

namespace {

// An attribute's number within [lo, hi], or why not.
std::string in_range(const std::string& key, const std::string& v, double lo, double hi, bool integer,
                     const char* unit = "") {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  bool ok =
      end != v.c_str() && *end == '\0' && std::isfinite(x) && x >= lo && x <= hi && (!integer || x == std::floor(x));
  if (ok) return "";
  return fmt::format("{}=\"{}\" is out of range: allowed {:g} to {:g}{}{}", key, v, lo, hi, unit,
                     integer ? ", a whole number" : "");
}

}  // namespace

std::string check_attr(Kind k, const std::string& key, const std::string& v) {
  if (k == Kind::Port && key == "speed") return in_range(key, v, 0, 1e7, false, " Mb/s");
  if (k == Kind::Port && key == "port") return in_range(key, v, 0, 255, true);
  if (k == Kind::Cpu && key == "numaid") return in_range(key, v, 0, 4095, true);
  if (key == "link_width") return in_range(key, v, 0, 64, true);
  if (k == Kind::Gpu && key == "sm") return in_range(key, v, 0, 1000, true);
  if (k == Kind::Gpu && key == "dev") return in_range(key, v, 0, 4095, true);
  return "";
}

std::vector<int> Topology::of_kind(Kind k) const {
  std::vector<int> out;
  for (size_t i = 0; i < devices.size(); i++)
    if (devices[i].kind == k) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> Topology::nic_endpoints() const {
  std::vector<bool> has_ports(devices.size(), false);
  for (const Device& d : devices)
    if (d.kind == Kind::Port && d.parent >= 0) has_ports[static_cast<size_t>(d.parent)] = true;
  std::vector<int> out;
  for (size_t i = 0; i < devices.size(); i++)
    if (devices[i].kind == Kind::Port || (devices[i].kind == Kind::Nic && !has_ports[i]))
      out.push_back(static_cast<int>(i));
  return out;
}

int Topology::host_of(int d) const {
  while (d >= 0 && devices[d].kind != Kind::Host) d = devices[d].parent;
  return d;
}

int Topology::cpu_of(int d) const {
  while (d >= 0 && devices[d].kind != Kind::Cpu) d = devices[d].parent;
  return d;
}

double Topology::up_bw(int d) const {
  const Device& dev = devices[d];
  if (dev.kind == Kind::Cpu) return kSmpGbs;
  if (dev.kind == Kind::Port) return std::atof(dev.attr("speed", "0").c_str()) / 8000.0;
  if (auto g = dev.attr("link_gbs"); !g.empty()) return std::atof(g.c_str());
  double lane = pcie_lane_gbs(dev.attr("link_speed"));
  int width = std::atoi(dev.attr("link_width", "0").c_str());
  return lane > 0 && width > 0 ? lane * width : kHostLinkGbs;
}

namespace {

std::vector<int> chain(const Topology& t, int d) {  // d, parent, ..., root
  std::vector<int> c;
  for (; d >= 0; d = t.devices[d].parent) c.push_back(d);
  return c;
}

// NVLink lanes from a to b directly, and from a to any NVSwitch.
int lanes_between(const Topology& t, int a, int b) {
  int n = 0;
  for (const Link& l : t.links)
    if (l.type == LinkType::NvLink && ((l.a == a && l.b == b) || (l.a == b && l.b == a))) n += l.lanes;
  return n;
}
int lanes_to_switches(const Topology& t, int a) {
  int n = 0;
  for (const Link& l : t.links)
    if (l.type == LinkType::NvLink && (l.a == a || l.b == a) && t.devices[l.a == a ? l.b : l.a].kind == Kind::NvSwitch)
      n += l.lanes;
  return n;
}
double nvlink_bw(const Topology& t, int gpu, int lanes) {
  return lanes * nvlink_lane_gbs(std::atoi(t.devices[gpu].attr("sm", "0").c_str()));
}

}  // namespace

PathInfo Topology::path(int a, int b) const {
  if (a == b) return {Path::LOC, 1e9};
  // Ports belong to their NIC for locality.
  int pa = devices[a].kind == Kind::Port ? devices[a].parent : a;
  int pb = devices[b].kind == Kind::Port ? devices[b].parent : b;
  if (pa == pb) return {Path::LOC, 1e9};
  if (host_of(pa) != host_of(pb)) {
    double bw = 1e9;
    for (int d : {a, b})
      if (devices[d].kind == Kind::Port) bw = std::min(bw, up_bw(d));
    return {Path::NET, bw == 1e9 ? 0 : bw};
  }
  if (int n = lanes_between(*this, pa, pb); n > 0) return {Path::NVL, nvlink_bw(*this, pa, n), n};
  int sa = lanes_to_switches(*this, pa), sb = lanes_to_switches(*this, pb);
  if (sa > 0 && sb > 0) {
    int n = std::min(sa, sb);
    return {Path::NVB, std::min(nvlink_bw(*this, pa, sa), nvlink_bw(*this, pb, sb)), n};
  }
  for (const Link& l : links)
    if (l.type == LinkType::C2C && ((l.a == pa && l.b == pb) || (l.a == pb && l.b == pa))) return {Path::C2C, l.bw};
  // PCI: up to the lowest common ancestor and down again; the slowest hop bounds the path.
  std::vector<int> ca = chain(*this, pa), cb = chain(*this, pb);
  size_t ia = ca.size(), ib = cb.size();
  while (ia > 0 && ib > 0 && ca[ia - 1] == cb[ib - 1]) ia--, ib--;
  int lca = ia < ca.size() ? ca[ia] : -1;
  double bw = 1e9;
  int bridges = 0;
  for (size_t i = 0; i < ia; i++) {
    bw = std::min(bw, up_bw(ca[i]));
    bridges += devices[ca[i]].kind == Kind::PciSwitch;
  }
  for (size_t i = 0; i < ib; i++) {
    bw = std::min(bw, up_bw(cb[i]));
    bridges += devices[cb[i]].kind == Kind::PciSwitch;
  }
  if (lca >= 0 && (devices[lca].kind == Kind::PciSwitch || devices[lca].kind == Kind::Pci)) {
    bool direct = ia == 1 && ib == 1;  // both sit right below one switch
    return {direct ? Path::PIX : Path::PXB, bw};
  }
  if (lca >= 0 && devices[lca].kind == Kind::Cpu) return {Path::PHB, bw};
  // Different CPU domains: within one package it is NODE, across packages SYS.
  int xa = cpu_of(pa), xb = cpu_of(pb);
  bool same_package = xa >= 0 && xb >= 0 && !devices[xa].attr("package").empty() &&
                      devices[xa].attr("package") == devices[xb].attr("package");
  return {same_package ? Path::NODE : Path::SYS, bw};
}

bool Topology::operator==(const Topology& o) const {
  if (devices.size() != o.devices.size() || links.size() != o.links.size()) return false;
  for (size_t i = 0; i < devices.size(); i++) {
    const Device &x = devices[i], &y = o.devices[i];
    if (x.kind != y.kind || x.id != y.id || x.parent != y.parent || x.attrs != y.attrs) return false;
  }
  for (size_t i = 0; i < links.size(); i++) {
    const Link &x = links[i], &y = o.links[i];
    if (std::tie(x.a, x.b, x.type, x.lanes) != std::tie(y.a, y.b, y.type, y.lanes) || x.bw != y.bw) return false;
  }
  return true;
}

Topology combine(const std::vector<Topology>& machines, const std::vector<std::string>& names) {
  Topology out;
  for (size_t m = 0; m < machines.size(); m++) {
    int base = static_cast<int>(out.devices.size());
    for (const Device& d : machines[m].devices) {
      Device c = d;
      c.id = d.kind == Kind::Host ? names[m] : names[m] + "/" + d.id;
      if (c.parent >= 0) c.parent += base;
      out.devices.push_back(std::move(c));
    }
    for (Link l : machines[m].links) {
      l.a += base;
      l.b += base;
      out.links.push_back(l);
    }
  }
  return out;
}

}  // namespace coral::topology
