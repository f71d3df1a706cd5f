// Runs one rank's schedule over transport links: the only place that knows both schedules and
// transports.
#pragma once
#include <vector>

#include "collectives/schedule.h"
#include "kernels/reduce.h"
#include "transport/transport.h"

namespace coral {

struct ExecArgs {
  const void* send;
  void* recv;
  void* scratch;  // at least schedule.scratch_elems elements
  coralDataType_t dtype;
  coralRedOp_t op;
  int nranks;
  uint64_t tag;  // expected on every message of this operation
  const std::vector<transport::Link*>* links;  // by peer rank
  WaitMonitor* monitor;
};

// Tag layout: collective in bits 56-63, dtype 48-55, op 40-47, a hash of the rest below.
uint64_t make_tag(sched::Coll coll, coralDataType_t dtype, coralRedOp_t op, uint64_t salt);
std::string describe_tag(uint64_t tag);

void execute(const sched::Schedule& s, const ExecArgs& x);

}  // namespace coral
