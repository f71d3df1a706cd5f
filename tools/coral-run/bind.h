// Where coral-run pins its local ranks (--bind-to core): one CPU per rank, spread over cores
// before hyperthread siblings, within the CPUs coral-run itself may use. Unpinned, the kernel
// now and then stacks two busy ranks on one core and rarely moves them: a 2-rank 8-byte
// all-reduce then takes ~30 us instead of ~0.5 us, and runs of one benchmark differ by ~40%.
// The default (auto) pins when the job fits, as mpirun does for small jobs.
#pragma once
#include <string>
#include <vector>

namespace coral::run {

enum class Bind { Auto, None, Core };

// "auto", "core" or "none"; throws std::invalid_argument naming the accepted values otherwise.
Bind parse_bind(const std::string& s);

// What auto means for a job: core when its local ranks fit the CPUs coral-run may use and it is
// the only node (emulated hosts share one machine's cores, and each coral-run would start at the
// same CPU); none otherwise, so oversubscribed ranks are left to the kernel.
Bind resolve_bind(Bind b, int local_ranks, int nnodes, size_t cpus);

// The CPUs in binding order: the first PU of every core, then the second ones, and so on.
std::vector<int> cpu_order();

// Pins the calling process to cpus[rank % size]; "" or the reason it could not.
std::string bind_rank(const std::vector<int>& cpus, int rank);

}  // namespace coral::run
