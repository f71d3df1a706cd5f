#include "base/settings.h"

#include "base/config.h"

namespace coral::config {

Settings Settings::from_env() {
  validate_all();
  Settings s;
  s.timeout_s = get_double("CORAL_TIMEOUT");
  s.algo = get_string("CORAL_ALGO");
  s.small_bytes = get_bytes("CORAL_SMALL_BYTES");
  s.tune_trials = get_int("CORAL_TUNE_TRIALS") != 0;
  s.tune_probe = get_int("CORAL_TUNE_PROBE") != 0;
  s.chunk_bytes = get_bytes("CORAL_CHUNK_BYTES");
  s.spin = static_cast<int>(get_int("CORAL_SPIN"));
  s.transport = get_string("CORAL_TRANSPORT");
  s.cuda_ipc_slot_bytes = get_bytes("CORAL_CUDA_IPC_SLOT_BYTES");
  s.gpu_stage_bytes = get_bytes("CORAL_GPU_STAGE_BYTES");
  s.check_roots = get_int("CORAL_CHECK_ROOTS") != 0;
  s.dump_on_timeout = get_string("CORAL_DUMP_ON_TIMEOUT");
  return s;
}

}  // namespace coral::config
