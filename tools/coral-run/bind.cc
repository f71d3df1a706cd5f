#include "tools/coral-run/bind.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

#ifdef CORAL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace coral::run {

Bind parse_bind(const std::string& s) {
  if (s == "core") return Bind::Core;
  if (s == "none") return Bind::None;
  throw std::invalid_argument("--bind-to '" + s + "': expected core or none");
}

namespace {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace

std::vector<int> cpu_order() {
  std::vector<int> allowed = allowed_cpus();
#ifdef CORAL_HAVE_HWLOC
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
    // sibling index -> CPUs, in core order
    std::map<int, std::vector<int>> by_sibling;
    const int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    for (int i = 0; i < ncores; ++i) {
      hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
      int k = 0;
      for (int pu = hwloc_bitmap_first(core->cpuset); pu >= 0; pu = hwloc_bitmap_next(core->cpuset, pu)) {
        for (int a : allowed)
          if (a == pu) {
            by_sibling[k++].push_back(pu);
            break;
          }
      }
    }
    hwloc_topology_destroy(topo);
    std::vector<int> order;
    for (auto& [k, cpus] : by_sibling) order.insert(order.end(), cpus.begin(), cpus.end());
    if (order.size() == allowed.size()) return order;
  }
#endif
  return allowed;  // no topology: the kernel's numbering
}

std::string bind_rank(const std::vector<int>& cpus, int rank) {
  if (cpus.empty()) return "no CPU is available to bind to";
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[static_cast<size_t>(rank) % cpus.size()], &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) return std::strerror(errno);
  return "";
}

}  // namespace coral::run
