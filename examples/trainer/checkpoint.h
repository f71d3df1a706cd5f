// Checkpoints: the parameters, the optimizer's state and where training stands, in one binary
// file with a CRC. Rank 0 writes atomically (temporary file, fsync, rename), so a crash leaves
// the previous checkpoint intact; on resume rank 0 reads and broadcasts, so only rank 0 needs
// the file and any number of ranks can resume.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

template <class T>
struct Checkpoint {
  std::vector<int> dims;    // model widths
  uint32_t optimizer = 0;   // OptimKind
  int64_t global_step = 0;  // batches consumed
  int64_t optimizer_steps = 0;
  int64_t global_batch = 0;
  uint64_t seed = 0;
  std::vector<T> params, m, v;
};

template <class T>
void save_checkpoint(const std::string& path, const Checkpoint<T>& c);
// Throws std::runtime_error naming the file and the problem (missing, truncated, corrupt,
// written for another element type).
template <class T>
Checkpoint<T> load_checkpoint(const std::string& path);

}  // namespace trainer
