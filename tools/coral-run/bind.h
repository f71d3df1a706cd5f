// Where coral-run pins its local ranks (--bind-to core): one CPU per rank, spread over cores
// before hyperthread siblings, within the CPUs coral-run itself may use. Pinning matters most
// when ranks outnumber cores: the kernel often stacks spinning ranks unevenly and rarely moves
// them, and runs of one benchmark then differ by ~40% depending on the placement it drew.
#pragma once
#include <string>
#include <vector>

namespace coral::run {

enum class Bind { None, Core };

// "core" or "none"; throws std::invalid_argument naming the accepted values otherwise.
Bind parse_bind(const std::string& s);

// The CPUs in binding order: the first PU of every core, then the second ones, and so on.
std::vector<int> cpu_order();

// Pins the calling process to cpus[rank % size]; "" or the reason it could not.
std::string bind_rank(const std::vector<int>& cpus, int rank);

}  // namespace coral::run
