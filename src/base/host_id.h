#pragma once
#include <string>

namespace coral {
// Ranks with equal ids share memory: CORAL_HOSTID, else hostname + boot id + network namespace
// (so emulated hosts in separate namespaces count as separate hosts).
std::string host_id();
}  // namespace coral
