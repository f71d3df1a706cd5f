// coralCommSplit and PreMulSum through the public C API, ranks as threads of one process.
#include <coral/coral.h>
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_ranks.h"

namespace {

// The sum over the communicator of (its rank + 1) * (world rank + 1), checked against members.
std::string check_sum(coralComm_t comm, int world, const std::vector<int>& members, const std::string& what) {
  int rank, n;
  coralCommUserRank(comm, &rank);
  coralCommCount(comm, &n);
  if (n != static_cast<int>(members.size())) return fmt::format("{}: {} ranks, expected {}", what, n, members.size());
  if (members[rank] != world) return fmt::format("{}: world rank {} got rank {}", what, world, rank);
  int64_t mine = static_cast<int64_t>(world + 1) * 1000 + rank, got = 0, want = 0;
  CALL(coralAllReduce(&mine, &got, 1, coralInt64, coralSum, comm, nullptr));
  for (int q = 0; q < n; ++q) want += static_cast<int64_t>(members[q] + 1) * 1000 + q;
  return got == want ? "" : fmt::format("{}: sum {}, expected {}", what, got, want);
}

}  // namespace

TEST_CASE("split by parity and by halves, with NOCOLOR ranks, nested, interleaved with the parent") {
  for (int p = 1; p <= 8; ++p) {
    INFO("P=" << p);
    CHECK(on_ranks(p, [&](int w, coralComm_t comm) -> std::string {
            const int rank = w;
            // Parity, ordered by descending key: members in reverse world order.
            coralComm_t par = nullptr, half = nullptr, quarter = nullptr;
            CALL(coralCommSplit(comm, w % 2, -w, &par));
            std::vector<int> pm;
            for (int q = p - 1; q >= 0; --q)
              if (q % 2 == w % 2) pm.push_back(q);
            if (std::string e = check_sum(par, w, pm, "parity"); !e.empty()) return e;
            // Halves, the last rank opting out when P > 2.
            const bool out = p > 2 && w == p - 1;
            CALL(coralCommSplit(comm, out ? CORAL_SPLIT_NOCOLOR : (w < p / 2 ? 0 : 1), 0, &half));
            if (out != (half == nullptr)) return fmt::format("rank {}: NOCOLOR gave comm {}", w, (void*)half);
            if (std::string e = check_sum(
                    comm, w,
                    [&] {
                      std::vector<int> all;
                      for (int q = 0; q < p; ++q) all.push_back(q);
                      return all;
                    }(),
                    "parent after splits");
                !e.empty())
              return e;
            if (half) {
              std::vector<int> hm;
              for (int q = 0; q < p; ++q)
                if (!(p > 2 && q == p - 1) && (q < p / 2) == (w < p / 2)) hm.push_back(q);
              if (std::string e = check_sum(half, w, hm, "half"); !e.empty()) return e;
              // Nested: the half split by parity of its own ranks.
              int hr;
              coralCommUserRank(half, &hr);
              CALL(coralCommSplit(half, hr % 2, hr, &quarter));
              std::vector<int> qm;
              for (size_t i = 0; i < hm.size(); ++i)
                if (static_cast<int>(i % 2) == hr % 2) qm.push_back(hm[i]);
              if (std::string e = check_sum(quarter, w, qm, "nested"); !e.empty()) return e;
              if (std::string e = check_sum(half, w, hm, "half again"); !e.empty()) return e;
              coralCommDestroy(quarter);
              coralCommDestroy(half);
            }
            if (std::string e = check_sum(par, w, pm, "parity again"); !e.empty()) return e;
            coralCommDestroy(par);
            return "";
          }) == "");
  }
}

TEST_CASE("a negative color other than NOCOLOR fails on every rank") {
  CHECK(on_ranks(3, [&](int rank, coralComm_t comm) -> std::string {
          coralComm_t child = nullptr;
          coralResult_t rc = coralCommSplit(comm, rank == 1 ? -5 : 0, 0, &child);
          if (rc != coralInvalidArgument) return fmt::format("rank {}: gave {}", rank, static_cast<int>(rc));
          if (std::string(coralGetLastError(comm)).find("-5") == std::string::npos) return "the color is not named";
          return child ? "a child was made" : "";
        }) == "");
}

TEST_CASE("PreMulSum scales every input before the sum") {
  for (int p : {1, 2, 3, 5}) {
    INFO("P=" << p);
    CHECK(on_ranks(p, [&](int rank, coralComm_t comm) -> std::string {
            float s = 0.5f * (rank + 1);  // each rank its own scalar, as NCCL allows
            coralRedOp_t op;
            CALL(coralRedOpCreatePreMulSum(&op, &s, coralFloat32, coralScalarHostImmediate, comm));
            s = 100;  // host-immediate: read at creation
            std::vector<float> x(1003), y(1003);
            for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(2 * (i % 17));
            CALL(coralAllReduce(x.data(), y.data(), x.size(), coralFloat32, op, comm, nullptr));
            for (size_t i = 0; i < y.size(); ++i) {
              // sum_q 0.5 (q+1) * 2 (i % 17) = (i % 17) * P (P+1) / 2, exact in fp32
              const float want = static_cast<float>((i % 17) * p * (p + 1) / 2);
              if (y[i] != want) return fmt::format("rank {}: element {} is {}, expected {}", rank, i, y[i], want);
            }
            int32_t k = 3, xi = rank + 1, yi = 0;
            coralRedOp_t iop;
            CALL(coralRedOpCreatePreMulSum(&iop, &k, coralInt32, coralScalarHostImmediate, comm));
            CALL(coralAllReduce(&xi, &yi, 1, coralInt32, iop, comm, nullptr));
            if (yi != 3 * p * (p + 1) / 2) return fmt::format("int32 PreMulSum gave {}", yi);
            if (coralAllReduce(x.data(), y.data(), 1, coralInt32, op, comm, nullptr) != coralInvalidArgument)
              return "an op used with another datatype was accepted";
            CALL(coralRedOpDestroy(op, comm));
            CALL(coralRedOpDestroy(iop, comm));
            if (coralAllReduce(x.data(), y.data(), 1, coralFloat32, op, comm, nullptr) != coralInvalidArgument)
              return "a destroyed op was accepted";
            if (coralRedOpDestroy(op, comm) != coralInvalidArgument) return "a double destroy was accepted";
            return "";
          }) == "");
  }
}

TEST_CASE("64 live PreMulSum ops per communicator; foreign ops are refused") {
  CHECK(on_ranks(1, [&](int rank, coralComm_t comm) -> std::string {
          std::vector<coralRedOp_t> ops(64);
          double s = 2;
          for (auto& op : ops) CALL(coralRedOpCreatePreMulSum(&op, &s, coralFloat64, coralScalarHostImmediate, comm));
          for (coralRedOp_t op : ops)
            if (op < coralNumOps || op >= coralBand) return fmt::format("handle {} outside the dynamic range", (int)op);
          coralComm_t other = nullptr;
          CALL(coralCommSplit(comm, 0, 0, &other));
          double x = 1, y = 0;
          if (coralAllReduce(&x, &y, 1, coralFloat64, ops[0], other, nullptr) != coralInvalidArgument)
            return "another communicator's op was accepted";
          coralCommDestroy(other);
          CALL(coralAllReduce(&x, &y, 1, coralFloat64, ops[63], comm, nullptr));
          if (y != 2) return fmt::format("the 64th op gave {}", y);
          for (coralRedOp_t op : ops) CALL(coralRedOpDestroy(op, comm));
          if (coralRedOpCreatePreMulSum(nullptr, &s, coralFloat64, coralScalarHostImmediate, comm) !=
              coralInvalidArgument)
            return "a NULL op was accepted";
          if (coralRedOpCreatePreMulSum(&ops[0], &s, coralFloat64, static_cast<coralScalarResidence_t>(5), comm) !=
              coralInvalidArgument)
            return "a bad residence was accepted";
          return "";
        }) == "");
}

TEST_CASE("children of a non-blocking communicator come up in the background") {
  coralUniqueId id;
  REQUIRE(coralGetUniqueId(&id) == coralSuccess);
  const int p = 3;
  std::vector<std::string> errors(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      coralConfig_t cfg = CORAL_CONFIG_INITIALIZER;
      cfg.blocking = 0;
      coralComm_t comm = nullptr, child = nullptr;
      errors[r] = [&]() -> std::string {
        if (coralCommInitRankConfig(&comm, p, id, r, &cfg) != coralInProgress) return "init did not return InProgress";
        if (wait_up(comm) != coralSuccess) return "init failed";
        coralResult_t rc = coralCommSplit(comm, r == 2 ? CORAL_SPLIT_NOCOLOR : 0, r, &child);
        if (r == 2) return rc == coralSuccess && !child ? "" : "NOCOLOR split";
        if (rc != coralInProgress) return fmt::format("split gave {}, not coralInProgress", static_cast<int>(rc));
        if (wait_up(child) != coralSuccess) return std::string("child failed: ") + coralGetLastError(child);
        return check_sum(child, r, {0, 1}, "non-blocking child");
      }();
      if (child) coralCommDestroy(child);
      if (comm) coralCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors) CHECK(e == "");
}
