#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("{}: is a directory, not a topology file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", path));
  // Read in pieces up to a cap: a device (/dev/zero) or a wrong file must not eat the memory.
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes)
      throw Error(fmt::format("{}: larger than {} MiB: not a topology file (a large machine's is under 1 MiB)", path,
                              kMaxFileBytes >> 20));
  }
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte-order mark
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw Error(fmt::format("{}: empty file", path));
  if (text[first] == '{') return from_json(text, path);
  if (text.find("<topology") != std::string::npos) return from_hwloc_xml(text, path);
  if (text[first] == '<') return from_nccl_xml(text, path);
  throw Error(fmt::format("{}: neither JSON, NCCL topology XML nor hwloc XML", path));
}

}  // namespace coral::topology
