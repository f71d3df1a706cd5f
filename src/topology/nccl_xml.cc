// NCCL topology XML (the NCCL_TOPO_FILE format, version 1): <system> holds <cpu> NUMA domains,
// which hold nested <pci> devices (bridges, GPUs with <gpu><nvlink/>, NICs with <nic><net/>).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <pugixml.hpp>
#include <sstream>

#include "topology/formats.h"

namespace coral::topology {
namespace {

// What a <pci> element is when no child element says: 3D controllers are GPUs (files written by
// hand list them so), and so are NVIDIA's VGA devices; other display devices (a server's
// onboard VGA chip) are not.
Kind kind_of_class(const std::string& cls, const std::string& vendor) {
  unsigned long c = std::strtoul(cls.c_str(), nullptr, 16);
  if ((c >> 8) == 0x0604) return Kind::PciSwitch;
  if ((c >> 8) == 0x0680) return Kind::NvSwitch;
  if ((c >> 8) == 0x0302) return Kind::Gpu;
  if ((c >> 16) == 0x03 && std::strtoul(vendor.c_str(), nullptr, 16) == 0x10de) return Kind::Gpu;
  if ((c >> 8) == 0x0207 || (c >> 8) == 0x0200) return Kind::Nic;
  return Kind::Pci;
}

// The class written for a device: its own when it reads back as the same kind, else one that
// does (hwloc may know a device's kind from elsewhere than its class). GPUs and NICs are written
// with their <gpu> and <nic> elements, which say what they are whatever the class.
std::string class_of(const Device& d) {
  const std::string own = d.attr("class", "");
  if (!own.empty() &&
      (d.kind == Kind::Gpu || d.kind == Kind::Nic || kind_of_class(own, d.attr("vendor", "")) == d.kind))
    return own;
  switch (d.kind) {
    case Kind::Gpu:
      return "0x030200";
    case Kind::NvSwitch:
      return "0x068000";
    case Kind::PciSwitch:
      return "0x060400";
    case Kind::Nic:
      return "0x020000";
    default:
      return "0x000000";
  }
}

const std::vector<std::string> kGpuAttrs = {"dev", "sm", "rank", "gdr"};

struct Reader {
  const std::string& text;
  const std::string& origin;
  Topology t;
  struct PendingLink {
    int gpu;
    std::string target, tclass;
    int count;
    pugi::xml_node node;
  };
  std::vector<PendingLink> nvlinks;

  int line_of(pugi::xml_node n) const {
    ptrdiff_t off = n.offset_debug();
    if (off < 0) return 0;
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + std::min<ptrdiff_t>(off, text.size()), '\n'));
  }
  [[noreturn]] void fail(pugi::xml_node n, const std::string& what) const {
    throw Error(fmt::format("{}: line {}, <{}>: {}", origin, line_of(n), n.name(), what));
  }
  // NCCL writes plain ASCII; anything else is damage, and would not survive a JSON dump.
  void check_text(pugi::xml_node n, const std::string& s, const char* what) const {
    for (unsigned char c : s)
      if (c < 0x20 || c > 0x7e) fail(n, fmt::format("{} '{}' has a byte outside printable ASCII", what, s));
  }
  // The attributes but `skip`, each checked as one of a kind-k device's (check_attr).
  std::map<std::string, std::string> attrs_of(pugi::xml_node n, Kind k, const std::vector<std::string>& skip = {}) {
    std::map<std::string, std::string> a;
    for (pugi::xml_attribute x : n.attributes()) {
      check_text(n, x.name(), "attribute name");
      check_text(n, x.value(), "attribute value");
      if (std::string why = check_attr(k, x.name(), x.value()); !why.empty()) fail(n, why);
    }
    for (pugi::xml_attribute x : n.attributes())
      if (std::find(skip.begin(), skip.end(), x.name()) == skip.end()) a[x.name()] = x.value();
    return a;
  }
  int parse_int(pugi::xml_node n, const char* attr, int def, int lo, int hi) {
    pugi::xml_attribute a = n.attribute(attr);
    if (!a) return def;
    char* end;
    long v = std::strtol(a.value(), &end, 0);
    if (end == a.value() || *end || v < lo || v > hi)
      fail(n, fmt::format("{}=\"{}\" is out of range: allowed {} to {}, a whole number", attr, a.value(), lo, hi));
    return static_cast<int>(v);
  }
  std::string bus_id(pugi::xml_node n, const char* attr) {
    std::string id = n.attribute(attr).value();
    if (id.empty()) fail(n, fmt::format("missing {}", attr));
    check_text(n, id, attr);
    std::transform(id.begin(), id.end(), id.begin(), ::tolower);
    if (!is_bus_id(id))
      fail(n, fmt::format("{}=\"{}\" is not a PCI bus id (domain:bus:device.function in hexadecimal, as "
                          "0000:07:00.0)",
                          attr, n.attribute(attr).value()));
    return id;
  }

  // Where each element may appear, and how deep the tree may go, checked over the whole
  // document before anything is built (so the builders' recursion is bounded). An element in
  // the wrong place would otherwise vanish; one this reader does not know is noted and skipped.
  void check_structure(pugi::xml_node sys) {
    static const std::map<std::string, std::vector<std::string>> kParents = {
        {"cpu", {"system"}}, {"pci", {"cpu", "pci"}}, {"gpu", {"pci"}}, {"nvlink", {"gpu"}},
        {"c2c", {"gpu"}},    {"nic", {"cpu", "pci"}}, {"net", {"nic"}}};
    int depth = 1;  // of n: <cpu> is 1, as the CPU is in the model
    int unknown = 0;
    for (pugi::xml_node n = sys.first_child(); n;) {
      bool descend = false;
      if (n.type() == pugi::node_element) {
        std::string name = n.name(), parent = n.parent().name();
        auto rule = kParents.find(name);
        if (rule == kParents.end() && ++unknown <= 10) {
          t.notes.push_back(fmt::format("{}: line {}: <{}> is not part of NCCL's topology format: ignored", origin,
                                        line_of(n), name));
        } else if (rule != kParents.end() &&
                   std::find(rule->second.begin(), rule->second.end(), parent) == rule->second.end()) {
          std::string where;
          for (const std::string& p : rule->second) where += (where.empty() ? "<" : " or <") + p + ">";
          fail(n, fmt::format("misplaced: <{}> belongs inside {}, not <{}>", name, where, parent));
        }
        // A <cpu> may hold several <nic>s (network devices with no PCI function of their own).
        if (name == "gpu" || (name == "nic" && parent == "pci"))
          if (pugi::xml_node o = n.previous_sibling(name.c_str()))
            fail(n, fmt::format("a second <{}> in one <{}> (the first is on line {}): one device per PCI function",
                                name, parent, line_of(o)));
        if (depth > kMaxDepth)
          fail(n,
               fmt::format("elements nested more than {} levels deep: no machine has a PCI tree that deep", kMaxDepth));
        descend = rule != kParents.end() && n.first_child();  // unknown elements are skipped whole
      }
      if (descend) {
        n = n.first_child();
        depth++;
        continue;
      }
      while (n != sys && !n.next_sibling()) n = n.parent(), depth--;
      if (n == sys) break;
      n = n.next_sibling();
    }
    if (unknown > 10) t.notes.push_back(fmt::format("{}: {} more unknown elements ignored", origin, unknown - 10));
  }

  void nic(pugi::xml_node n, int nic_dev) {
    int i = 0;
    for (pugi::xml_node net : n.children("net")) {
      std::string id = net.attribute("name").value();
      check_text(net, id, "net name");
      if (id.empty()) id = fmt::format("{}/net{}", t.devices[nic_dev].id, i);
      if (t.find(id) >= 0) fail(net, fmt::format("duplicate net name '{}'", id));
      t.add(Kind::Port, id, nic_dev, attrs_of(net, Kind::Port, {"name"}));  // the name is the id
      i++;
    }
  }

  void pci(pugi::xml_node n, int parent) {
    std::string busid = bus_id(n, "busid");
    if (t.find(busid) >= 0) fail(n, fmt::format("duplicate busid {}", busid));
    Kind k = kind_of_class(n.attribute("class").value(), n.attribute("vendor").value());
    auto attrs = attrs_of(n, k, {"busid"});
    int d = t.add(k, busid, parent, std::move(attrs));
    for (pugi::xml_node c : n.children()) {
      std::string name = c.name();
      if (name == "pci") {
        pci(c, d);
      } else if (name == "gpu") {
        t.devices[d].kind = Kind::Gpu;
        for (auto& [k, v] : attrs_of(c, Kind::Gpu)) t.devices[d].attrs[k] = v;
        for (pugi::xml_node l : c.children("nvlink")) {
          std::string target = bus_id(l, "target");
          // NVLink 5 has 18 lanes a GPU; 128 leaves room and stops a typo from pricing a link
          // as thousands of lanes.
          int count = parse_int(l, "count", 1, 1, 128);
          if (target == busid) {
            t.notes.push_back(
                fmt::format("{}: line {}: dropped an NVLink from GPU {} to itself", origin, line_of(l), busid));
            continue;
          }
          nvlinks.push_back({d, target, l.attribute("tclass").value(), count, l});
        }
      } else if (name == "nic") {
        if (c.parent().child("gpu"))
          fail(c, "a <pci> holds one device, not both a <gpu> and a <nic> (one PCI function each)");
        t.devices[d].kind = Kind::Nic;
        nic(c, d);
      }
    }
  }

  void resolve_nvlinks() {
    for (const PendingLink& p : nvlinks) {
      int target = t.find(p.target);
      if (target < 0) target = t.find("nvswitch:" + p.target);
      if (target < 0) {
        // NVSwitches are often absent from the PCI tree (ffffffff:ff:ff.0 or a bus id that no
        // <pci> lists): the tclass says what the far end is.
        if (p.tclass.empty() || kind_of_class(p.tclass, "") != Kind::NvSwitch)
          fail(p.node, fmt::format("target {} is not in the file and tclass does not say NVSwitch", p.target));
        target = t.add(Kind::NvSwitch, "nvswitch:" + p.target, t.host_of(p.gpu), {{"class", p.tclass}});
      }
      if (const Kind k = t.devices[target].kind; k != Kind::Gpu && k != Kind::NvSwitch)
        fail(p.node, fmt::format("target {} is a {}: NVLinks join GPUs and NVSwitches", p.target, kind_name(k)));
      if (t.devices[target].kind == Kind::Gpu) {
        // A GPU pair lists the link twice (once from each side): keep one.
        bool seen = false;
        for (const Link& l : t.links) seen |= l.type == LinkType::NvLink && l.a == target && l.b == p.gpu;
        if (seen) continue;
      }
      double bw = p.count * nvlink_lane_gbs(std::atoi(t.devices[p.gpu].attr("sm", "0").c_str()));
      t.links.push_back({p.gpu, target, LinkType::NvLink, bw, p.count});
    }
  }
};

}  // namespace

Topology from_nccl_xml(const std::string& text, const std::string& origin, const std::string& host) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_buffer(text.data(), text.size());
  Reader rd{text, origin, {}, {}};
  if (!r) {
    int line =
        1 + static_cast<int>(std::count(text.begin(), text.begin() + std::min<ptrdiff_t>(r.offset, text.size()), '\n'));
    throw Error(fmt::format("{}: line {}: malformed XML: {}", origin, line, r.description()));
  }
  pugi::xml_node sys = doc.child("system");
  if (!sys) throw Error(fmt::format("{}: no <system> element: not an NCCL topology file", origin));
  std::string version = sys.attribute("version").value();
  if (version != "1")
    rd.fail(sys, fmt::format("version=\"{}\" is not supported: NCCL reads only version 1{}", version,
                             version == "2" ? " (version 2 is RCCL's dialect)" : ""));
  rd.check_structure(sys);
  int h = rd.t.add(Kind::Host, host, -1);
  int ncpu = 0;
  for (pugi::xml_node c : sys.children()) {
    if (std::string(c.name()) != "cpu") continue;
    std::string numa = c.attribute("numaid").value();
    std::string id = "cpu" + (numa.empty() ? std::to_string(ncpu) : numa);
    if (rd.t.find(id) >= 0) rd.fail(c, fmt::format("duplicate numaid {}", numa));
    int cpu = rd.t.add(Kind::Cpu, id, h, rd.attrs_of(c, Kind::Cpu));
    int nics = 0;
    for (pugi::xml_node d : c.children()) {
      std::string name = d.name();
      if (name == "pci")
        rd.pci(d, cpu);
      else if (name == "nic")
        rd.nic(d, rd.t.add(Kind::Nic, fmt::format("{}/nic{}", id, nics++), cpu));
    }
    ncpu++;
  }
  if (ncpu == 0) rd.fail(sys, "no <cpu> element");
  rd.resolve_nvlinks();
  return std::move(rd.t);
}

namespace {

std::string escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void write_attrs(std::ostringstream& o, const std::map<std::string, std::string>& a, bool gpu_part, bool split) {
  for (auto& [k, v] : a) {
    bool is_gpu = std::find(kGpuAttrs.begin(), kGpuAttrs.end(), k) != kGpuAttrs.end();
    if (split && is_gpu != gpu_part) continue;
    o << ' ' << k << "=\"" << escape(v) << '"';
  }
}

void write_device(const Topology& t, const std::vector<std::vector<int>>& children, int d, int depth,
                  std::ostringstream& o) {
  const Device& dev = t.devices[d];
  std::string ind(static_cast<size_t>(depth) * 2, ' ');
  if (dev.kind == Kind::NvSwitch && dev.id.rfind("nvswitch:", 0) == 0) return;  // not in the PCI tree
  if (dev.kind == Kind::Port) return;
  bool has_bus = is_bus_id(dev.id);
  const std::vector<int>& kids = children[static_cast<size_t>(d)];
  if (dev.kind == Kind::Nic && !has_bus) {
    o << ind << "<nic>\n";
  } else {
    std::map<std::string, std::string> attrs = dev.attrs;
    attrs["class"] = class_of(dev);
    o << ind << "<pci busid=\"" << dev.id << '"';
    write_attrs(o, attrs, false, dev.kind == Kind::Gpu);
    o << ">\n";
  }
  if (dev.kind == Kind::Gpu) {
    o << ind << "  <gpu";
    write_attrs(o, dev.attrs, true, true);
    o << ">\n";
    for (const Link& l : t.links) {
      if (l.type != LinkType::NvLink || (l.a != d && l.b != d)) continue;
      const Device& far = t.devices[l.a == d ? l.b : l.a];
      std::string target = far.id.rfind("nvswitch:", 0) == 0 ? far.id.substr(9) : far.id;
      o << ind << "    <nvlink target=\"" << target << "\" count=\"" << l.lanes << "\" tclass=\"" << class_of(far)
        << "\"/>\n";
    }
    o << ind << "  </gpu>\n";
  }
  if (dev.kind == Kind::Nic) {
    bool ports = false;
    for (int k : kids) ports |= t.devices[k].kind == Kind::Port;
    if (ports && has_bus) o << ind << "  <nic>\n";
    if (!ports && has_bus) o << ind << "  <nic/>\n";  // the class may not say NIC: the element does
    for (int k : kids)
      if (t.devices[k].kind == Kind::Port) {
        // The name is the port's id: without it the reader names it after the NIC.
        std::map<std::string, std::string> attrs = t.devices[k].attrs;
        attrs["name"] = t.devices[k].id;
        o << ind << (has_bus ? "    " : "  ") << "<net";
        write_attrs(o, attrs, false, false);
        o << "/>\n";
      }
    if (ports && has_bus) o << ind << "  </nic>\n";
  }
  for (int k : kids) write_device(t, children, k, depth + 1, o);
  o << ind << (dev.kind == Kind::Nic && !has_bus ? "</nic>\n" : "</pci>\n");
}

}  // namespace

std::string to_nccl_xml(const Topology& t) {
  std::ostringstream o;
  o << "<system version=\"1\">\n";
  int host = t.of_kind(Kind::Host).empty() ? -1 : t.of_kind(Kind::Host)[0];
  const std::vector<std::vector<int>> children = t.children();
  for (int c : t.of_kind(Kind::Cpu)) {
    if (t.host_of(c) != host) continue;  // the format describes one machine
    o << "  <cpu";
    write_attrs(o, t.devices[c].attrs, false, false);
    o << ">\n";
    for (int k : children[static_cast<size_t>(c)]) write_device(t, children, k, 2, o);
    o << "  </cpu>\n";
  }
  o << "</system>\n";
  return o.str();
}

}  // namespace coral::topology
