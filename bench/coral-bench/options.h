// coral-bench's command line: nccl-tests' flags and meanings, plus -t, --skew, --algo, --csv, --plot.
#pragma once
#include <coral/coral.h>

#include <string>
#include <vector>

#include "bench/common/exact_v.h"

namespace bench {

struct Options {
  size_t min_bytes = 32u << 20, max_bytes = 32u << 20;
  size_t step_bytes = 1u << 20;
  double factor = 1;  // > 1: multiply sizes; else add step_bytes
  std::vector<coralRedOp_t> ops{coralSum};
  std::vector<coralDataType_t> types{coralFloat32};
  int root = 0;
  double skew = 1;  // v-forms: exact::skew_count's ratio
  int iters = 20, warmup = 5;
  int check = 1;
  int average = 1;  // 0 rank 0, 1 average, 2 min, 3 max over ranks
  double timeout_s = 0;
  std::string json, plot;
  bool csv = false;
  exact::Coll coll = exact::Coll::AllReduce;
  std::string coll_name = "allreduce";
  std::string algo = "auto";
  bool device = false;        // buffers in GPU memory, calls on a CUDA stream
  int local_register = 0;     // -R 1: buffers from coralMemAlloc, registered (nccl-tests' -R)
  bool inject_error = false;  // test hook: corrupt one element on rank 0 before checking
  std::vector<size_t> sizes() const;
};

// Parses argv; on a bad flag prints a message naming it and exits 2 (--help exits 0).
Options parse_options(int argc, char** argv);

const char* type_name(coralDataType_t t);
const char* op_name(coralRedOp_t op);
// busbw / algbw for the collective (nccl-tests' definitions).
double bus_factor(exact::Coll c, int nranks);
bool has_root(exact::Coll c);
bool reduces(exact::Coll c);  // takes -o

}  // namespace bench
