// Schedule builders: pure functions of CollArgs (no I/O, no threads). Each algorithm file starts
// with a comment on its steps, bytes per rank and when it wins.
#pragma once
#include <vector>

#include "collectives/schedule.h"

namespace coral::collectives {

// Blocks of a buffer: block b starts at off[b] and holds size[b] elements.
struct Blocks {
  std::vector<size_t> off, size;
  static Blocks even(size_t n, int p);                     // n split into p near-equal blocks
  static Blocks uniform(size_t per_block, int p);          // p blocks of per_block each
  static Blocks packed(const std::vector<size_t>& sizes);  // back to back, in order
  size_t end() const;                                      // max(off + size): the extent
};

// The v-collectives' counts, checked: `need_send` for all-to-all-v, which also reads the send
// side. Throws coralInvalidArgument when a.v is missing or its vectors are not nranks long.
const VCounts& vcounts_of(const CollArgs& a, bool need_send);

// Primitives that compose (ring all-reduce = ring reduce-scatter + ring all-gather).
void ring_reduce_scatter(Schedule& s, const CollArgs& a, const Blocks& in, Ref out_mine, bool scale);
void ring_allgather(Schedule& s, const CollArgs& a, const Blocks& blocks);
void copy_chunked(Schedule& s, Ref src, Ref dst, size_t count);
// acc <- x_0 (op) x_1 (op) ... (op) x_{P-1}, folded left in rank order so every rank that folds
// the same inputs gets the same bits. Rank q != r's input arrives from q; ours is `mine`.
// Safe when acc aliases mine; uses scratch (n elements) for ranks >= 2. posted: the inputs
// come as posts (Step::posted).
void fold_in_rank_order(Schedule& s, int p, int r, Ref mine, Ref acc, Ref scratch, size_t n, bool posted = false);

Schedule allreduce_ring(const CollArgs& a);
Schedule allreduce_rd(const CollArgs& a);
Schedule allreduce_oneshot(const CollArgs& a);
Schedule allreduce_twoshot(const CollArgs& a);
Schedule allreduce_rhd(const CollArgs& a);
Schedule allreduce_tree(const CollArgs& a);
Schedule allreduce_hier(const CollArgs& a);
Schedule reduce_scatter_ring(const CollArgs& a);
Schedule reduce_scatter_rhd(const CollArgs& a);
Schedule allgather_rhd(const CollArgs& a);
Schedule broadcast_tree(const CollArgs& a);
Schedule reduce_tree(const CollArgs& a);
Schedule allgather_ring(const CollArgs& a);
Schedule broadcast_chain(const CollArgs& a);
Schedule reduce_chain(const CollArgs& a);
Schedule barrier_dissemination(const CollArgs& a);
Schedule sendrecv_p2p(const CollArgs& a);
Schedule alltoall_pairwise(const CollArgs& a);
Schedule alltoallv_pairwise(const CollArgs& a);
Schedule alltoall_bruck(const CollArgs& a);
Schedule gather_direct(const CollArgs& a);
Schedule gather_tree(const CollArgs& a);
Schedule scatter_direct(const CollArgs& a);
Schedule scatter_tree(const CollArgs& a);
Schedule allgatherv_ring(const CollArgs& a);
Schedule reduce_scatterv_ring(const CollArgs& a);

}  // namespace coral::collectives
