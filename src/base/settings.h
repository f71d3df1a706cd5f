// The knobs a communicator reads, typed, read and validated once when it is created: calls look
// at these fields, never at the environment.
#pragma once
#include <cstdint>
#include <string>

namespace coral::config {

struct Settings {
  double timeout_s = 300;                  // CORAL_TIMEOUT
  std::string algo = "auto";               // CORAL_ALGO (parsed by the tuner)
  uint64_t small_bytes = 4096;             // CORAL_SMALL_BYTES
  bool tune_trials = false;                // CORAL_TUNE_TRIALS
  bool tune_probe = true;                  // CORAL_TUNE_PROBE
  uint64_t chunk_bytes = 0;                // CORAL_CHUNK_BYTES
  int spin = 20000;                        // CORAL_SPIN
  std::string transport = "auto";          // CORAL_TRANSPORT
  uint64_t cuda_ipc_slot_bytes = 4 << 20;  // CORAL_CUDA_IPC_SLOT_BYTES
  uint64_t gpu_stage_bytes = 4 << 20;      // CORAL_GPU_STAGE_BYTES
  bool check_roots = true;                 // CORAL_CHECK_ROOTS
  std::string dump_on_timeout;             // CORAL_DUMP_ON_TIMEOUT

  // Every knob in the environment is validated (a bad one anywhere fails here, naming it), then
  // these are read.
  static Settings from_env();
};

}  // namespace coral::config
