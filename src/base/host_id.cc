#include "base/host_id.h"

#include <unistd.h>

#include <climits>
#include <fstream>

#include "base/config.h"

namespace coral {

std::string host_id() {
  if (config::is_set("CORAL_HOSTID")) return config::get_string("CORAL_HOSTID");
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  char ns[PATH_MAX] = "";
  ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
  if (n > 0) ns[n] = 0;
  return std::string(host) + "|" + boot + "|" + ns;
}

}  // namespace coral
