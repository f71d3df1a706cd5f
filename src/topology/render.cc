#include "topology/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace coral::topology {
namespace {

std::string cell(const Topology& t, int a, int b) {
  if (a == b) return "X";
  PathInfo p = t.path(a, b);
  if (p.type == Path::NVL || p.type == Path::NVB) return fmt::format("NV{}", p.lanes);
  return path_name(p.type);
}

std::string label(const Topology& t, int d) {
  const Device& dev = t.devices[d];
  switch (dev.kind) {
    case Kind::Gpu: {
      std::string model = dev.attr("model");
      return model.empty() ? fmt::format("GPU {}", dev.id) : fmt::format("GPU {} {}", dev.id, model);
    }
    case Kind::Port: {
      std::string s = fmt::format("port {}", dev.id);
      if (auto v = dev.attr("speed"); !v.empty()) s += fmt::format(" {:g} Gb/s", std::atof(v.c_str()) / 1000);
      if (auto v = dev.attr("link_layer"); !v.empty()) s += " " + v;
      return s;
    }
    case Kind::Cpu: {
      std::string s = fmt::format("CPU {} (NUMA {}", dev.id, dev.attr("numaid", "?"));
      if (auto v = dev.attr("cores"); !v.empty()) s += ", " + v + " cores";
      if (auto v = dev.attr("package"); !v.empty()) s += ", package " + v;
      return s + ")";
    }
    default: {
      std::string s = fmt::format("{} {}", kind_name(dev.kind), dev.id);
      if (dev.parent >= 0 && dev.kind != Kind::Host && dev.kind != Kind::NvSwitch)
        if (double bw = t.up_bw(d); bw > 0) s += fmt::format(" [up {:.1f} GB/s]", bw);
      return s;
    }
  }
}

}  // namespace

std::string render_matrix(const Topology& t) {
  std::vector<int> gpus = t.of_kind(Kind::Gpu), nics = t.nic_endpoints();
  std::vector<std::string> names;
  std::vector<int> devs;
  for (size_t i = 0; i < gpus.size(); i++) names.push_back(fmt::format("GPU{}", i)), devs.push_back(gpus[i]);
  for (size_t i = 0; i < nics.size(); i++) names.push_back(fmt::format("NIC{}", i)), devs.push_back(nics[i]);
  std::ostringstream o;
  if (devs.empty()) return "no GPUs or NICs\n";
  o << fmt::format("{:8}", "");
  for (auto& n : names) o << fmt::format("{:>6}", n);
  o << fmt::format("  {:<12}{}\n", "NUMA", "CPU affinity");
  for (size_t i = 0; i < devs.size(); i++) {
    o << fmt::format("{:8}", names[i]);
    for (size_t j = 0; j < devs.size(); j++) o << fmt::format("{:>6}", cell(t, devs[i], devs[j]));
    int cpu = t.cpu_of(devs[i]);
    o << fmt::format("  {:<12}{}\n", cpu >= 0 ? t.devices[cpu].attr("numaid", "?") : "N/A",
                     cpu >= 0 ? t.devices[cpu].attr("affinity", "") : "");
  }
  o << "\nLegend:\n"
       "  X    = self\n"
       "  LOC  = the same device (two ports of one NIC)\n"
       "  NV#  = NVLink, # lanes (direct, or through NVSwitches)\n"
       "  C2C  = chip-to-chip link between a GPU and its CPU (Grace)\n"
       "  PIX  = at most one PCIe bridge\n"
       "  PXB  = several PCIe bridges, no host bridge\n"
       "  PHB  = PCIe and a host bridge (the CPU)\n"
       "  NODE = PCIe and the link between host bridges within a package\n"
       "  SYS  = PCIe and the SMP interconnect between NUMA nodes\n"
       "  NET  = network (another host)\n";
  for (size_t i = 0; i < devs.size(); i++) o << fmt::format("  {}: {}\n", names[i], t.devices[devs[i]].id);
  return o.str();
}

std::string render_tree(const Topology& t) {
  std::ostringstream o;
  const std::vector<std::vector<int>> kids = t.children();
  // Depth first with an explicit stack: a model can be deeper than the thread's stack allows.
  std::vector<std::pair<int, int>> stack;  // device, depth
  for (size_t i = t.devices.size(); i-- > 0;)
    if (t.devices[i].parent < 0) stack.push_back({static_cast<int>(i), 0});
  while (!stack.empty()) {
    auto [d, depth] = stack.back();
    stack.pop_back();
    o << std::string(static_cast<size_t>(depth) * 2, ' ') << label(t, d) << "\n";
    const std::vector<int>& k = kids[static_cast<size_t>(d)];
    for (size_t i = k.size(); i-- > 0;) stack.push_back({k[i], depth + 1});
  }
  for (const Link& l : t.links)
    o << fmt::format("link {} {} <-> {}: {:.1f} GB/s{}\n", link_name(l.type), t.devices[l.a].id, t.devices[l.b].id,
                     l.bw, l.lanes ? fmt::format(" ({} lanes)", l.lanes) : "");
  return o.str();
}

// A DOT string literal: quotes and backslashes escaped (a GPU model may hold either).
static std::string dot_quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + '"';
}

std::string render_dot(const Topology& t) {
  std::ostringstream o;
  o << "graph topology {\n  node [shape=box, fontname=\"monospace\"];\n";
  static const char* colour[] = {"white", "lightblue", "lightgrey", "white", "palegreen", "orange", "gold", "khaki"};
  for (size_t i = 0; i < t.devices.size(); i++)
    o << fmt::format("  d{} [label={}, style=filled, fillcolor={}];\n", i, dot_quoted(label(t, static_cast<int>(i))),
                     colour[static_cast<int>(t.devices[i].kind)]);
  for (size_t i = 0; i < t.devices.size(); i++)
    if (int p = t.devices[i].parent; p >= 0) o << fmt::format("  d{} -- d{};\n", p, i);
  for (const Link& l : t.links)
    o << fmt::format("  d{} -- d{} [color={}, label=\"{}\"];\n", l.a, l.b,
                     l.type == LinkType::NvLink ? "green" : "blue",
                     l.lanes ? fmt::format("NV{}", l.lanes) : fmt::format("{:.0f} GB/s", l.bw));
  o << "}\n";
  return o.str();
}

std::string render_summary(const Topology& t, int copies) {
  int nvlinks = 0;
  for (const Link& l : t.links) nvlinks += l.type == LinkType::NvLink ? l.lanes : 0;
  int cores = 0;
  for (int c : t.of_kind(Kind::Cpu)) cores += std::atoi(t.devices[c].attr("cores", "0").c_str());
  return fmt::format(
      "hosts {}, NUMA nodes {}, cores {}, GPUs {}, NVSwitches {}, NICs {} ({} ports), "
      "NVLink lanes {}, PCI switches/bridges {}\n",
      copies * t.of_kind(Kind::Host).size(), copies * t.of_kind(Kind::Cpu).size(), copies * cores,
      copies * t.of_kind(Kind::Gpu).size(), copies * t.of_kind(Kind::NvSwitch).size(),
      copies * t.of_kind(Kind::Nic).size(), copies * t.of_kind(Kind::Port).size(), copies * nvlinks,
      copies * t.of_kind(Kind::PciSwitch).size());
}

}  // namespace coral::topology
