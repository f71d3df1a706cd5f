// Gradient averaging in buckets, as PyTorch DDP does it: the flat gradient is cut into buckets of
// about `bucket_bytes` at layer boundaries; during backward each bucket's non-blocking all-reduce
// starts as soon as its last layer's gradient is final, overlapping the rest of backward. Before
// the optimizer step the trainer waits for all of them; that wait is the exposed communication.
// Several slots let a bounded-staleness trainer keep k steps of all-reduces in flight.
#pragma once
#include <coral/coral.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compress.h"
#include "mlp.h"

namespace trainer {

// Precision on the wire: the gradient's own type, or 16-bit (compress, all-reduce, decompress).
enum class Wire { Same, Bf16, Fp16 };
Wire parse_wire(const std::string& s);  // "fp32"/"fp64"/"same", "bf16", "fp16"

template <class T>
class GradSync {
 public:
  GradSync(coralComm_t comm, const Layout& layout, size_t bucket_bytes, Wire wire, int slots);

  // Blocking: every bucket is all-reduced by the calling thread at launch_rest (timed as
  // wait). Without overlap that saves the hand-offs to and from Coral's progress thread, which
  // on saturated cores cost more than the all-reduce of a small model (see docs/trainer.md).
  void set_blocking(bool on) { blocking_ = on; }
  bool blocking() const { return blocking_; }
  // --compress: wait() sends the compressed gradient (blocking, after backward) instead of
  // all-reducing buckets.
  void compress(const Compression& c, const Layout& layout, uint64_t seed);
  // Bytes this rank puts into collectives per step.
  size_t bytes_per_step() const;

  void begin(int slot, T* grad);
  void layer_ready(int slot, int layer);  // from backward: starts buckets now complete
  void launch_rest(int slot);             // starts whatever has not started yet
  void wait(int slot);                    // completes the slot's buckets; grad holds the sum
  // After a failure (--elastic): completes and forgets every request in flight, whatever it
  // returns, and uses comm from now on.
  void reset(coralComm_t comm);
  // The sharded optimizer (ZeRO stage 1, as PyTorch's ZeroRedundancyOptimizer): rank r owns a
  // balanced slice [shard_begin, shard_end) of the parameters and their optimizer state. The
  // all-reduce splits in two around the update: reduce_scatter leaves the sum of the rank's slice
  // in place in grad, and all_gather then sends every rank's updated slice to every rank. The
  // bytes are the all-reduce's; each rank updates 1/P of the parameters instead of all of them.
  void set_shards(int rank, int size);
  size_t shard_begin() const { return shard_displs_.empty() ? 0 : shard_displs_[rank_]; }
  size_t shard_end() const { return shard_displs_.empty() ? nparams_ : shard_displs_[rank_] + shard_counts_[rank_]; }
  void reduce_scatter(T* grad);
  void all_gather(T* data, bool timed = true);
  double wait_seconds() const { return wait_s_; }
  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    size_t begin, end;  // slice of the flat gradient
    int last_layer;     // the layer backward finishes last within it
  };
  struct Slot {
    T* grad = nullptr;
    std::vector<coralRequest_t> reqs;
    std::vector<uint16_t> wire;
    size_t next = 0;  // first bucket not started
  };
  void launch(Slot& s, const Bucket& b);
  void encode(Slot& s, const Bucket& b);

  coralComm_t comm_;
  Wire wire_;
  std::vector<Bucket> buckets_;
  std::vector<Slot> slots_;
  double wait_s_ = 0;
  bool blocking_ = false;
  size_t nparams_;
  size_t rank_ = 0;
  std::vector<size_t> shard_counts_, shard_displs_;
  std::unique_ptr<Compressor<T>> comp_;
};

}  // namespace trainer
