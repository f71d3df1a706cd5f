// coral-topo: shows the machine model Coral detects (or loads from a file), the way nvidia-smi
// topo -m does and more: matrix, tree, JSON, DOT/PNG, NCCL XML, and the rings/trees for N ranks.
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>

#include "topology/detect.h"
#include "topology/formats.h"
#include "topology/render.h"
#include "topology/rings.h"

using namespace coral::topology;

namespace {

void write_out(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::fputs(text.c_str(), stdout);
    return;
  }
  std::ofstream out(path);
  out << text;
  if (!out) throw Error(fmt::format("cannot write {}", path));
}

std::string rings(const Topology& t, int ranks_per_host) {
  std::vector<RankPlace> places = default_places(t, ranks_per_host);
  std::string s = fmt::format("{} ranks ({} per host):\n", places.size(), ranks_per_host);
  auto where = [&](int r) { return t.devices[places[r].device].id; };
  std::vector<int> ring = ring_order(t, places);
  s += "ring:";
  for (size_t i = 0; i < ring.size(); i++) {
    int a = ring[i], b = ring[(i + 1) % ring.size()];
    LinkClass lc = link_class(t, places[a], places[b]);
    s += fmt::format(" {} -{}-> ", a, ring.size() > 1 ? path_name(lc.path) : "");
    if (i + 1 == ring.size()) s += std::to_string(b);
  }
  s += "\n";
  std::vector<int> nics = assign_nics(t, places);
  for (size_t r = 0; r < places.size(); r++)
    s += fmt::format("  rank {:3} on {} ({}), NIC {}\n", r, where(static_cast<int>(r)),
                     kind_name(t.devices[places[r].device].kind), nics[r] >= 0 ? t.devices[nics[r]].id : "none");
  HostTree tree = host_tree(t, places);
  s += "inter-host tree (leader rank per host -> parent):";
  for (int l : tree.leaders) s += fmt::format(" {}->{}", l, tree.parent[l]);
  return s + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string load, format = "matrix", output, png, sysfs = "/sys";
  int ranks = 0, hosts = 1;
  CLI::App app{"coral-topo: the machine model Coral uses (detected, or loaded from a file)"};
  app.add_option("-l,--load", load, "read a model: coral JSON, NCCL topology XML (NCCL_TOPO_FILE) or hwloc XML");
  app.add_option("-f,--format", format, "matrix, tree, json, dot, xml (NCCL format), summary or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"matrix", "tree", "json", "dot", "xml", "summary", "all"}));
  app.add_option("-o,--output", output, "write there instead of standard output");
  app.add_option("--png", png, "also draw the graph to this PNG (needs graphviz's dot)");
  app.add_option("-r,--rings", ranks, "show the ring, NIC choice and host tree for N ranks a host")
      ->check(CLI::PositiveNumber);
  app.add_option("--hosts", hosts, "treat the model as this many identical hosts (for --rings)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--sysfs", sysfs, "sysfs root for NIC detection")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    Topology t;
    if (!load.empty()) {
      t = load_file(load);
    } else {
      char host[256] = "localhost";
      gethostname(host, sizeof host - 1);
      DetectOptions o;
      o.host = host;
      o.sysfs = sysfs;
      t = detect(o);
    }
    if (hosts > 1) {
      std::vector<Topology> copies(static_cast<size_t>(hosts), t);
      std::vector<std::string> names;
      for (int h = 0; h < hosts; h++) names.push_back(fmt::format("host{}", h));
      t = combine(copies, names);
    }
    std::string text;
    if (format == "matrix" || format == "all") text += render_matrix(t);
    if (format == "summary" || format == "all") text += render_summary(t);
    if (format == "tree" || format == "all") text += render_tree(t);
    if (format == "json") text += to_json(t) + "\n";
    if (format == "dot") text += render_dot(t);
    if (format == "xml") text += to_nccl_xml(t);
    if (ranks > 0) text += rings(t, ranks);
    write_out(output, text);
    if (!png.empty()) {
      std::string dot_file = png + ".dot";
      write_out(dot_file, render_dot(t));
      std::string cmd = fmt::format("dot -Tpng -o '{}' '{}' 2>&1", png, dot_file);
      if (std::system(cmd.c_str()) != 0)
        throw Error(fmt::format("could not draw {} (is graphviz installed?); the DOT source is {}", png, dot_file));
      std::remove(dot_file.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coral-topo: %s\n", e.what());
    return 1;
  }
  return 0;
}
