// coral-topo: shows the machine model Coral detects (or loads from a file), the way nvidia-smi
// topo -m does and more: matrix, tree, JSON, DOT/PNG, NCCL XML, and the rings/trees for N ranks.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "topology/detect.h"
#include "topology/formats.h"
#include "topology/render.h"
#include "topology/rings.h"

using namespace coral::topology;

namespace {

extern "C" char** environ;

void write_out(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    if (std::fputs(text.c_str(), stdout) < 0 || std::fflush(stdout) != 0)
      throw Error(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
    return;
  }
  std::ofstream out(path);
  out << text;
  if (!out) throw Error(fmt::format("cannot write {}", path));
}

// graphviz's dot, run without a shell (the paths are the user's, quotes and all).
void draw_png(const std::string& dot_file, const std::string& png) {
  const std::string out = "-o" + png;
  const char* argv[] = {"dot", "-Tpng", out.c_str(), dot_file.c_str(), nullptr};
  pid_t pid;
  int rc = posix_spawnp(&pid, "dot", nullptr, nullptr, const_cast<char* const*>(argv), environ);
  if (rc != 0)
    throw Error(fmt::format("cannot run graphviz's dot ({}): is graphviz installed? The DOT source is {}",
                            std::strerror(rc), dot_file));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(fmt::format("dot could not draw {} (its message is above); the DOT source is {}", png, dot_file));
}

// Hosts of a job are copies of one machine: one host's plan serves all, and the ring visits
// the hosts in turn (plan_host, as the library does at init).
std::string rings(const Topology& t, int ranks_per_host, int hosts) {
  std::vector<RankPlace> places = default_places(t, ranks_per_host);
  const size_t n = places.size(), total = n * static_cast<size_t>(hosts);
  if (int gpus = static_cast<int>(t.of_kind(Kind::Gpu).size()); gpus > 0 && ranks_per_host > gpus)
    std::fprintf(stderr,
                 "coral-topo: warning: %d ranks a host but %d GPUs: ranks %d and up share a GPU with a lower "
                 "rank\n",
                 ranks_per_host, gpus, gpus);
  HostPlan plan = plan_host(t, places, hosts == 1);
  std::string s = fmt::format("{} ranks ({} per host):\n", total, ranks_per_host);
  auto prefix = [&](size_t h) { return hosts > 1 ? fmt::format("host{}/", h) : std::string(); };
  s += "ring:";
  for (size_t i = 0; i < total; i++) {
    size_t h = i / n, j = (i + 1) % total;
    int a = plan.order[i % n], b = plan.order[j % n];
    std::string cls;
    if (total > 1) {
      cls = path_name(j / n != h ? Path::NET : link_class(t, places[a], places[b]).path);
    }
    s += fmt::format(" {} -{}-> ", h * n + a, cls);
    if (i + 1 == total) s += std::to_string(b);
  }
  s += "\n";
  for (size_t h = 0; h < static_cast<size_t>(hosts); h++)
    for (size_t r = 0; r < n; r++) {
      const Device& d = t.devices[places[r].device];
      std::string nic = "none";
      if (int p = plan.nic[r]; p >= 0) {
        nic = prefix(h) + t.devices[p].id;
        int pci = t.devices[p].kind == Kind::Port ? t.devices[p].parent : p;
        if (pci != p && is_bus_id(t.devices[pci].id)) nic += " (" + t.devices[pci].id + ")";
      }
      s += fmt::format("  rank {:3} on {}{} ({}), NIC {}\n", h * n + r, prefix(h), d.id, kind_name(d.kind), nic);
    }
  // Per host the rank nearest its NIC leads; leaders form a binary tree in host order.
  HostTree one = host_tree(t, places);
  const size_t lead = static_cast<size_t>(one.leaders.empty() ? 0 : one.leaders[0]);
  s += "inter-host tree (leader rank per host -> parent):";
  for (size_t h = 0; h < static_cast<size_t>(hosts); h++)
    s += fmt::format(" {}->{}", h * n + lead, h == 0 ? -1 : static_cast<long>(((h - 1) / 2) * n + lead));
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
      ->check(CLI::Validator(
          [](std::string& v) {
            char* end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            return end != v.c_str() && *end == 0 && n >= 1 && n <= 4096
                       ? std::string()
                       : "wants a number of ranks a host, 1 to 4096; got '" + v + "'";
          },
          "N"));
  app.add_option("--hosts", hosts, "treat the model as this many identical hosts (for --rings)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--sysfs", sysfs, "sysfs root for NIC detection")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // Text for people and one document for programs do not share an output.
  const bool document = format == "json" || format == "dot" || format == "xml";
  if (ranks > 0 && document) {
    std::fprintf(stderr, "coral-topo: --rings prints text: use it with -f matrix, tree, summary or all, not %s\n",
                 format.c_str());
    return 2;
  }
  if (hosts > 1 && format == "xml") {
    std::fprintf(stderr, "coral-topo: NCCL's XML describes one machine: use -f json for --hosts %d\n", hosts);
    return 2;
  }
  if (struct stat st; load.empty() && stat(sysfs.c_str(), &st) != 0) {
    std::fprintf(stderr, "coral-topo: --sysfs %s: %s\n", sysfs.c_str(), std::strerror(errno));
    return 2;
  }
  setenv("HWLOC_XML_VERBOSE", "1", 0);  // hwloc says why it refuses a file only when asked
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
    for (const std::string& note : t.notes) std::fprintf(stderr, "coral-topo: note: %s\n", note.c_str());
    Topology one = t;  // a single host, for the rings
    bool whole = format != "summary" || hosts == 1;
    if (hosts > 1 && whole) {
      std::vector<Topology> copies(static_cast<size_t>(hosts), t);
      std::vector<std::string> names;
      for (int h = 0; h < hosts; h++) names.push_back(fmt::format("host{}", h));
      t = combine(copies, names);
    }
    std::string text;
    if (format == "matrix" || format == "all") text += render_matrix(t);
    if (format == "summary" || format == "all") text += render_summary(whole ? t : one, whole ? 1 : hosts);
    if (format == "tree" || format == "all") text += render_tree(t);
    if (format == "json") text += to_json(t) + "\n";
    if (format == "dot") text += render_dot(t);
    if (format == "xml") text += to_nccl_xml(t);
    if (ranks > 0) text += rings(one, ranks, hosts);
    write_out(output, text);
    if (!png.empty()) {
      std::string dot_file = png + ".dot";
      write_out(dot_file, render_dot(t));
      draw_png(dot_file, png);
      std::remove(dot_file.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coral-topo: %s\n", e.what());
    return 1;
  }
  return 0;
}
