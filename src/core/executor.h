// Runs one rank's schedule over transport links: the only place that knows both schedules and
// transports.
#pragma once
#include <vector>

#include "collectives/folds.h"
#include "collectives/schedule.h"
#include "kernels/mem_ops.h"
#include "kernels/reduce.h"
#include "transport/transport.h"

namespace coral {

// A schedule resolved once against the links it runs on: each step's links, whether a posted
// step goes as a post, where the runs of posted sends begin, and the folds with their inputs.
// An 8-byte one-shot at P=8 spent a visible share of each call re-deciding these.
struct Plan {
  struct Op {
    transport::Link* link = nullptr;  // the step's peer's, if any
    transport::Link* out = nullptr;   // its peer_out's, if any
    bool post = false;                // goes through the link's poster
    uint32_t run = 0;                 // the first of a run of posted sends of one buffer: its length
    uint32_t npeers = 0;              // that run's steps that post: through `poster`, to its readers `readers`
    uint32_t readers = 0;
    transport::Poster* poster = nullptr;  // null: no step of the run posts
    uint32_t fold = 0;                    // the first step of a fold (collectives/folds.h): its length
    uint32_t fold_at = 0;                 // and its entry in folds
  };
  const std::vector<transport::Link*>* links = nullptr;  // resolved against these
  size_t es = 0;
  std::vector<Op> ops;  // by step
  struct Fold {
    uint32_t inputs_at, ninputs;  // in inputs
    collectives::Ref dst;
  };
  std::vector<Fold> folds;
  struct Input {                      // a fold's input (collectives::FoldInput), resolved
    transport::Link* link = nullptr;  // its message's (null: local)
    bool post = false;
    int peer = -1;
    collectives::Ref local;
  };
  std::vector<Input> inputs;
};

Plan compile(const collectives::Schedule& s, const std::vector<transport::Link*>& links, size_t es);

struct ExecArgs {
  const void* send;
  void* recv;
  void* scratch;  // at least schedule.scratch_elems elements
  coralDataType_t dtype;
  coralRedOp_t op;
  int nranks;
  uint64_t tag;                                // expected on every message of this operation
  const std::vector<transport::Link*>* links;  // by peer rank
  WaitMonitor* monitor;
  kernels::MemOps* mem = nullptr;  // nullptr: host memory
  const Plan* plan = nullptr;      // from compile() for this schedule and these links, or nullptr
};

// Tag layout: collective in bits 56-63, dtype 48-55, op 40-47, a hash of the rest below.
uint64_t make_tag(collectives::Coll coll, coralDataType_t dtype, coralRedOp_t op, uint64_t salt);
std::string describe_tag(uint64_t tag);
// The tag of the root check before rooted call `coll` (broadcast, reduce, gather, scatter),
// from the tag its all-reduce would have: the op slot no op has, and the call in the dtype's place.
uint64_t root_check_tag(collectives::Coll coll, uint64_t tag);

void execute(const collectives::Schedule& s, const ExecArgs& x);

}  // namespace coral
