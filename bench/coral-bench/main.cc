// coral-bench: `coral-run -n P coral-bench [flags]` (or under mpirun, srun, torchrun).
#include <unistd.h>

#include <fmt/format.h>

#include <coral/coral.h>
#include <coral/coral_device.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "bench/coral-bench/report.h"

using namespace bench;

namespace {

using Clock = std::chrono::steady_clock;

coralComm_t g_comm = nullptr;
void* g_stream = nullptr;  // --device: the stream every call goes on

void check(coralResult_t rc, const char* what) {
  if (rc == coralSuccess) return;
  std::fprintf(stderr, "coral-bench: %s failed: %s: %s\n", what, coralGetErrorString(rc), coralGetLastError(g_comm));
  std::exit(3);
}

// coral_device.h's calls keep their failures' detail per thread, not on the communicator.
void check_device(coralResult_t rc, const char* what) {
  if (rc == coralSuccess) return;
  std::fprintf(stderr, "coral-bench: %s failed: %s: %s\n", what, coralGetErrorString(rc), coralGetLastError(nullptr));
  std::exit(3);
}

// The call as the communicator's tuner sees it. coralCommQuery has no v-forms: they are asked
// as their even forms (for the chunk; main() names their one algorithm itself). PreMulSum runs
// as a sum of pre-scaled inputs.
coralQueryArgs_t args_of(const Options& o, size_t n, coralDataType_t t, coralRedOp_t op) {
  const coralCollective_t colls[] = {coralCollAllReduce, coralCollReduceScatter, coralCollAllGather,
                                     coralCollBroadcast, coralCollReduce,        coralCollAllToAll,
                                     coralCollAllToAll,  coralCollGather,        coralCollScatter,
                                     coralCollAllGather, coralCollReduceScatter};
  coralQueryArgs_t a = CORAL_QUERY_ARGS_INITIALIZER;
  a.collective = colls[static_cast<int>(o.coll)];
  a.count = n;
  a.datatype = t;
  a.op = op == exact::kPremul ? coralSum : op;
  a.root = o.root;
  a.device = o.device ? 1 : 0;
  return a;
}

std::string query(coralQuery_t q, const coralQueryArgs_t& a) {
  char value[1024];
  check(coralCommQuery(g_comm, q, &a, value, sizeof value), "coralCommQuery");
  return value;
}

std::string transport_of(int peer) {
  coralQueryArgs_t a = CORAL_QUERY_ARGS_INITIALIZER;
  a.peer = peer;
  return query(coralQueryTransport, a);
}

// op is a real op here (PreMulSum's created by main()).
coralResult_t run_coll(const exact::Layout& l, const void* s, void* r, coralDataType_t t, coralRedOp_t op) {
  const size_t n = l.n;
  const size_t *sc = l.sendcounts.data(), *sd = l.sdispls.data(), *rc = l.recvcounts.data(), *rd = l.rdispls.data();
  switch (l.coll) {
    case exact::Coll::AllReduce:
      return coralAllReduce(s, r, n, t, op, g_comm, g_stream);
    case exact::Coll::ReduceScatter:
      return coralReduceScatter(s, r, n, t, op, g_comm, g_stream);
    case exact::Coll::AllGather:
      return coralAllGather(s, r, n, t, g_comm, g_stream);
    case exact::Coll::Broadcast:
      return coralBroadcast(s, r, n, t, l.root, g_comm, g_stream);
    case exact::Coll::Reduce:
      return coralReduce(s, r, n, t, op, l.root, g_comm, g_stream);
    case exact::Coll::AllToAll:
      return coralAllToAll(s, r, n, t, g_comm, g_stream);
    case exact::Coll::AllToAllv:
      return coralAllToAllv(s, sc, sd, r, rc, rd, t, g_comm, g_stream);
    case exact::Coll::Gather:
      return coralGather(s, r, n, t, l.root, g_comm, g_stream);
    case exact::Coll::Scatter:
      return coralScatter(s, r, n, t, l.root, g_comm, g_stream);
    case exact::Coll::AllGatherv:
      return coralAllGatherv(s, rc[l.rank], r, rc, rd, t, g_comm, g_stream);
    case exact::Coll::ReduceScatterv:
      return coralReduceScatterv(s, r, rc, t, op, g_comm, g_stream);
  }
  return coralInternalError;
}

// Combines one value over ranks as -a asks: rank 0's, the mean, the min or the max.
double aggregate(const Options& o, double v, int nranks) {
  double out = v;
  if (o.average == 0)
    check(coralBroadcast(&v, &out, 1, coralFloat64, 0, g_comm, nullptr), "broadcast");
  else if (o.average == 1)
    check(coralAllReduce(&v, &out, 1, coralFloat64, coralSum, g_comm, nullptr), "allreduce"), out /= nranks;
  else
    check(coralAllReduce(&v, &out, 1, coralFloat64, o.average == 2 ? coralMin : coralMax, g_comm, nullptr),
          "allreduce");
  return out;
}

// Point-to-point bandwidth from rank 0 over the slowest kind of link a collective crosses: to
// the first rank on another host when there is one (the network bounds the collective), else to
// rank 1.
Bound measure_bound(int rank, int nranks, size_t max_bytes) {
  Bound b;
  if (nranks < 2) return b;
  int peer = 1;
  if (rank == 0)
    for (int r = 1; r < nranks; ++r)
      if (transport_of(r) != "shm") {
        peer = r;
        break;
      }
  check(coralBroadcast(&peer, &peer, 1, coralInt32, 0, g_comm, nullptr), "broadcast");
  const size_t bytes = std::min<size_t>(std::max<size_t>(max_bytes, 4u << 20), 64u << 20);
  std::vector<char> buf(bytes, 1);
  char ack = 0;
  double gbps = 0;
  const int reps = 5;
  if (rank == 0) {
    check(coralSend(buf.data(), bytes, coralUint8, peer, g_comm, nullptr), "send");
    check(coralRecv(&ack, 1, coralUint8, peer, g_comm, nullptr), "recv");
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) check(coralSend(buf.data(), bytes, coralUint8, peer, g_comm, nullptr), "send");
    check(coralRecv(&ack, 1, coralUint8, peer, g_comm, nullptr), "recv");
    gbps = bytes * reps / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9;
  } else if (rank == peer) {
    check(coralRecv(buf.data(), bytes, coralUint8, 0, g_comm, nullptr), "recv");
    check(coralSend(&ack, 1, coralUint8, 0, g_comm, nullptr), "send");
    for (int i = 0; i < reps; ++i) check(coralRecv(buf.data(), bytes, coralUint8, 0, g_comm, nullptr), "recv");
    check(coralSend(&ack, 1, coralUint8, 0, g_comm, nullptr), "send");
  }
  check(coralBroadcast(&gbps, &gbps, 1, coralFloat64, 0, g_comm, nullptr), "broadcast");
  b.gbps = gbps;
  b.what = fmt::format("{} point-to-point, rank 0 -> rank {}", transport_of(peer), peer);
  return b;
}

// "shm 1,3-5; tcp 2,6-7": which transport carries this rank's traffic to each peer.
std::string links_summary(int rank, int nranks) {
  std::map<std::string, std::vector<int>> by;
  for (int r = 0; r < nranks; ++r)
    if (r != rank) by[transport_of(r)].push_back(r);
  std::string out;
  for (auto& [name, ranks] : by) {
    out += fmt::format("{}{} ", out.empty() ? "" : "; ", name);
    for (size_t i = 0; i < ranks.size();) {
      size_t j = i;
      while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
      out += j > i ? fmt::format("{}{}-{}", i ? "," : "", ranks[i], ranks[j])
                   : fmt::format("{}{}", i ? "," : "", ranks[i]);
      i = j + 1;
    }
  }
  return out.empty() ? "none" : out;
}

// device: the GPU this rank's buffers are on (-1: host memory).
std::vector<std::string> rank_lines(int rank, int nranks, int device) {
  char mine[256] = {0}, host[64] = {0};
  gethostname(host, sizeof host - 1);
  std::snprintf(mine, sizeof mine, "#  Rank %2d Group  0 Pid %6d on %10s device %2d %s, links: %s", rank,
                static_cast<int>(getpid()), host, device < 0 ? 0 : device,
                device < 0 ? "[host] CPU memory" : "[cuda] GPU memory", links_summary(rank, nranks).c_str());
  std::vector<char> all(256 * static_cast<size_t>(nranks));
  check(coralAllGather(mine, all.data(), 256, coralUint8, g_comm, nullptr), "allgather");
  std::vector<std::string> out;
  for (int r = 0; r < nranks; ++r) out.emplace_back(all.data() + 256 * r);
  return out;
}

// GPU memory that lives as long as the buffers of one dtype.
struct DeviceMem {
  void* p = nullptr;
  ~DeviceMem() { coralDeviceFree(p); }
};

// Host memory of the calls: a vector, or with -R 1 coralMemAlloc memory registered with the
// communicator, as nccl-tests' -R does with ncclMemAlloc and ncclCommRegister.
class HostBuf {
 public:
  HostBuf() = default;
  HostBuf(const HostBuf&) = delete;
  HostBuf& operator=(const HostBuf&) = delete;
  ~HostBuf() { release(); }
  void alloc(size_t bytes, bool registered) {
    release();
    if (!registered) {
      v_.assign(bytes, 0);
      p_ = v_.data();
    } else {
      void* p = nullptr;
      check(coralMemAlloc(&p, bytes), "coralMemAlloc");
      check(coralCommRegister(g_comm, p, bytes, &handle_), "coralCommRegister");
      p_ = static_cast<uint8_t*>(p);
    }
    n_ = bytes;
  }
  uint8_t* data() { return p_; }
  size_t size() const { return n_; }

 private:
  void release() {
    if (handle_) {
      check(coralCommDeregister(g_comm, handle_), "coralCommDeregister");
      check(coralMemFree(p_), "coralMemFree");
    }
    handle_ = nullptr;
    v_.clear();
    p_ = nullptr;
    n_ = 0;
  }
  std::vector<uint8_t> v_;
  uint8_t* p_ = nullptr;
  size_t n_ = 0;
  void* handle_ = nullptr;
};

struct Buffers {
  HostBuf send, recv, inplace;
  std::vector<uint8_t> input;
  DeviceMem d_send, d_recv, d_inplace;  // --device
};

void sync_stream() {
  if (g_stream) check_device(coralStreamSynchronize(g_stream), "coralStreamSynchronize");
}

bool whole_count(exact::Coll c) {
  return c == exact::Coll::AllReduce || c == exact::Coll::Broadcast || c == exact::Coll::Reduce;
}

// One rank's buffers for a size (bytes, nccl-tests' size): per-rank blocks of size / P, rounded
// down to 16 bytes as nccl-tests does (so rows of both line up), for all but all-reduce,
// broadcast and reduce; the v-forms' blocks around that, spread by --skew.
exact::Layout layout_of(const Options& o, size_t size, coralDataType_t t, int rank, int nranks) {
  const size_t es = exact::size_of(t), count = size / es;
  const size_t block = (count / static_cast<size_t>(nranks)) & ~(16 / es - 1);
  return exact::layout(o.coll, rank, nranks, o.root, whole_count(o.coll) ? count : block, o.skew);
}

// Times iters calls and checks one fresh call. Returns the timing on this rank (wrong: local).
// op is the -o value (kPremul included), call_op what the calls pass.
Timing measure(const Options& o, Buffers& b, bool in_place, const exact::Layout& l, coralDataType_t t, coralRedOp_t op,
               coralRedOp_t call_op, int nranks, size_t seed) {
  const size_t es = exact::size_of(t);
  exact::fill_send(b.input, l, t, op, seed);
  const size_t send_n = l.send_elems, recv_n = l.recv_elems;
  uint8_t *sp = b.send.data(), *rp = b.recv.data();
  // With --device the calls get GPU pointers at the same offsets; rp stays the host copy checked.
  uint8_t *dsp = static_cast<uint8_t*>(b.d_send.p), *drp = static_cast<uint8_t*>(b.d_recv.p);
  if (in_place) {
    sp = b.inplace.data() + l.send_at * es;
    rp = b.inplace.data() + l.recv_at * es;
    dsp = static_cast<uint8_t*>(b.d_inplace.p) + l.send_at * es;
    drp = static_cast<uint8_t*>(b.d_inplace.p) + l.recv_at * es;
  }
  auto load = [&] {
    if (!send_n) return;
    std::memcpy(sp, b.input.data(), send_n * es);
    if (o.device) {
      check_device(coralMemcpyAsync(dsp, sp, send_n * es, g_stream), "coralMemcpyAsync");
      sync_stream();
    }
  };
  uint8_t* call_s = o.device ? dsp : sp;
  uint8_t* call_r = o.device ? drp : rp;
  load();
  // The warm-up also covers the tuner's trials (CORAL_TUNE_TRIALS), which time candidates on the
  // first calls of a size: the timed loop sees only the pick. Every rank stops at the same call.
  // The v-forms have one algorithm each, so no trials (their even forms' would never end).
  const coralQueryArgs_t args = args_of(o, l.n, t, op);
  auto tuning = [&] { return !o.device && !l.is_v() && query(coralQueryTuning, args) == "1"; };
  for (int i = 0; i < o.warmup || tuning(); ++i) check(run_coll(l, call_s, call_r, t, call_op), o.coll_name.c_str());
  sync_stream();
  check(coralBarrier(g_comm), "barrier");
  auto t0 = Clock::now();
  for (int i = 0; i < o.iters; ++i) check(run_coll(l, call_s, call_r, t, call_op), o.coll_name.c_str());
  sync_stream();  // stream-ordered calls return at once: the time is until the stream is done
  double sec = std::chrono::duration<double>(Clock::now() - t0).count() / o.iters;
  Timing tm;
  tm.time_us = aggregate(o, sec, nranks) * 1e6;
  if (o.check) {
    load();  // in place, the timed calls consumed their input
    check(run_coll(l, call_s, call_r, t, call_op), o.coll_name.c_str());
    if (o.device) {
      if (recv_n) check_device(coralMemcpyAsync(rp, drp, recv_n * es, g_stream), "coralMemcpyAsync");
      sync_stream();
      coralResult_t async = coralSuccess;
      check(coralCommGetAsyncError(g_comm, &async), "coralCommGetAsyncError");
      check(async, o.coll_name.c_str());
    }
    const bool receives = !((l.coll == exact::Coll::Reduce || l.coll == exact::Coll::Gather) && l.rank != l.root);
    if (o.inject_error && l.rank == 0 && recv_n && receives) rp[0] ^= 0x5a;
    size_t wrong = exact::count_wrong(l, t, op, rp, seed), total = 0;
    check(coralAllReduce(&wrong, &total, 1, coralUint64, coralSum, g_comm, nullptr), "allreduce");
    tm.wrong = total;
  }
  return tm;
}

// The buffers' elements every size of o needs, separate (send, recv) and in place.
std::array<size_t, 3> extents(const Options& o, coralDataType_t t, int rank, int nranks) {
  std::array<size_t, 3> e{0, 0, 0};
  for (size_t size : o.sizes()) {
    const exact::Layout l = layout_of(o, size, t, rank, nranks);
    e = {std::max(e[0], l.send_elems), std::max(e[1], l.recv_elems), std::max(e[2], l.one_elems)};
  }
  return e;
}

}  // namespace

static int run(int argc, char** argv) {
  Options o = parse_options(argc, argv);
  // A name the library lacks fails communicator creation, naming it.
  if (o.algo != "auto") setenv("CORAL_ALGO", o.algo.c_str(), 1);
  if (o.timeout_s > 0) setenv("CORAL_TIMEOUT", std::to_string(o.timeout_s).c_str(), 1);
  if (o.device) {
    int available = 0, ngpus = 0;
    char why[512];
    check_device(coralDeviceAvailable(&available, why, sizeof why), "coralDeviceAvailable");
    if (!available) {
      std::fprintf(stderr, "coral-bench: --device: no usable GPU (%s)\n", why);
      return 2;
    }
    check_device(coralDeviceCount(&ngpus), "coralDeviceCount");
    const char* lr = std::getenv("CORAL_LOCAL_RANK");
    check_device(coralDeviceSet((lr ? std::atoi(lr) : 0) % ngpus), "coralDeviceSet");
    check_device(coralStreamCreate(&g_stream), "coralStreamCreate");
  }
  check(coralCommInitEnv(&g_comm), "coralCommInitEnv");
  int rank, nranks;
  check(coralCommUserRank(g_comm, &rank), "rank");
  check(coralCommCount(g_comm, &nranks), "count");
  if (has_root(o.coll) && o.root >= nranks) {
    if (rank == 0) std::fprintf(stderr, "coral-bench: -r %d is not a rank (there are %d)\n", o.root, nranks);
    return 2;
  }
  int gpu = -1;
  if (o.device) check_device(coralDeviceGet(&gpu), "coralDeviceGet");
  auto lines = rank_lines(rank, nranks, gpu);
  // The bound is measured over host links; device buffers travel by other means (cuda_ipc, staging).
  Bound bound = o.device ? Bound{} : measure_bound(rank, nranks, o.max_bytes);
  if (rank == 0) print_header(o, nranks, lines, bound);

  std::vector<Row> rows;
  bool output_failed = false;  // -J or --plot could not be written
  size_t seed = 0;
  for (coralDataType_t t : o.types) {
    const size_t es = exact::size_of(t);
    Buffers b;
    // One element more than any size needs: data() of an empty buffer could be NULL.
    const auto [send_n, recv_n, one_n] = extents(o, t, rank, nranks);
    const bool reg = o.local_register == 1;
    b.send.alloc((send_n + 1) * es, reg);
    b.recv.alloc((recv_n + 1) * es, reg);
    b.inplace.alloc((one_n + 1) * es, reg);
    if (o.device) {
      check_device(coralDeviceMalloc(&b.d_send.p, b.send.size()), "coralDeviceMalloc");
      check_device(coralDeviceMalloc(&b.d_recv.p, b.recv.size()), "coralDeviceMalloc");
      check_device(coralDeviceMalloc(&b.d_inplace.p, b.inplace.size()), "coralDeviceMalloc");
    }
    for (coralRedOp_t op : o.ops) {
      // PreMulSum as nccl-tests' premulsum: an op per dtype, this rank's scalar (exact::premul_scalar).
      coralRedOp_t call_op = op;
      if (op == exact::kPremul) {
        alignas(8) unsigned char scalar[8];
        exact::premul_scalar(rank, t).store(scalar);
        check(coralRedOpCreatePreMulSum(&call_op, scalar, t, coralScalarHostImmediate, g_comm),
              "coralRedOpCreatePreMulSum");
      }
      for (size_t size : o.sizes()) {
        const exact::Layout l = layout_of(o, size, t, rank, nranks);
        // Columns as nccl-tests': the buffer's bytes, and the count argument (a rank's block).
        const size_t bytes = l.total_elems() * es, count = l.n;
        Row r{bytes,
              count,
              type_name(t),
              reduces(o.coll) ? op_name(op) : "none",
              has_root(o.coll) ? o.root : -1,
              {},
              {},
              {},
              0,
              0,
              -1};
        for (bool ip : {false, true}) {
          Timing tm = measure(o, b, ip, l, t, op, call_op, nranks, seed++);
          tm.algbw = tm.time_us > 0 ? bytes / (tm.time_us * 1e-6) / 1e9 : 0;
          tm.busbw = tm.algbw * bus_factor(o.coll, nranks);
          (ip ? r.ip : r.oop) = tm;
        }
        const coralQueryArgs_t a = args_of(o, l.n, t, op);
        r.algo = o.coll == exact::Coll::AllToAllv ? "pairwise" : l.is_v() ? "ring" : query(coralQueryAlgorithm, a);
        r.chunk_bytes = std::stoull(query(coralQueryChunkBytes, a));
        if (!l.is_v()) r.model_us = std::stod(query(coralQueryEstimateUs, a));
        // Device buffers have no bound: it is measured over the host links.
        r.bound_pct = bound.gbps > 0 ? 100.0 * r.oop.busbw / bound.gbps : -1;
        rows.push_back(r);
        if (rank == 0) print_row(o, r);
      }
      if (call_op != op) check(coralRedOpDestroy(call_op, g_comm), "coralRedOpDestroy");
    }
  }
  if (rank == 0) {
    print_footer(o, rows);
    // What the trials found, in the form that fixes it for later runs without trials.
    const std::string picks = query(coralQueryTrialPicks, args_of(o, 0, coralFloat32, coralSum));
    if (!picks.empty() && !o.csv) std::printf("# Trials' picks as CORAL_ALGO: %s\n", picks.c_str());
    if (!o.json.empty()) {
      const std::string err = write_json(o, nranks, bound, rows);
      if (!err.empty()) std::fprintf(stderr, "coral-bench: -J: %s\n", err.c_str()), output_failed = true;
    }
    if (!o.plot.empty()) {
      const std::string err = write_plot(o, nranks, bound, rows);
      if (!err.empty()) std::fprintf(stderr, "coral-bench: --plot: %s\n", err.c_str()), output_failed = true;
    }
  }
  size_t wrong = total_wrong(rows);
  // A rank exiting non-zero makes the launcher stop the others: none may go before rank 0 has
  // printed its footer.
  check(coralBarrier(g_comm), "barrier");
  coralCommDestroy(g_comm);
  if (g_stream) coralStreamDestroy(g_stream);
  return wrong || output_failed ? 1 : 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    // The send, receive and in-place buffers are each as large as -e (times the ranks, for
    // gathers and all-to-all) on every rank of this host.
    std::fprintf(stderr, "coral-bench: out of memory for the buffers of the largest size (-e)\n");
    return 1;
  }
}
