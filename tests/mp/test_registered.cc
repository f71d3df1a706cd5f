// Registered buffers (coralMemAlloc + coralCommRegister) between processes: results equal the
// unregistered path's, deregistering waits for operations in flight, and coralMemFree refuses
// what it must.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <coral/coral.h>

#include "common/forked.h"

namespace {

#define CALL(x)                                                                                 \
  do {                                                                                          \
    if (coralResult_t rc_ = (x); rc_ != coralSuccess)                                           \
      return std::string(#x) + " gave " + std::to_string(rc_) + ": " + coralGetLastError(comm); \
  } while (0)

int64_t input(int rank, size_t i) { return static_cast<int64_t>(rank + 1) * static_cast<int64_t>(i % 7 + 1) - 3; }

// All-reduces count int64s out of (and into) buf, checking every element.
std::string allreduce_check(coralComm_t comm, int rank, int p, int64_t* send, int64_t* recv, size_t count) {
  for (size_t i = 0; i < count; ++i) send[i] = input(rank, i);
  CALL(coralAllReduce(send, recv, count, coralInt64, coralSum, comm, nullptr));
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int q = 0; q < p; ++q) want += input(q, i);
    if (recv[i] != want) return "element " + std::to_string(i) + " is " + std::to_string(recv[i]);
  }
  return "";
}

std::string registered_run(int rank, coralComm_t comm) {
  int p;
  coralCommCount(comm, &p);
  const size_t count = (size_t{8} << 20) / 8 + 5, bytes = count * 8;
  void *s = nullptr, *r = nullptr, *hs = nullptr, *hr = nullptr;
  CALL(coralMemAlloc(&s, bytes));
  CALL(coralMemAlloc(&r, bytes));
  CALL(coralCommRegister(comm, s, bytes, &hs));
  CALL(coralCommRegister(comm, r, bytes, &hr));
  auto* sp = static_cast<int64_t*>(s);
  auto* rp = static_cast<int64_t*>(r);
  for (int round = 0; round < 3; ++round) {
    if (std::string e = allreduce_check(comm, rank, p, sp, rp, count); !e.empty()) return "registered: " + e;
    if (std::string e = allreduce_check(comm, rank, p, rp, rp, count); !e.empty()) return "in place: " + e;
  }
  std::vector<int64_t> a(count), b(count);  // unregistered, for the same results
  if (std::string e = allreduce_check(comm, rank, p, a.data(), b.data(), count); !e.empty()) return "plain: " + e;
  // Freeing registered memory is refused; deregistering while a non-blocking call may still have
  // peers reading the buffer waits for it, and its result stays right.
  if (coralMemFree(s) != coralInvalidUsage) return "freeing registered memory was not refused";
  for (size_t i = 0; i < count; ++i) sp[i] = input(rank, i);
  coralRequest_t q;
  CALL(coralIAllReduce(sp, rp, count, coralInt64, coralSum, comm, &q));
  CALL(coralCommDeregister(comm, hs));
  CALL(coralWait(q));
  for (size_t i = 0; i < count; i += 4097) {
    int64_t want = 0;
    for (int k = 0; k < p; ++k) want += input(k, i);
    if (rp[i] != want) return "after deregistering mid-call: element " + std::to_string(i) + " wrong";
  }
  if (coralCommDeregister(comm, hs) != coralInvalidArgument) return "a second deregister was accepted";
  CALL(coralCommDeregister(comm, hr));
  CALL(coralMemFree(s));
  CALL(coralMemFree(r));
  return "";
}

}  // namespace

TEST_CASE("registered buffers give the unregistered path's results, P = 2 and 4") {
  for (int p : {2, 4}) {
    INFO("P=" << p);
    for (const std::string& report : run_forked(p, registered_run)) CHECK(report == "");
  }
}

TEST_CASE("coralMemFree refuses memory it did not allocate") {
  int x = 0;
  void* m = std::malloc(64);
  CHECK(coralMemFree(&x) == coralInvalidArgument);
  CHECK(std::string(coralGetLastError(nullptr)).find("coralMemAlloc") != std::string::npos);
  CHECK(coralMemFree(m) == coralInvalidArgument);
  void* p = nullptr;
  REQUIRE(coralMemAlloc(&p, 100) == coralSuccess);
  CHECK(coralMemFree(static_cast<char*>(p) + 8) == coralInvalidArgument);  // not its start
  CHECK(coralMemFree(p) == coralSuccess);
  CHECK(coralMemFree(p) == coralInvalidArgument);  // twice
  CHECK(coralMemAlloc(nullptr, 8) == coralInvalidArgument);
  CHECK(coralMemAlloc(&p, 0) == coralInvalidArgument);
  std::free(m);
}
