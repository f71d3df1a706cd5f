// NCCL_* variables with a Coral equivalent become it when the library loads (before Coral reads
// its own); the rest are ignored, which CORAL_DEBUG=INFO says once.
#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "shim.h"

extern char** environ;

namespace {

void set_default(const char* name, const std::string& value) { setenv(name, value.c_str(), 0); }

bool info() {
  const char* d = std::getenv("CORAL_DEBUG");
  return d && (std::strcmp(d, "INFO") == 0 || std::strcmp(d, "TRACE") == 0);
}

// NCCL's subsystem names as Coral's; those Coral has no counterpart for are dropped.
std::string subsystems(const std::string& list) {
  std::string out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string w = list.substr(start, end - start);
    for (char& ch : w) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const char* mapped = w == "TUNING" ? "TUNE" : w == "BOOTSTRAP" ? "BOOT" : w == "GRAPH" ? "TOPO" : nullptr;
    for (const char* same : {"INIT", "NET", "SHM", "COLL", "TOPO", "ALL"})
      if (w == same) mapped = same;
    if (mapped) {
      if (!out.empty()) out += ',';
      out += mapped;
    }
    start = end + 1;
  }
  return out.empty() ? "ALL" : out;
}

__attribute__((constructor)) void map_nccl_env() {
  if (const char* d = std::getenv("NCCL_DEBUG")) {
    std::string v = d;
    if (!strcasecmp(d, "INFO") || !strcasecmp(d, "TRACE") || !strcasecmp(d, "WARN"))
      for (char& ch : v) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    else
      v = "WARN";  // VERSION and the like: Coral's default
    set_default("CORAL_DEBUG", v);
  } else {
    // NCCL unasked says nothing: failures reach the caller as results and ncclGetLastError.
    set_default("CORAL_DEBUG", "NONE");
  }
  if (const char* s = std::getenv("NCCL_DEBUG_SUBSYS")) set_default("CORAL_DEBUG_SUBSYS", subsystems(s));
  if (const char* s = std::getenv("NCCL_SOCKET_IFNAME")) set_default("CORAL_SOCKET_IFNAME", s);
  if (const char* s = std::getenv("NCCL_TOPO_FILE")) set_default("CORAL_TOPO_FILE", s);
  if (const char* s = std::getenv("NCCL_TOPO_DUMP_FILE")) set_default("CORAL_TOPO_DUMP_FILE", s);
  if (const char* a = std::getenv("NCCL_ALGO")) {
    if (!strcasecmp(a, "ring") || !strcasecmp(a, "tree")) {
      std::string v = a;
      for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      set_default("CORAL_ALGO", v);
    } else if (info()) {
      std::fprintf(stderr, "coral-nccl: NCCL_ALGO=%s names no algorithm Coral has (ring, tree); ignored\n", a);
    }
  }
  if (!info()) return;
  std::string ignored;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("NCCL_", 0) != 0) continue;
    const std::string name = kv.substr(0, kv.find('='));
    if (name == "NCCL_DEBUG" || name == "NCCL_DEBUG_SUBSYS" || name == "NCCL_SOCKET_IFNAME" ||
        name == "NCCL_TOPO_FILE" || name == "NCCL_TOPO_DUMP_FILE" || name == "NCCL_ALGO" || name == "NCCL_COMM_ID")
      continue;
    if (!ignored.empty()) ignored += ' ';
    ignored += name;
  }
  if (!ignored.empty()) std::fprintf(stderr, "coral-nccl: ignored (no Coral equivalent): %s\n", ignored.c_str());
}

}  // namespace
