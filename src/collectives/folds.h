// Folds: runs of steps that reduce several inputs into one place, which the executor may run as
// one multi-source reduction (one pass over the destination instead of one per input) while it
// holds every input message at once. A schedule says nothing about folds; this analysis finds
// them, so the executor, the verifier and coral-schedule agree on what runs fused.
//
// A fold is a run of consecutive steps of one count, each from a distinct peer where it has
// one, that carries one accumulator:
//   - it begins with a recv (acc := message) or a recv_reduce (acc := src (op) message);
//   - then recv_reduce with src == acc (acc := acc (op) message) or a local reduce with
//     src == acc (acc := acc (op) src2); either may move the accumulator to its dst.
// Its inputs are each step's message or src2, in step order, with the first step's local src
// before or after its message as the peer ranks above or below this rank; the result is
// inputs[0] (op) inputs[1] (op) ... left to right. So a fold in rank order computes
// x_0 (op) x_1 (op) ... bit for bit on every rank, whichever of them is its own: order shows
// in max and min, which keep their second operand on ties and NaN.
// Fused, the accumulator's earlier places are never written, so each must be scratch that no
// later step reads before overwriting it; and no local input may be a place the fold wrote
// before reading it (send and receive buffers count as one: they may be the same memory).
#pragma once
#include <cstdint>
#include <vector>

#include "collectives/schedule.h"

namespace coral::collectives {

// Per step: the length of the fold that begins there (at least 2), else 0.
std::vector<uint32_t> fold_lengths(const Schedule& s);

// The inputs of the fold of `len` steps at `first`, in order: a step whose message is the input,
// or step -1 and the local input.
struct FoldInput {
  int64_t step;  // -1: local
  Ref local;
};
std::vector<FoldInput> fold_inputs(const Schedule& s, size_t first, size_t len);

}  // namespace coral::collectives
