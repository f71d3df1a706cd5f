#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/log.h"
#include "topology/detect.h"
#include "topology/formats.h"

namespace coral::topology {

Topology detect(const DetectOptions& o) {
  Topology t;
  int host = t.add(Kind::Host, o.host, -1);
  if (o.hwloc && have_hwloc()) {
    detect_hwloc(t, host);
  } else {
    // Without hwloc: one CPU domain with the cores this process may use.
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    t.add(Kind::Cpu, "cpu0", host, {{"numaid", "0"}, {"cores", std::to_string(n > 0 ? n : 1)}});
  }
  if (o.net) detect_net(t, host, o.sysfs);
  if (o.nvml) detect_nvml(t, host);
  return t;
}

Topology load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw Error(fmt::format("{}: empty file", path));
  if (text[first] == '{') return from_json(text, path);
  if (text.find("<topology") != std::string::npos) return from_hwloc_xml(text, path);
  if (text[first] == '<') return from_nccl_xml(text, path);
  throw Error(fmt::format("{}: neither JSON, NCCL topology XML nor hwloc XML", path));
}

}  // namespace coral::topology
