// Run under coral-run: every collective through the public C API (the newer ones in blocking,
// non-blocking and grouped forms, PreMulSum through real ops), exact checks, then p2p and
// barrier. Exits non-zero with the first failure.
#include <coral/coral.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/checks.h"

// Before joining, rank 0 throws junk and a wrong secret at the job's store: both must be refused
// without disturbing the job.
static void poke_store() {
  const char* root = std::getenv("CORAL_ROOT");
  const char* rank = std::getenv("CORAL_RANK");
  if (!root || !rank || std::string(rank) != "0") return;
  std::string s(root);
  size_t colon = s.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(s.substr(colon + 1))));
  inet_pton(AF_INET, s.substr(0, colon).c_str(), &sa.sin_addr);
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      unsigned char junk[64];
      for (size_t i = 0; i < sizeof junk; ++i) junk[i] = static_cast<unsigned char>(i * 37 + attempt);
      if (attempt == 1) {  // a well-formed hello with a wrong secret
        uint32_t hdr[4] = {0x314c5243u, 1u, 0u, 32u};
        std::memcpy(junk, hdr, sizeof hdr);
      }
      (void)!write(fd, junk, attempt == 1 ? 48 : sizeof junk);
      char c;
      (void)!read(fd, &c, 1);  // the store answers "denied" or closes
    }
    close(fd);
  }
}

namespace {

checks::Runner run_classic(coralComm_t comm) {
  return [comm](checks::Coll c, const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op, int root) {
    switch (c) {
      case checks::Coll::AllReduce:
        return coralAllReduce(s, r, n, t, op, comm, nullptr);
      case checks::Coll::ReduceScatter:
        return coralReduceScatter(s, r, n, t, op, comm, nullptr);
      case checks::Coll::AllGather:
        return coralAllGather(s, r, n, t, comm, nullptr);
      case checks::Coll::Broadcast:
        return coralBroadcast(s, r, n, t, root, comm, nullptr);
      case checks::Coll::Reduce:
        return coralReduce(s, r, n, t, op, root, comm, nullptr);
      default:
        return coralInternalError;
    }
  };
}

enum class Mode { Blocking, NonBlocking, Grouped };
const char* mode_name(Mode m) {
  return m == Mode::Blocking      ? "the blocking call"
         : m == Mode::NonBlocking ? "the coralI* call and coralWait"
                                  : "a group of one";
}

// One call of the C API as l describes it, in the given form. kPremul becomes a PreMulSum op with
// this rank's scalar, created for the call and destroyed after it.
coralResult_t run_call(coralComm_t comm, Mode mode, const exact::Layout& l, const void* s, void* r, coralDataType_t t,
                       coralRedOp_t op) {
  using checks::Coll;
  alignas(8) unsigned char scalar[8];
  if (op == exact::kPremul) {
    exact::premul_scalar(l.rank, t).store(scalar);
    if (coralResult_t rc = coralRedOpCreatePreMulSum(&op, scalar, t, coralScalarHostImmediate, comm)) return rc;
  }
  const size_t n = l.n;
  const size_t *sc = l.sendcounts.data(), *sd = l.sdispls.data(), *rc = l.recvcounts.data(), *rd = l.rdispls.data();
  const size_t mine = l.is_v() ? l.recvcounts[l.rank] : 0;
  coralResult_t res = coralInternalError;
  if (mode == Mode::NonBlocking) {
    coralRequest_t q = nullptr;
    switch (l.coll) {
      case Coll::AllReduce:
        res = coralIAllReduce(s, r, n, t, op, comm, &q);
        break;
      case Coll::ReduceScatter:
        res = coralIReduceScatter(s, r, n, t, op, comm, &q);
        break;
      case Coll::AllGather:
        res = coralIAllGather(s, r, n, t, comm, &q);
        break;
      case Coll::Broadcast:
        res = coralIBroadcast(s, r, n, t, l.root, comm, &q);
        break;
      case Coll::Reduce:
        res = coralIReduce(s, r, n, t, op, l.root, comm, &q);
        break;
      case Coll::AllToAll:
        res = coralIAllToAll(s, r, n, t, comm, &q);
        break;
      case Coll::AllToAllv:
        res = coralIAllToAllv(s, sc, sd, r, rc, rd, t, comm, &q);
        break;
      case Coll::Gather:
        res = coralIGather(s, r, n, t, l.root, comm, &q);
        break;
      case Coll::Scatter:
        res = coralIScatter(s, r, n, t, l.root, comm, &q);
        break;
      case Coll::AllGatherv:
        res = coralIAllGatherv(s, mine, r, rc, rd, t, comm, &q);
        break;
      case Coll::ReduceScatterv:
        res = coralIReduceScatterv(s, r, rc, t, op, comm, &q);
        break;
    }
    if (res == coralSuccess) res = coralWait(q);
  } else {
    if (mode == Mode::Grouped && (res = coralGroupStart()) != coralSuccess) return res;
    switch (l.coll) {
      case Coll::AllReduce:
        res = coralAllReduce(s, r, n, t, op, comm, nullptr);
        break;
      case Coll::ReduceScatter:
        res = coralReduceScatter(s, r, n, t, op, comm, nullptr);
        break;
      case Coll::AllGather:
        res = coralAllGather(s, r, n, t, comm, nullptr);
        break;
      case Coll::Broadcast:
        res = coralBroadcast(s, r, n, t, l.root, comm, nullptr);
        break;
      case Coll::Reduce:
        res = coralReduce(s, r, n, t, op, l.root, comm, nullptr);
        break;
      case Coll::AllToAll:
        res = coralAllToAll(s, r, n, t, comm, nullptr);
        break;
      case Coll::AllToAllv:
        res = coralAllToAllv(s, sc, sd, r, rc, rd, t, comm, nullptr);
        break;
      case Coll::Gather:
        res = coralGather(s, r, n, t, l.root, comm, nullptr);
        break;
      case Coll::Scatter:
        res = coralScatter(s, r, n, t, l.root, comm, nullptr);
        break;
      case Coll::AllGatherv:
        res = coralAllGatherv(s, mine, r, rc, rd, t, comm, nullptr);
        break;
      case Coll::ReduceScatterv:
        res = coralReduceScatterv(s, r, rc, t, op, comm, nullptr);
        break;
    }
    if (mode == Mode::Grouped) {
      coralResult_t end = coralGroupEnd();
      if (res == coralSuccess) res = end;
    }
  }
  if (op >= coralNumOps && op < coralBand) {
    coralResult_t d = coralRedOpDestroy(op, comm);
    if (res == coralSuccess) res = d;
  }
  return res;
}

}  // namespace

int main() {
  poke_store();
  int rank, p;
  coralComm_t comm = checks::init_from_env(&rank, &p);
  if (!comm) return 2;
  int cases = 0;
  const checks::Slice slice = checks::slice_from_env();
  size_t index = 0;
  for (const checks::Case& c : checks::all_cases(p)) {
    if (!slice.keeps(index++)) continue;
    std::string e = checks::run_case(run_classic(comm), rank, p, c);
    if (!e.empty()) {
      std::fprintf(stderr, "FAIL %s (%s)\n", e.c_str(), coralGetLastError(comm));
      return 1;
    }
    cases++;
  }
  // The newer collectives take turns through the blocking, the non-blocking and the grouped
  // forms (every rank goes through the same list, so they agree on each case's form).
  Mode mode = Mode::Blocking;
  const checks::CallRunner run = [&](const exact::Layout& l, const void* s, void* r, coralDataType_t t,
                                     coralRedOp_t op) { return run_call(comm, mode, l, s, r, t, op); };
  for (const checks::Case& c : checks::extended_cases(p)) {
    if (!slice.keeps(index++)) continue;
    std::string e = checks::run_case(run, rank, p, c);
    if (!e.empty()) {
      std::fprintf(stderr, "FAIL %s via %s (%s)\n", e.c_str(), mode_name(mode), coralGetLastError(comm));
      return 1;
    }
    mode = static_cast<Mode>((static_cast<int>(mode) + 1) % 3);
    cases++;
  }
  // Non-blocking all-reduces overlapping with local work, completed in order.
  std::vector<std::vector<double>> bufs(4, std::vector<double>(100000));
  std::vector<coralRequest_t> reqs(4);
  for (int k = 0; k < 4; ++k) {
    for (auto& x : bufs[k]) x = rank + k;
    if (coralIAllReduce(bufs[k].data(), bufs[k].data(), bufs[k].size(), coralFloat64, coralSum, comm, &reqs[k]) !=
        coralSuccess)
      return 1;
  }
  for (int k = 3; k >= 0; --k)
    if (coralWait(reqs[k]) != coralSuccess) return 1;
  for (int k = 0; k < 4; ++k)
    if (bufs[k][99999] != p * (p - 1) / 2.0 + p * k) {
      std::fprintf(stderr, "FAIL non-blocking all-reduce %d\n", k);
      return 1;
    }
  // One size called again and again, as a training loop does: under CORAL_TUNE_TRIALS the calls
  // run a whole trial (each candidate in turn, then the agreement) and then its pick. Every
  // result must be right whichever algorithm ran it.
  std::vector<float> in(64 << 10), out(in.size());
  for (int call = 0; call < 80; ++call) {
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(rank * 100 + static_cast<int>(i % 97) + call);
    if (coralAllReduce(in.data(), out.data(), in.size(), coralFloat32, coralSum, comm, nullptr) != coralSuccess)
      return 1;
    for (size_t i = 0; i < in.size(); ++i)
      if (out[i] != static_cast<float>(100 * p * (p - 1) / 2 + p * (static_cast<int>(i % 97) + call))) {
        std::fprintf(stderr, "FAIL repeated all-reduce: call %d, element %zu is %g\n", call, i, out[i]);
        return 1;
      }
  }
  // Ring of sends: each rank sends to the next, receives from the previous (even ranks first).
  if (p > 1) {
    std::vector<int32_t> out(1001, rank), in(1001, -1);
    int next = (rank + 1) % p, prev = (rank + p - 1) % p;
    coralResult_t a, b;
    if (rank % 2 == 0) {
      a = coralSend(out.data(), out.size(), coralInt32, next, comm, nullptr);
      b = coralRecv(in.data(), in.size(), coralInt32, prev, comm, nullptr);
    } else {
      b = coralRecv(in.data(), in.size(), coralInt32, prev, comm, nullptr);
      a = coralSend(out.data(), out.size(), coralInt32, next, comm, nullptr);
    }
    if (a || b || in[1000] != prev) {
      std::fprintf(stderr, "FAIL send/recv\n");
      return 1;
    }
  }
  if (coralBarrier(comm) != coralSuccess) return 1;
  coralCommDestroy(comm);
  if (slice.n > 1)
    std::printf("rank %d: %d collective cases passed (share %zu of %zu)\n", rank, cases, slice.k, slice.n);
  else
    std::printf("rank %d: %d collective cases passed\n", rank, cases);
  return 0;
}
