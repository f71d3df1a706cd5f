#include "tools/coral-run/bind.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#ifdef CORAL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace coral::run {

Bind parse_bind(const std::string& s) {
  if (s == "core") return Bind::Core;
  if (s == "none") return Bind::None;
  if (s == "auto") return Bind::Auto;
  throw std::invalid_argument("--bind-to '" + s + "': expected auto, core or none");
}

Bind resolve_bind(Bind b, int local_ranks, int nnodes, size_t cpus) {
  if (b != Bind::Auto) return b;
  return nnodes == 1 && local_ranks >= 1 && static_cast<size_t>(local_ranks) <= cpus ? Bind::Core : Bind::None;
}

std::vector<int> cpu_order() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> order;
#ifdef CORAL_HAVE_HWLOC
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) == 0) {
    if (hwloc_topology_load(topo) == 0) {
      std::vector<std::vector<int>> by_sibling;  // k -> the k-th allowed PU of every core, in core order
      for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, core));) {
        size_t k = 0;
        for (int pu = hwloc_bitmap_first(core->cpuset); pu >= 0; pu = hwloc_bitmap_next(core->cpuset, pu)) {
          if (pu >= CPU_SETSIZE || !CPU_ISSET(pu, &allowed)) continue;
          if (by_sibling.size() <= k) by_sibling.emplace_back();
          by_sibling[k++].push_back(pu);
        }
      }
      for (auto& cpus : by_sibling) order.insert(order.end(), cpus.begin(), cpus.end());
    }
    hwloc_topology_destroy(topo);
  }
  if (static_cast<int>(order.size()) == CPU_COUNT(&allowed)) return order;
  order.clear();
#endif
  for (int c = 0; c < CPU_SETSIZE; ++c)  // no topology: the kernel's numbering
    if (CPU_ISSET(c, &allowed)) order.push_back(c);
  return order;
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
