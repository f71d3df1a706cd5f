// Rank, size and rendezvous from the launcher's environment. Precedence (first found wins):
//   coral-run (CORAL_RANK/CORAL_SIZE) > Open MPI (OMPI_COMM_WORLD_*) > MPICH/Hydra (PMI_RANK/
//   PMI_SIZE) > Slurm (SLURM_PROCID/SLURM_NTASKS) > torchrun (RANK/WORLD_SIZE).
// Rendezvous: CORAL_ROOT (with CORAL_SECRET: a store hosted by coral-run; without: rank 0 hosts
// it there) > MASTER_ADDR/MASTER_PORT (rank 0 hosts) > a file in /dev/shm (one host only).
#pragma once
#include <memory>
#include <string>

#include "bootstrap/store.h"

namespace coral::bootstrap {

struct LaunchEnv {
  std::string launcher;  // "coral-run", "openmpi", "mpich", "slurm", "torchrun"
  int rank = -1;
  int size = -1;
  int local_rank = -1;
  std::string root;        // host:port, or "" for same-host file rendezvous
  std::string secret_hex;  // "" when not provided
  bool root_hosted_elsewhere = false;
  std::string job_tag;  // names the file rendezvous
};

// Throws coralInvalidUsage when no launcher variables are present or they are inconsistent.
LaunchEnv read_launch_env();

struct Rendezvous {
  std::shared_ptr<Store> store;
  std::string job_key;  // derived from the job secret; scopes store keys and shm names
  std::string cleanup_file;
};

// Connects to (or, on rank 0, starts) the job's store.
Rendezvous rendezvous_from_env(const LaunchEnv& env, double timeout_s);

}  // namespace coral::bootstrap
