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
  std::map<std::string, std::string> attrs_of(pugi::xml_node n, const std::vector<std::string>& skip = {}) {
    std::map<std::string, std::string> a;
    for (pugi::xml_attribute x : n.attributes()) {
      check_text(n, x.name(), "attribute name");
      check_text(n, x.value(), "attribute value");
    }
    for (pugi::xml_attribute x : n.attributes())
      if (std::find(skip.begin(), skip.end(), x.name()) == skip.end()) a[x.name()] = x.value();
    return a;
  }
  int parse_int(pugi::xml_node n, const char* attr, int def) {
    pugi::xml_attribute a = n.attribute(attr);
    if (!a) return def;
    char* end;
    long v = std::strtol(a.value(), &end, 0);
    if (end == a.value() || *end || v < 0 || v > 1 << 20)
      fail(n, fmt::format("{}=\"{}\" is not a count", attr, a.value()));
    return static_cast<int>(v);
  }

  void nic(pugi::xml_node n, int nic_dev) {
    int i = 0;
    for (pugi::xml_node net : n.children("net")) {
      std::string id = net.attribute("name").value();
      check_text(net, id, "net name");
      if (id.empty()) id = fmt::format("{}/net{}", t.devices[nic_dev].id, i);
      if (t.find(id) >= 0) fail(net, fmt::format("duplicate net name '{}'", id));
      t.add(Kind::Port, id, nic_dev, attrs_of(net));
      i++;
    }
  }

  Kind kind_of_class(const std::string& cls) {
    unsigned long c = std::strtoul(cls.c_str(), nullptr, 16);
    if ((c >> 8) == 0x0604) return Kind::PciSwitch;
    if ((c >> 8) == 0x0680) return Kind::NvSwitch;
    if ((c >> 16) == 0x03) return Kind::Gpu;
    if ((c >> 8) == 0x0207 || (c >> 8) == 0x0200) return Kind::Nic;
    return Kind::Pci;
  }

  void pci(pugi::xml_node n, int parent) {
    std::string busid = n.attribute("busid").value();
    if (busid.empty()) fail(n, "missing busid");
    check_text(n, busid, "busid");
    std::transform(busid.begin(), busid.end(), busid.begin(), ::tolower);
    if (t.find(busid) >= 0) fail(n, fmt::format("duplicate busid {}", busid));
    auto attrs = attrs_of(n, {"busid"});
    int d = t.add(kind_of_class(n.attribute("class").value()), busid, parent, std::move(attrs));
    for (pugi::xml_node c : n.children()) {
      std::string name = c.name();
      if (name == "pci") {
        pci(c, d);
      } else if (name == "gpu") {
        t.devices[d].kind = Kind::Gpu;
        for (auto& [k, v] : attrs_of(c)) t.devices[d].attrs[k] = v;
        for (pugi::xml_node l : c.children("nvlink")) {
          std::string target = l.attribute("target").value();
          if (target.empty()) fail(l, "missing target");
          check_text(l, target, "target");
          std::transform(target.begin(), target.end(), target.begin(), ::tolower);
          nvlinks.push_back({d, target, l.attribute("tclass").value(), parse_int(l, "count", 1), l});
        }
      } else if (name == "nic") {
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
        if (p.tclass.empty() || kind_of_class(p.tclass) != Kind::NvSwitch)
          fail(p.node, fmt::format("target {} is not in the file and tclass does not say NVSwitch", p.target));
        target = t.add(Kind::NvSwitch, "nvswitch:" + p.target, t.host_of(p.gpu), {{"class", p.tclass}});
      }
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
  int h = rd.t.add(Kind::Host, host, -1);
  int ncpu = 0;
  for (pugi::xml_node c : sys.children()) {
    if (std::string(c.name()) != "cpu") continue;
    std::string numa = c.attribute("numaid").value();
    rd.check_text(c, numa, "numaid");
    std::string id = "cpu" + (numa.empty() ? std::to_string(ncpu) : numa);
    if (rd.t.find(id) >= 0) rd.fail(c, fmt::format("duplicate numaid {}", numa));
    int cpu = rd.t.add(Kind::Cpu, id, h, rd.attrs_of(c));
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

void write_device(const Topology& t, int d, int depth, std::ostringstream& o) {
  const Device& dev = t.devices[d];
  std::string ind(static_cast<size_t>(depth) * 2, ' ');
  if (dev.kind == Kind::NvSwitch && dev.id.rfind("nvswitch:", 0) == 0) return;  // not in the PCI tree
  if (dev.kind == Kind::Port) return;
  bool has_bus = dev.id.find(':') != std::string::npos;
  std::vector<int> kids;
  for (size_t i = 0; i < t.devices.size(); i++)
    if (t.devices[i].parent == d) kids.push_back(static_cast<int>(i));
  if (dev.kind == Kind::Nic && !has_bus) {
    o << ind << "<nic>\n";
  } else {
    o << ind << "<pci busid=\"" << dev.id << '"';
    write_attrs(o, dev.attrs, false, dev.kind == Kind::Gpu);
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
      o << ind << "    <nvlink target=\"" << target << "\" count=\"" << l.lanes << "\" tclass=\""
        << far.attr("class", far.kind == Kind::NvSwitch ? "0x068000" : "0x030200") << "\"/>\n";
    }
    o << ind << "  </gpu>\n";
  }
  if (dev.kind == Kind::Nic) {
    bool ports = false;
    for (int k : kids) ports |= t.devices[k].kind == Kind::Port;
    if (ports && has_bus) o << ind << "  <nic>\n";
    for (int k : kids)
      if (t.devices[k].kind == Kind::Port) {
        o << ind << (has_bus ? "    " : "  ") << "<net";
        write_attrs(o, t.devices[k].attrs, false, false);
        o << "/>\n";
      }
    if (ports && has_bus) o << ind << "  </nic>\n";
  }
  for (int k : kids) write_device(t, k, depth + 1, o);
  o << ind << (dev.kind == Kind::Nic && !has_bus ? "</nic>\n" : "</pci>\n");
}

}  // namespace

std::string to_nccl_xml(const Topology& t) {
  std::ostringstream o;
  o << "<system version=\"1\">\n";
  int host = t.of_kind(Kind::Host).empty() ? -1 : t.of_kind(Kind::Host)[0];
  for (int c : t.of_kind(Kind::Cpu)) {
    if (t.host_of(c) != host) continue;  // the format describes one machine
    o << "  <cpu";
    write_attrs(o, t.devices[c].attrs, false, false);
    o << ">\n";
    for (size_t i = 0; i < t.devices.size(); i++)
      if (t.devices[i].parent == c) write_device(t, static_cast<int>(i), 2, o);
    o << "  </cpu>\n";
  }
  o << "</system>\n";
  return o.str();
}

}  // namespace coral::topology
