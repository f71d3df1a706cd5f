#include "bench/coral-bench/options.h"

#include "base/bytes.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

namespace bench {

namespace {

const char* kTypes[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                        "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
static_assert(std::size(kTypes) == coralNumTypes);
const char* kOps[] = {"sum", "prod", "max", "min", "avg", "band", "bor", "bxor", "premulsum"};
const coralRedOp_t kOpValues[] = {coralSum,  coralProd, coralMax,  coralMin,      coralAvg,
                                  coralBand, coralBor,  coralBxor, exact::kPremul};

[[noreturn]] void bad(const std::string& msg) {
  std::fprintf(stderr, "coral-bench: %s\n", msg.c_str());
  std::exit(2);
}

size_t parse_size(const std::string& flag, const std::string& v) {
  try {
    return coral::config::parse_bytes(v);
  } catch (const std::exception& e) {
    bad(flag + " '" + v + "' is not a size (" + e.what() + "; use e.g. 8, 64K, 1M, 2G)");
  }
}

std::vector<coralDataType_t> parse_types(const std::string& v) {
  if (v == "all") {
    std::vector<coralDataType_t> all;
    for (int t = 0; t < coralNumTypes; ++t) all.push_back(static_cast<coralDataType_t>(t));
    return all;
  }
  const std::pair<const char*, coralDataType_t> aliases[] = {
      {"char", coralInt8},       {"int", coralInt32},    {"float32", coralFloat32}, {"fp32", coralFloat32},
      {"float16", coralFloat16}, {"fp16", coralFloat16}, {"float64", coralFloat64}, {"bf16", coralBfloat16}};
  for (int t = 0; t < coralNumTypes; ++t)
    if (v == kTypes[t]) return {static_cast<coralDataType_t>(t)};
  for (auto& [name, t] : aliases)
    if (v == name) return {t};
  bad("-d '" + v +
      "' is not a datatype (int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2 all)");
}

std::vector<coralRedOp_t> parse_ops(const std::string& v) {
  if (v == "all") return {coralSum, coralProd, coralMax, coralMin, coralAvg};
  if (v == "mulsum") return parse_ops("premulsum");  // nccl-tests' name for it
  for (size_t o = 0; o < std::size(kOps); ++o)
    if (v == kOps[o]) return {kOpValues[o]};
  bad("-o '" + v + "' is not an op (sum prod max min avg band bor bxor premulsum all)");
}

}  // namespace

const char* type_name(coralDataType_t t) { return kTypes[t]; }
const char* op_name(coralRedOp_t op) {
  for (size_t o = 0; o < std::size(kOps); ++o)
    if (kOpValues[o] == op) return kOps[o];
  return "?";
}

double bus_factor(exact::Coll c, int p) {
  switch (c) {
    case exact::Coll::AllReduce:
      return 2.0 * (p - 1) / p;
    case exact::Coll::Broadcast:
    case exact::Coll::Reduce:
      return 1.0;
    default:  // every rank (the root for gather and scatter) moves all but its own block
      return static_cast<double>(p - 1) / p;
  }
}

bool has_root(exact::Coll c) {
  return c == exact::Coll::Broadcast || c == exact::Coll::Reduce || c == exact::Coll::Gather ||
         c == exact::Coll::Scatter;
}

bool reduces(exact::Coll c) {
  return c == exact::Coll::AllReduce || c == exact::Coll::ReduceScatter || c == exact::Coll::Reduce ||
         c == exact::Coll::ReduceScatterv;
}

std::vector<size_t> Options::sizes() const {
  std::vector<size_t> out;
  for (size_t s = min_bytes; s <= max_bytes;) {
    out.push_back(s);
    size_t next = factor > 1 ? static_cast<size_t>(static_cast<double>(s) * factor) : s + step_bytes;
    if (next <= s) break;
    s = next;
  }
  return out;
}

Options parse_options(int argc, char** argv) {
  Options o;
  std::string b = "32M", e = "32M", i = "1M", op = "sum", dt = "float", coll = "allreduce", skew = "1";
  CLI::App app{"coral-bench: collective benchmark with nccl-tests-compatible output"};
  app.add_option("-b,--minbytes", b, "minimum size (K/M/G suffixes)");
  app.add_option("-e,--maxbytes", e, "maximum size");
  app.add_option("-i,--stepbytes", i, "size increment when no -f is given");
  app.add_option("-f,--stepfactor", o.factor, "size multiplication factor");
  app.add_option("-o,--op", op,
                 "sum, prod, max, min, avg, band, bor, bxor (integer types), premulsum (or nccl-tests' mulsum), or all "
                 "(the first five)");
  app.add_option("-d,--datatype", dt, "int8 ... bfloat16, f8e4m3, f8e5m2, or all");
  app.add_option("-r,--root", o.root, "root rank of broadcast, reduce, gather and scatter");
  app.add_option("-n,--iters", o.iters, "timed iterations");
  app.add_option("-w,--warmup_iters", o.warmup, "warm-up iterations");
  app.add_option("-c,--check", o.check, "check results (0/1)");
  app.add_option("-a,--average", o.average, "report rank 0 (0), the average (1), min (2) or max (3) time");
  app.add_option("-T,--timeout", o.timeout_s, "seconds before a stuck collective fails (CORAL_TIMEOUT)");
  app.add_option("-J,--output_file", o.json, "write results as JSON to this file");
  app.add_option("-t,--collective", coll,
                 "allreduce, reducescatter, allgather, broadcast, reduce, alltoall, alltoallv, gather, scatter, "
                 "allgatherv, reducescatterv (nccl-tests' names, as all_reduce or all_reduce_perf, too)");
  app.add_option("--skew", skew,
                 "v-forms: largest/smallest block ratio, blocks spread linearly around the even size; inf: the "
                 "smallest is empty");
  app.add_option("--algo", o.algo, "algorithm: auto or one the library has (see CORAL_ALGO)");
  app.add_flag("--csv", o.csv, "print CSV instead of the table");
  app.add_flag("-G,--device", o.device, "buffers in GPU memory (GPU = local rank modulo GPUs), calls on a CUDA stream");
  app.add_option("--plot", o.plot, "write a PNG of busbw against size (gnuplot)");
  app.add_option("-R,--local_register", o.local_register,
                 "1: host buffers from coralMemAlloc, registered with the communicator (zero-copy path)");
  app.add_flag("--inject-error", o.inject_error, "test hook: corrupt one result element on rank 0")->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& err) {
    // CLI11 prints the message; its codes (104-114) are not the 2 that every bad option gives.
    std::exit(app.exit(err) == 0 ? 0 : 2);
  }
  o.min_bytes = parse_size("-b", b);
  o.max_bytes = parse_size("-e", e);
  o.step_bytes = parse_size("-i", i);
  o.ops = parse_ops(op);
  o.types = parse_types(dt);
  if (o.min_bytes > o.max_bytes) bad("-b " + b + " is larger than -e " + e);
  if (o.factor < 1) bad("-f must be at least 1");
  if (o.factor <= 1 && o.step_bytes == 0 && o.min_bytes != o.max_bytes) bad("-i must be positive");
  if (o.iters < 1) bad("-n must be at least 1");
  if (o.warmup < 0) bad("-w must not be negative");
  if (o.check != 0 && o.check != 1) bad("-c must be 0 or 1");
  if (o.average < 0 || o.average > 3) bad("-a must be 0, 1, 2 or 3");
  if (o.timeout_s < 0) bad("-T must not be negative");
  if (o.timeout_s > 1e9) bad("-T is at most 1e9 seconds (31 years, as CORAL_TIMEOUT)");
  if (o.root < 0) bad("-r must not be negative");
  if (o.local_register != 0 && o.local_register != 1)
    bad("-R must be 0 or 1 (nccl-tests' 2, symmetric registration, has no counterpart here)");
  const std::pair<const char*, exact::Coll> colls[] = {{"allreduce", exact::Coll::AllReduce},
                                                       {"reducescatter", exact::Coll::ReduceScatter},
                                                       {"allgather", exact::Coll::AllGather},
                                                       {"broadcast", exact::Coll::Broadcast},
                                                       {"reduce", exact::Coll::Reduce},
                                                       {"alltoall", exact::Coll::AllToAll},
                                                       {"alltoallv", exact::Coll::AllToAllv},
                                                       {"gather", exact::Coll::Gather},
                                                       {"scatter", exact::Coll::Scatter},
                                                       {"allgatherv", exact::Coll::AllGatherv},
                                                       {"reducescatterv", exact::Coll::ReduceScatterv}};
  // nccl-tests' binaries spell them all_reduce_perf, alltoall_perf, reduce_scatter_perf...
  std::string key = coll;
  if (key.size() > 5 && key.compare(key.size() - 5, 5, "_perf") == 0) key.resize(key.size() - 5);
  std::erase(key, '_');
  bool found = false;
  for (auto& [name, c] : colls)
    if (key == name) {
      o.coll = c;
      o.coll_name = name;
      found = true;
    }
  if (!found)
    bad("-t '" + coll +
        "' is not a collective (allreduce reducescatter allgather broadcast reduce alltoall alltoallv gather scatter "
        "allgatherv reducescatterv)");
  if (!reduces(o.coll)) o.ops = {coralSum};
  for (coralRedOp_t op : o.ops)
    for (coralDataType_t t : o.types)
      if ((op == coralBand || op == coralBor || op == coralBxor) && t > coralUint64)
        bad(std::string("-o ") + op_name(op) +
            " takes integer types only (int8 uint8 int32 uint32 int64 uint64), not -d " + type_name(t));
  if (skew == "inf" || skew == "infinity") {
    o.skew = INFINITY;
  } else {
    char* end = nullptr;
    o.skew = std::strtod(skew.c_str(), &end);
    if (end == skew.c_str() || *end || !(o.skew >= 1))
      bad("--skew '" + skew + "' is not a ratio of at least 1 (or inf)");
  }
  return o;
}

}  // namespace bench
