// Ranks as threads in one process, bootstrapped through the in-memory store: every collective,
// dtype, op and count, in place and out of place, with exact expected values. The calls are the
// internal ones the C API makes (to_call), PreMulSum's scalar included.
#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <thread>

#include "base/error.h"
#include "bootstrap/mem_store.h"
#include "common/checks.h"
#include "core/communicator.h"

using coral::collectives::Coll;

namespace {

coral::Call to_call(checks::Coll c, const void* s, void* r, size_t n, coralDataType_t t, coralRedOp_t op, int root) {
  static const Coll map[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather,     Coll::Broadcast,
                             Coll::Reduce,    Coll::AllToAll,      Coll::AllToAllv,     Coll::Gather,
                             Coll::Scatter,   Coll::AllGatherv,    Coll::ReduceScatterv};
  return coral::make_call(map[static_cast<int>(c)], s, r, n, t, op, root);
}

// The call the C API makes of these arguments (src/core/api_coll.cc): the v-forms' counts, the
// count the communicator takes, in_place where the C API sets it, PreMulSum's scalar.
coral::Call to_call(const exact::Layout& l, const void* s, void* r, coralDataType_t t, coralRedOp_t op) {
  const size_t es = exact::size_of(t);
  auto at = [&](const void* base, size_t elems) { return static_cast<const char*>(base) + elems * es; };
  size_t n = l.n;
  auto v = std::make_shared<coral::collectives::VCounts>();
  bool in_place = false;
  switch (l.coll) {
    case checks::Coll::AllToAll:
      in_place = n && s == r;
      break;
    case checks::Coll::AllToAllv:
      v->send_counts = l.sendcounts;
      v->send_displs = l.sdispls;
      v->recv_counts = l.recvcounts;
      v->recv_displs = l.rdispls;
      n = 0;
      for (size_t x : l.recvcounts) n += x;
      in_place = (l.send_elems || l.recv_elems) && s == r;
      break;
    case checks::Coll::Gather:
      in_place = l.rank == l.root && n && s == at(r, n * l.root);
      break;
    case checks::Coll::Scatter:
      in_place = l.rank == l.root && n && r == at(s, n * l.root);
      break;
    case checks::Coll::AllGatherv:
      v->recv_counts = l.recvcounts;
      v->recv_displs = l.rdispls;
      n = l.recvcounts[l.rank];
      in_place = n && s == at(r, l.rdispls[l.rank]);
      break;
    case checks::Coll::ReduceScatterv:
      v->recv_counts = l.recvcounts;
      n = l.recvcounts[l.rank];
      in_place = n && r == at(s, l.reduced_base());
      break;
    default:
      break;
  }
  coral::Call c = to_call(l.coll, s, r, n, t, op, l.root);
  if (l.is_v()) c.args.v = std::move(v);
  c.args.in_place = in_place;
  if (op == exact::kPremul) {
    c.premul.on = true;
    exact::premul_scalar(l.rank, t).store(c.premul.value);
    c.args.op = coralSum;
  }
  return c;
}

// Runs body(rank, comm) on p threads; returns the first error any thread reported.
std::string on_threads(int p, const std::string& prefix,
                       const std::function<std::string(int, coral::Communicator&)>& body) {
  auto store = std::make_shared<coral::bootstrap::MemStore>();
  std::vector<std::string> errors(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      try {
        coral::Communicator comm(store, prefix, r, p);
        errors[r] = body(r, comm);
      } catch (const std::exception& e) {
        errors[r] = std::string("rank ") + std::to_string(r) + ": " + e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (!e.empty()) return e;
  return "";
}

checks::CallRunner runner(coral::Communicator& comm) {
  return [&comm](const exact::Layout& l, const void* s, void* r, coralDataType_t t, coralRedOp_t op) {
    try {
      comm.run(to_call(l, s, r, t, op));
      return coralSuccess;
    } catch (const coral::Error& e) {
      return e.code();
    }
  };
}

std::string run_cases(int rank, coral::Communicator& comm, const std::vector<checks::Case>& cases) {
  const checks::CallRunner run = runner(comm);
  for (const checks::Case& c : cases) {
    std::string e = checks::run_case(run, rank, comm.nranks(), c);
    if (!e.empty()) return e;
  }
  return "";
}

// CORAL_TEST_QUICK=1 (the sanitizer pass, where ASan makes every case several times slower):
// each P runs a third of the cases, and P = 1..5 and 8 take turns over the thirds, so that each
// case still runs at two P. Otherwise every case at every P.
std::vector<checks::Case> share(std::vector<checks::Case> cases, int p) {
  const char* quick = std::getenv("CORAL_TEST_QUICK");
  if (!quick || std::string(quick) != "1") return cases;
  const checks::Slice slice{static_cast<size_t>(p == 8 ? 0 : p % 3), 3};
  std::vector<checks::Case> kept;
  for (size_t i = 0; i < cases.size(); ++i)
    if (slice.keeps(i)) kept.push_back(cases[i]);
  return kept;
}

std::string run_all(int rank, coral::Communicator& comm) {
  return run_cases(rank, comm, share(checks::all_cases(comm.nranks()), comm.nranks()));
}

std::string run_extended(int rank, coral::Communicator& comm) {
  return run_cases(rank, comm, share(checks::extended_cases(comm.nranks()), comm.nranks()));
}

}  // namespace

TEST_CASE("all collectives on thread ranks, P in {1,2,3,4,5,8}") {
  for (int p : {1, 2, 3, 4, 5, 8}) {
    INFO("P=" << p);
    // fmt, not string + to_string: GCC 12 warns falsely on that (-Wrestrict, GCC bug 105329).
    REQUIRE(on_threads(p, fmt::format("t{}", p), run_all) == "");
  }
}

TEST_CASE("all-to-all(v), gather, scatter, v-forms and PreMulSum on thread ranks, P in {1,2,3,4,5,8}") {
  for (int p : {1, 2, 3, 4, 5, 8}) {
    INFO("P=" << p);
    REQUIRE(on_threads(p, fmt::format("x{}", p), run_extended) == "");
  }
}

TEST_CASE("every all-to-all, gather and scatter algorithm is exact when forced") {
  // Auto takes Bruck and the trees only for small blocks from 8 ranks; forced, they also run at
  // odd P and for blocks of any size.
  for (const char* algo : {"pairwise", "bruck", "direct", "tree"}) {
    setenv("CORAL_ALGO", algo, 1);
    for (int p : {3, 5, 8}) {
      INFO(algo << " P=" << p);
      REQUIRE(on_threads(p, fmt::format("f{}{}", algo, p), [](int rank, coral::Communicator& comm) {
                std::vector<checks::Case> cases;
                const int last = comm.nranks() - 1;
                for (checks::Coll c : {checks::Coll::AllToAll, checks::Coll::Gather, checks::Coll::Scatter})
                  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(70001)})
                    for (bool ip : {false, true})
                      for (int root : {0, last})
                        cases.push_back({c, n == 7 ? coralFloat16 : coralInt32, coralSum, n, ip, root});
                return run_cases(rank, comm, cases);
              }) == "");
    }
  }
  unsetenv("CORAL_ALGO");
}

TEST_CASE("every all-reduce algorithm is exact when forced") {
  for (const char* algo : {"ring", "rd", "oneshot", "twoshot", "rhd", "tree"}) {
    setenv("CORAL_ALGO", algo, 1);
    for (int p : {3, 4}) {
      INFO(algo << " P=" << p);
      REQUIRE(on_threads(p, std::string("algo") + algo + std::to_string(p), [](int rank, coral::Communicator& comm) {
                checks::Runner run = [&](checks::Coll c, const void* s, void* r, size_t n, coralDataType_t t,
                                         coralRedOp_t op, int root) {
                  comm.run(to_call(c, s, r, n, t, op, root));
                  return coralSuccess;
                };
                for (size_t n : {size_t(0), size_t(5), size_t(100003)})
                  for (coralRedOp_t op : {coralSum, coralAvg, coralMax}) {
                    std::string e = checks::run_case(run, rank, comm.nranks(),
                                                     {checks::Coll::AllReduce, coralFloat32, op, n, false, 0});
                    if (!e.empty()) return e;
                  }
                return std::string();
              }) == "");
    }
  }
  unsetenv("CORAL_ALGO");
}

TEST_CASE("log-latency variants of the other collectives are exact when forced") {
  // rhd: recursive halving reduce-scatter, recursive doubling all-gather; tree: binomial
  // broadcast and reduce (other collectives fall back to their default under each).
  for (const char* algo : {"rhd", "tree"}) {
    setenv("CORAL_ALGO", algo, 1);
    for (int p : {3, 4, 5}) {
      INFO(algo << " P=" << p);
      REQUIRE(on_threads(p, std::string("log") + algo + std::to_string(p), [](int rank, coral::Communicator& comm) {
                checks::Runner run = [&](checks::Coll c, const void* s, void* r, size_t n, coralDataType_t t,
                                         coralRedOp_t op, int root) {
                  comm.run(to_call(c, s, r, n, t, op, root));
                  return coralSuccess;
                };
                for (checks::Coll c : {checks::Coll::ReduceScatter, checks::Coll::AllGather, checks::Coll::Broadcast,
                                       checks::Coll::Reduce})
                  for (size_t n : {size_t(0), size_t(5), size_t(100003)})
                    for (bool in_place : {false, true})
                      for (int root : {0, comm.nranks() - 1}) {
                        coralRedOp_t op = n == 5 ? coralAvg : coralSum;
                        std::string e =
                            checks::run_case(run, rank, comm.nranks(), {c, coralFloat32, op, n, in_place, root});
                        if (!e.empty()) return e;
                      }
                return std::string();
              }) == "");
    }
  }
  unsetenv("CORAL_ALGO");
}

TEST_CASE("non-blocking operations complete in issue order and overlap") {
  REQUIRE(on_threads(3, "async", [](int rank, coral::Communicator& comm) -> std::string {
            const size_t n = 1 << 18;
            std::vector<std::vector<int32_t>> bufs(6, std::vector<int32_t>(n));
            std::vector<std::shared_ptr<coral::Request>> reqs;
            for (int k = 0; k < 6; ++k) {
              for (size_t i = 0; i < n; ++i) bufs[k][i] = (rank + 1) * (k + 1) + static_cast<int32_t>(i % 3);
              coral::Call c;
              c.args.coll = Coll::AllReduce;
              c.args.count = n;
              c.args.dtype = coralInt32;
              c.args.op = coralSum;
              c.send = c.recv = bufs[k].data();
              reqs.push_back(comm.submit(c));
            }
            // A blocking call issued meanwhile runs after the queued ones.
            int32_t one = 1, total = 0;
            coral::Call b;
            b.args.coll = Coll::AllReduce;
            b.args.count = 1;
            b.args.dtype = coralInt32;
            b.send = &one;
            b.recv = &total;
            comm.run(b);
            for (auto& r : reqs) {
              std::unique_lock<std::mutex> lock(r->mu);
              r->cv.wait(lock, [&] { return r->done; });
              if (r->result != coralSuccess) return r->error;
            }
            if (total != 3) return "blocking call gave " + std::to_string(total);
            for (int k = 0; k < 6; ++k)
              for (size_t i = 0; i < n; ++i)
                if (bufs[k][i] != 6 * (k + 1) + 3 * static_cast<int32_t>(i % 3)) return "async result wrong";
            return "";
          }) == "");
}

TEST_CASE("send/recv and barrier on threads") {
  REQUIRE(on_threads(4, "p2p", [](int rank, coral::Communicator& comm) -> std::string {
            const size_t n = 300001;
            std::vector<int64_t> buf(n);
            coral::Call c;
            c.args.count = n;
            c.args.dtype = coralInt64;
            if (rank % 2 == 0) {
              for (size_t i = 0; i < n; ++i) buf[i] = rank * 1000003 + static_cast<int64_t>(i);
              c.args.coll = Coll::Send;
              c.args.root = rank + 1;
              c.send = buf.data();
            } else {
              c.args.coll = Coll::Recv;
              c.args.root = rank - 1;
              c.recv = buf.data();
            }
            comm.run(c);
            if (rank % 2 == 1)
              for (size_t i = 0; i < n; ++i)
                if (buf[i] != (rank - 1) * 1000003 + static_cast<int64_t>(i)) return "p2p data wrong";
            coral::Call bar;
            bar.args.coll = Coll::Barrier;
            bar.args.dtype = coralUint8;
            for (int k = 0; k < 50; ++k) comm.run(bar);
            return "";
          }) == "");
}

TEST_CASE("mismatched collectives fail with a clear error instead of hanging") {
  setenv("CORAL_TIMEOUT", "10", 1);
  // The all-reduce is small enough for one-shot, whose vectors travel as posts on a channel of
  // their own: the broadcast's messages on the other one must still be noticed.
  for (int p : {2, 3}) {
    std::string err =
        on_threads(p, "mismatch" + std::to_string(p), [p](int rank, coral::Communicator& comm) -> std::string {
          std::vector<float> buf(64, 1.0f);
          coral::Call c;
          c.args.coll = rank == p - 1 ? Coll::Broadcast : Coll::AllReduce;
          c.args.count = 64;
          c.args.dtype = coralFloat32;
          c.send = c.recv = buf.data();
          try {
            comm.run(c);
          } catch (const coral::Error& e) {
            return std::string(e.what()) + " code=" + std::to_string(e.code());
          }
          return "";
        });
    CHECK_THAT(err, Catch::Contains("different collectives") || Catch::Contains("aborted"));
    CHECK_THAT(err, !Catch::Contains("timed out"));
  }
  unsetenv("CORAL_TIMEOUT");
}

TEST_CASE("ranks that pass different roots all fail at once, naming both") {
  setenv("CORAL_TIMEOUT", "10", 1);
  for (Coll coll : {Coll::Broadcast, Coll::Reduce, Coll::Gather, Coll::Scatter}) {
    const int p = 4;
    std::string err = on_threads(
        p, fmt::format("roots{}", static_cast<int>(coll)), [coll](int rank, coral::Communicator& comm) -> std::string {
          std::vector<float> a(4 * 64, 1.0f), b(4 * 64, 0.0f);
          coral::Call c = coral::make_call(coll, a.data(), b.data(), 64, coralFloat32, coralSum, rank == 3 ? 1 : 0);
          try {
            comm.run(c);
            return fmt::format("rank {}: {} with mismatched roots succeeded", rank,
                               coral::collectives::coll_name(coll));
          } catch (const coral::Error& e) {
            std::string what = e.what();
            if (e.code() != coralInvalidUsage || what.find("different roots, 0 and 1") == std::string::npos)
              return fmt::format("rank {}: code {}: {}", rank, static_cast<int>(e.code()), what);
          }
          // The communicator stays usable: nothing moved.
          float one = 1, sum = 0;
          coral::Call ar = coral::make_call(Coll::AllReduce, &one, &sum, 1, coralFloat32, coralSum, 0);
          comm.run(ar);
          return sum == 4 ? "" : fmt::format("rank {}: all-reduce after the mismatch gave {}", rank, sum);
        });
    CHECK(err == "");
  }
  unsetenv("CORAL_TIMEOUT");
}

TEST_CASE("v-collectives: different recvcounts fail on every rank without a timeout") {
  setenv("CORAL_TIMEOUT", "10", 1);
  for (Coll coll : {Coll::AllGatherv, Coll::ReduceScatterv}) {
    const int p = 3;
    std::vector<std::string> errors(p);
    on_threads(p, fmt::format("vsig{}", static_cast<int>(coll)),
               [coll, &errors](int rank, coral::Communicator& comm) -> std::string {
                 auto v = std::make_shared<coral::collectives::VCounts>();
                 // Rank 2 thinks rank 0's block has 5 elements, the others 4: the sizes that
                 // travel can still agree (rank 0 sends its own 4 either way).
                 v->recv_counts = {rank == 2 ? 5u : 4u, 6, 7};
                 v->recv_displs = {0, 5, 11};
                 std::vector<float> a(64, 1.0f), b(64, 0.0f);
                 coral::Call c =
                     coral::make_call(coll, a.data(), b.data(), v->recv_counts[rank], coralFloat32, coralSum, 0);
                 c.args.v = v;
                 try {
                   comm.run(c);
                 } catch (const coral::Error& e) {
                   errors[rank] = e.what();
                 }
                 return "";
               });
    for (int r = 0; r < p; ++r) {
      INFO("rank " << r << ": " << errors[r]);
      CHECK(!errors[r].empty());
      CHECK_THAT(errors[r], !Catch::Contains("timed out"));
    }
  }
  unsetenv("CORAL_TIMEOUT");
}

TEST_CASE("every rank gets bit-identical results from inexact float inputs") {
  for (const char* algo : {"auto", "ring", "rd", "oneshot", "twoshot", "rhd", "tree"}) {
    setenv("CORAL_ALGO", algo, 1);
    for (int p : {3, 4, 5}) {
      std::vector<std::vector<float>> results(p);
      std::string err =
          on_threads(p, std::string("bits") + algo + std::to_string(p), [&](int rank, coral::Communicator& comm) {
            for (size_t n : {size_t(3), size_t(1001), size_t(300007)}) {
              std::vector<float> v(n);
              uint32_t x = 12345u + 7919u * static_cast<uint32_t>(rank);
              for (auto& f : v) {
                x = x * 1664525u + 1013904223u;
                f = static_cast<float>(x >> 8) * 1e-7f - 0.8f;  // not exactly summable
              }
              comm.run(to_call(checks::Coll::AllReduce, v.data(), v.data(), n, coralFloat32, coralSum, 0));
              results[rank].insert(results[rank].end(), v.begin(), v.end());
            }
            return std::string();
          });
      INFO(algo << " P=" << p);
      REQUIRE(err == "");
      for (int r = 1; r < p; ++r)
        REQUIRE(std::memcmp(results[r].data(), results[0].data(), results[0].size() * sizeof(float)) == 0);
    }
  }
  unsetenv("CORAL_ALGO");
}
