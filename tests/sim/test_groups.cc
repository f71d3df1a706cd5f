// Groups, point-to-point calls, split and PreMulSum through the public C API, ranks as threads
// of one process (each thread its own communicator, met through a unique id).
#include <coral/coral.h>
#include <fmt/format.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_ranks.h"

namespace {

// A byte of rank r's message at index i: differs between ranks, offsets and message sizes.
uint8_t pattern(int r, size_t i) { return static_cast<uint8_t>((r * 131 + i * 7 + (i >> 12)) & 0xff); }

std::string check_bytes(const std::vector<uint8_t>& got, int from, const std::string& what) {
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != pattern(from, i))
      return fmt::format("{}: byte {} is {}, expected {} (from rank {})", what, i, got[i], pattern(from, i), from);
  return "";
}

// Every rank sends right and receives left, in one group, in the given order.
std::string ring_exchange(int rank, coralComm_t comm, size_t bytes, bool recv_first) {
  int p;
  coralCommCount(comm, &p);
  const int right = (rank + 1) % p, left = (rank + p - 1) % p;
  std::vector<uint8_t> out(bytes), in(bytes, 0xEE);
  for (size_t i = 0; i < bytes; ++i) out[i] = pattern(rank, i);
  CALL(coralGroupStart());
  if (recv_first) CALL(coralRecv(in.data(), bytes, coralUint8, left, comm, nullptr));
  CALL(coralSend(out.data(), bytes, coralUint8, right, comm, nullptr));
  if (!recv_first) CALL(coralRecv(in.data(), bytes, coralUint8, left, comm, nullptr));
  CALL(coralGroupEnd());
  return check_bytes(in, left, fmt::format("rank {} ring of {} bytes", rank, bytes));
}

// A communicator of one rank whose waits give up after 1 s; null if it cannot be made.
coralComm_t lone_rank_with_1s_timeout() {
  coralUniqueId id;
  coralConfig_t cfg = CORAL_CONFIG_INITIALIZER;
  cfg.timeoutSeconds = 1;
  coralComm_t comm = nullptr;
  if (coralGetUniqueId(&id) != coralSuccess || coralCommInitRankConfig(&comm, 1, id, 0, &cfg) != coralSuccess)
    return nullptr;
  return comm;
}

}  // namespace

TEST_CASE("a ring exchange in one group works at any P and size, self at P=1") {
  for (int p = 1; p <= 8; ++p)
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4097}, size_t{1} << 20, size_t{16} << 20}) {
      if (bytes > (1u << 20) && p > 4) continue;  // memory and time: 16 MiB at P <= 4
      INFO("P=" << p << " bytes=" << bytes);
      CHECK(on_ranks(p, [&](int r, coralComm_t c) {
              std::string e = ring_exchange(r, c, bytes, false);
              return e.empty() ? ring_exchange(r, c, bytes, true) : e;
            }) == "");
    }
}

TEST_CASE("two collectives in one group give each its result") {
  for (int p : {1, 3, 4}) {
    INFO("P=" << p);
    CHECK(on_ranks(p, [&](int rank, coralComm_t comm) -> std::string {
            std::vector<int32_t> a(1000, rank + 1), sum(1000), g(static_cast<size_t>(p) * 10);
            std::vector<int32_t> mine(10, rank * 10);
            CALL(coralGroupStart());
            CALL(coralAllReduce(a.data(), sum.data(), a.size(), coralInt32, coralSum, comm, nullptr));
            CALL(coralAllGather(mine.data(), g.data(), 10, coralInt32, comm, nullptr));
            CALL(coralGroupEnd());
            for (int32_t v : sum)
              if (v != p * (p + 1) / 2) return fmt::format("rank {}: all-reduce gave {}", rank, v);
            for (int q = 0; q < p; ++q)
              if (g[q * 10] != q * 10) return fmt::format("rank {}: all-gather block {} is {}", rank, q, g[q * 10]);
            return "";
          }) == "");
  }
}

TEST_CASE("an error inside a group is returned by coralGroupEnd and named") {
  CHECK(on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
          std::vector<uint8_t> buf(16);
          if (coralGroupStart() != coralSuccess) return "start";
          coralResult_t bad = coralSend(buf.data(), buf.size(), coralUint8, 7, comm, nullptr);
          coralResult_t end = coralGroupEnd();
          if (bad != coralInvalidArgument || end != coralInvalidArgument)
            return fmt::format("rank {}: the bad send gave {} and coralGroupEnd {}", rank, static_cast<int>(bad),
                               static_cast<int>(end));
          std::string why = coralGetLastError(nullptr);
          if (why.find("peer 7") == std::string::npos) return "coralGroupEnd's error does not name peer 7: " + why;
          // The group is gone: the next one runs normally.
          return ring_exchange(rank, comm, 100, false);
        }) == "");
  CHECK(coralGroupEnd() == coralInvalidUsage);  // no group open
}

TEST_CASE("nested groups run at the outermost end") {
  CHECK(on_ranks(3, [&](int rank, coralComm_t comm) -> std::string {
          std::vector<uint8_t> out(5000), in(5000);
          for (size_t i = 0; i < out.size(); ++i) out[i] = pattern(rank, i);
          CALL(coralGroupStart());
          CALL(coralGroupStart());
          CALL(coralSend(out.data(), out.size(), coralUint8, (rank + 1) % 3, comm, nullptr));
          CALL(coralGroupEnd());
          CALL(coralRecv(in.data(), in.size(), coralUint8, (rank + 2) % 3, comm, nullptr));
          CALL(coralGroupEnd());
          return check_bytes(in, (rank + 2) % 3, "nested");
        }) == "");
}

TEST_CASE("a discarded group runs none of its calls and closes only its own level") {
  CHECK(on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
          std::vector<float> in(64, float(rank + 1)), out(64, -1.0f);
          CALL(coralGroupStart());
          CALL(coralGroupStart());
          CALL(coralAllReduce(in.data(), out.data(), in.size(), coralFloat32, coralSum, comm, nullptr));
          CALL(coralGroupDiscard());  // the inner level: the group stays open
          CALL(coralAllReduce(in.data(), out.data(), in.size(), coralFloat32, coralSum, comm, nullptr));
          CALL(coralGroupDiscard());
          if (out[0] != -1.0f) return fmt::format("rank {}: a discarded all-reduce ran (out[0] = {})", rank, out[0]);
          // Nothing of the group is left: the next call runs at once and alone.
          CALL(coralAllReduce(in.data(), out.data(), in.size(), coralFloat32, coralSum, comm, nullptr));
          if (out[63] != 3.0f) return fmt::format("rank {}: out[63] = {} after the group, want 3", rank, out[63]);
          return ring_exchange(rank, comm, 100, true);
        }) == "");
  CHECK(coralGroupDiscard() == coralInvalidUsage);  // no group open
}

// coralQueryEstimateUs of an all-reduce of n floats, as a number.
double estimate_us(coralComm_t comm, size_t n) {
  coralQueryArgs_t a = CORAL_QUERY_ARGS_INITIALIZER;
  a.count = n;
  char v[64];
  if (coralCommQuery(comm, coralQueryEstimateUs, &a, v, sizeof v) != coralSuccess) return -1;
  return std::stod(v);
}

TEST_CASE("coralGroupEstimate prices the group's calls and leaves it open") {
  CHECK(on_ranks(3, [&](int rank, coralComm_t comm) -> std::string {
          const size_t n = 64 << 10;
          const double small = estimate_us(comm, n), large = estimate_us(comm, 4 * n);
          if (!(small > 0 && large > small))
            return fmt::format("rank {}: estimates {} us for {} floats, {} us for 4x as many", rank, small, n, large);
          std::vector<float> in(4 * n, float(rank + 1)), out(4 * n, -1.0f);
          std::vector<uint8_t> msg(n, uint8_t(rank)), got(n), got2(n);
          const int right = (rank + 1) % 3, left = (rank + 2) % 3;
          double colls = 0, with_send = 0, with_recv = 0, two_sends = 0;
          CALL(coralGroupStart());
          CALL(coralAllReduce(in.data(), out.data(), n, coralFloat32, coralSum, comm, nullptr));
          CALL(coralAllReduce(in.data(), out.data() + n, 3 * n, coralFloat32, coralSum, comm, nullptr));
          CALL(coralGroupEstimate(&colls));
          CALL(coralSend(msg.data(), n, coralUint8, right, comm, nullptr));
          CALL(coralGroupEstimate(&with_send));
          CALL(coralRecv(got.data(), n, coralUint8, left, comm, nullptr));
          CALL(coralGroupEstimate(&with_recv));
          CALL(coralSend(msg.data(), n, coralUint8, left, comm, nullptr));
          CALL(coralRecv(got2.data(), n, coralUint8, right, comm, nullptr));
          CALL(coralGroupEstimate(&two_sends));
          CALL(coralGroupEnd());
          // Collectives run one after another; sends and receives together, costing the busier
          // direction.
          const double three_n = estimate_us(comm, 3 * n);
          if (std::abs(colls - (small + three_n)) > 0.01)
            return fmt::format("rank {}: the group's two all-reduces cost {} us, each alone {} + {} us", rank, colls,
                               small, three_n);
          if (!(with_send > colls && with_recv == with_send && two_sends > with_recv))
            return fmt::format("rank {}: collectives {} us, + a send {}, + its receive {}, + a second pair {}", rank,
                               colls, with_send, with_recv, two_sends);
          // The estimates ran nothing and the group ran whole at its end.
          if (out[0] != 6.0f || out[4 * n - 1] != 6.0f || got[0] != left || got2[n - 1] != right)
            return fmt::format("rank {}: after the group out = {}, {}; received {}, {}", rank, out[0], out[4 * n - 1],
                               got[0], got2[n - 1]);
          // A member refused at its call is what the estimate returns, as coralGroupEnd would.
          double us = -1;
          CALL(coralGroupStart());
          if (coralSend(msg.data(), n, coralUint8, 9, comm, nullptr) != coralInvalidArgument) return "send to 9";
          if (coralGroupEstimate(&us) != coralInvalidArgument || us != -1)
            return fmt::format("rank {}: a group holding a refused send was priced ({} us)", rank, us);
          if (coralGroupEstimate(nullptr) != coralInvalidArgument) return "coralGroupEstimate(NULL) was taken";
          CALL(coralGroupDiscard());
          return "";
        }) == "");
  double us = -1;
  CHECK(coralGroupEstimate(&us) == coralInvalidUsage);  // no group open
  CHECK(us == -1);
}

TEST_CASE("non-blocking sends posted before the peers' receives complete") {
  for (int p : {1, 2, 4, 5}) {
    INFO("P=" << p);
    const size_t bytes = 3 << 20;  // far more than the links hold in flight
    CHECK(on_ranks(p, [&](int rank, coralComm_t comm) -> std::string {
            std::vector<uint8_t> out(bytes);
            for (size_t i = 0; i < bytes; ++i) out[i] = pattern(rank, i);
            std::vector<std::vector<uint8_t>> in(p, std::vector<uint8_t>(bytes));
            std::vector<coralRequest_t> reqs;
            for (int q = 0; q < p; ++q) {  // every send first, self included
              coralRequest_t r;
              CALL(coralISend(out.data(), bytes, coralUint8, q, comm, &r));
              reqs.push_back(r);
            }
            for (int q = p - 1; q >= 0; --q) {
              coralRequest_t r;
              CALL(coralIRecv(in[q].data(), bytes, coralUint8, q, comm, &r));
              reqs.push_back(r);
            }
            for (coralRequest_t r : reqs) CALL(coralWait(r));
            for (int q = 0; q < p; ++q)
              if (std::string e = check_bytes(in[q], q, fmt::format("rank {} from {}", rank, q)); !e.empty()) return e;
            return "";
          }) == "");
  }
}

TEST_CASE("a blocking receive after a non-blocking send to the same peer completes") {
  CHECK(on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
          const size_t bytes = 4 << 20;
          std::vector<uint8_t> out(bytes), in(bytes);
          for (size_t i = 0; i < bytes; ++i) out[i] = pattern(rank, i);
          coralRequest_t r;
          CALL(coralISend(out.data(), bytes, coralUint8, 1 - rank, comm, &r));
          CALL(coralRecv(in.data(), bytes, coralUint8, 1 - rank, comm, nullptr));
          CALL(coralWait(r));
          return check_bytes(in, 1 - rank, "isend then recv");
        }) == "");
}

TEST_CASE("mismatched point-to-point sizes fail with both sizes named") {
  CHECK(on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
          std::vector<uint8_t> buf(4096);
          coralResult_t rc = rank == 0 ? coralSend(buf.data(), 100, coralUint8, 1, comm, nullptr)
                                       : coralRecv(buf.data(), 200, coralUint8, 0, comm, nullptr);
          if (rank == 1) {
            if (rc != coralInvalidUsage) return fmt::format("the short message gave {}", static_cast<int>(rc));
            std::string why = coralGetLastError(comm);
            if (why.find("200") == std::string::npos || why.find("100") == std::string::npos)
              return "the error does not name both sizes: " + why;
          }
          return "";
        }) == "");
}

TEST_CASE("a blocking send to oneself outside a group is refused") {
  CHECK(on_ranks(1, [&](int, coralComm_t comm) -> std::string {
          uint8_t b = 0;
          if (coralSend(&b, 1, coralUint8, 0, comm, nullptr) != coralInvalidUsage) return "accepted";
          return std::string(coralGetLastError(comm)).find("group") == std::string::npos ? "no hint" : "";
        }) == "");
}

TEST_CASE("a send to oneself without its receive times out instead of hanging") {
  coralComm_t comm = lone_rank_with_1s_timeout();
  REQUIRE(comm);
  uint8_t b = 1;
  coralRequest_t r;
  REQUIRE(coralISend(&b, 1, coralUint8, 0, comm, &r) == coralSuccess);
  CHECK(coralWait(r) == coralTimeout);
  CHECK(std::string(coralGetLastError(comm)).find("itself") != std::string::npos);
  CHECK(coralCommDestroy(comm) == coralSuccess);  // and destroying it does not hang
}

TEST_CASE("coralWaitAny returns receives in the order they complete") {
  // Rank 1 sends only once rank 0 has taken rank 2's message, so the order is forced.
  std::atomic<bool> took_2{false};
  CHECK(on_ranks(3, [&](int rank, coralComm_t comm) -> std::string {
          const size_t bytes = 256 << 10;
          std::vector<uint8_t> out(bytes);
          for (size_t i = 0; i < bytes; ++i) out[i] = pattern(rank, i);
          if (rank == 2)
            return coralSend(out.data(), bytes, coralUint8, 0, comm, nullptr) == coralSuccess ? "" : "send 2";
          if (rank == 1) {
            for (int i = 0; !took_2.load() && i < 20000; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (!took_2.load()) return "rank 0 never took rank 2's message";
            return coralSend(out.data(), bytes, coralUint8, 0, comm, nullptr) == coralSuccess ? "" : "send 1";
          }
          std::vector<uint8_t> in1(bytes), in2(bytes);
          coralRequest_t reqs[3] = {nullptr, nullptr, nullptr};  // a NULL entry is skipped
          CALL(coralIRecv(in1.data(), bytes, coralUint8, 1, comm, &reqs[0]));
          CALL(coralIRecv(in2.data(), bytes, coralUint8, 2, comm, &reqs[2]));
          int first = -2, second = -2, none = -2;
          CALL(coralWaitAny(3, reqs, &first));
          if (first != 2 || reqs[2] != nullptr)
            return fmt::format("first index {}, expected 2 and its entry NULL", first);
          if (std::string e = check_bytes(in2, 2, "from 2"); !e.empty()) return e;
          took_2 = true;
          CALL(coralWaitAny(3, reqs, &second));
          if (second != 0 || reqs[0] != nullptr) return fmt::format("second index {}, expected 0", second);
          CALL(coralWaitAny(3, reqs, &none));
          if (none != -1) return fmt::format("with every entry NULL the index is {}, not -1", none);
          return check_bytes(in1, 1, "from 1");
        }) == "");
}

TEST_CASE("coralWaitAny returns a failed request's error and frees it") {
  coralComm_t comm = lone_rank_with_1s_timeout();
  REQUIRE(comm);
  uint8_t b = 1;
  coralRequest_t r[1] = {nullptr};
  REQUIRE(coralISend(&b, 1, coralUint8, 0, comm, &r[0]) == coralSuccess);  // its receive never comes
  int index = -2;
  CHECK(coralWaitAny(1, r, &index) == coralTimeout);
  CHECK(index == 0);
  CHECK(r[0] == nullptr);
  CHECK(std::string(coralGetLastError(comm)).find("itself") != std::string::npos);
  CHECK(coralWaitAny(1, r, nullptr) == coralInvalidArgument);
  CHECK(coralWaitAny(-1, r, &index) == coralInvalidArgument);
  CHECK(std::string(coralGetLastError(nullptr)).find("count") != std::string::npos);
  CHECK(coralCommDestroy(comm) == coralSuccess);
}

TEST_CASE("coralWaitFor returns not done within its limit, then done with the result") {
  // Rank 1 sends only once rank 0 has seen its wait run out, so the first wait cannot finish.
  std::atomic<bool> timed_out{false};
  CHECK(on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
          std::vector<uint8_t> out(4096), in(4096);
          for (size_t i = 0; i < out.size(); ++i) out[i] = pattern(rank, i);
          if (rank == 1) {
            for (int i = 0; !timed_out.load() && i < 20000; i++)
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (!timed_out.load()) return "rank 0 never timed out";
            return coralSend(out.data(), out.size(), coralUint8, 0, comm, nullptr) == coralSuccess ? "" : "send";
          }
          coralRequest_t r = nullptr;
          CALL(coralIRecv(in.data(), in.size(), coralUint8, 1, comm, &r));
          int done = -1;
          const auto start = std::chrono::steady_clock::now();
          CALL(coralWaitFor(r, 20000, &done));
          const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (done != 0) return fmt::format("done is {} before the peer sent", done);
          if (waited < 0.015) return fmt::format("returned after {} s, before its 20 ms", waited);
          if (coralWaitFor(r, -1, &done) != coralInvalidArgument) return "a negative limit was accepted";
          timed_out = true;
          for (done = 0; !done;) CALL(coralWaitFor(r, 1000, &done));
          return check_bytes(in, 1, "from 1");
        }) == "");
}

TEST_CASE("coralSetWaitHook runs on the blocked caller's thread, only for its blocking calls") {
  // Rank 1 comes late each time, so rank 0's wait goes to sleep. Its hook must run there, on its
  // own thread; not for a request the progress thread runs, and not once removed.
  struct Seen {
    std::thread::id self;
    std::atomic<int> calls{0}, foreign{0};
  };
  CHECK(on_ranks(2, [&](int rank, coralComm_t comm) -> std::string {
          std::vector<float> in(16, static_cast<float>(rank + 1)), out(16);
          auto sum = [&](bool queued) -> std::string {
            if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
            std::fill(out.begin(), out.end(), 0.0f);
            if (queued) {
              coralRequest_t r = nullptr;
              CALL(coralIAllReduce(in.data(), out.data(), 16, coralFloat32, coralSum, comm, &r));
              CALL(coralWait(r));
            } else {
              CALL(coralAllReduce(in.data(), out.data(), 16, coralFloat32, coralSum, comm, nullptr));
            }
            return out[15] == 3.0f ? "" : fmt::format("sum is {}", out[15]);
          };
          if (rank == 1) {
            for (bool queued : {false, true, false})
              if (std::string e = sum(queued); !e.empty()) return e;
            return "";
          }
          Seen seen;
          seen.self = std::this_thread::get_id();
          CALL(coralSetWaitHook(
              [](void* a) {
                auto* s = static_cast<Seen*>(a);
                ++s->calls;
                if (std::this_thread::get_id() != s->self) ++s->foreign;
              },
              &seen));
          if (std::string e = sum(false); !e.empty()) return e;
          const int blocked = seen.calls.load();
          if (blocked == 0) return "the hook never ran while the call waited 300 ms";
          if (std::string e = sum(true); !e.empty()) return e;
          if (seen.calls.load() != blocked) return "the hook ran for a request the progress thread ran";
          CALL(coralSetWaitHook(nullptr, nullptr));
          if (std::string e = sum(false); !e.empty()) return e;
          if (seen.calls.load() != blocked) return "the hook ran after it was removed";
          return seen.foreign.load() ? "the hook ran on another thread" : "";
        }) == "");
}
