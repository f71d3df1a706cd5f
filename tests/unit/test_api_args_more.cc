// Bad arguments of the calls added for the framework layers (all-to-all, gather, scatter,
// v-collectives, groups, point-to-point, split, shrink, PreMulSum): coralInvalidArgument (or
// coralInvalidUsage) with a message naming the argument.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include <coral/coral.h>

#include "common/one_rank.h"

namespace {

void expect(coralResult_t want, coralResult_t rc, coralComm_t comm, const char* needle) {
  CHECK(rc == want);
  std::string msg = coralGetLastError(comm);
  INFO(msg);
  CHECK(msg.find(needle) != std::string::npos);
}
void expect_invalid(coralResult_t rc, coralComm_t comm, const char* needle) {
  expect(coralInvalidArgument, rc, comm, needle);
}

}  // namespace

TEST_CASE("NCCL's numbering of the new types and constants") {
  CHECK(coralFloat8e4m3 == 10);
  CHECK(coralFloat8e5m2 == 11);
  CHECK(coralNumTypes == 12);
  CHECK(coralNumOps == 5);
  CHECK(coralBand == 0x40000000);
  CHECK(coralScalarDevice == 0);
  CHECK(coralScalarHostImmediate == 1);
  CHECK(CORAL_SPLIT_NOCOLOR == -1);
}

TEST_CASE("bad arguments of the new collectives") {
  coralComm_t comm = one_rank_comm();
  float x[8] = {1, 2, 3, 4}, y[8];
  size_t one[1] = {4}, zero[1] = {0}, big[1] = {SIZE_MAX / 2};
  coralRequest_t req = nullptr;
  expect_invalid(coralAllToAll(nullptr, y, 4, coralFloat32, comm, nullptr), comm, "sendbuff");
  expect_invalid(coralAllToAll(x, y, 4, static_cast<coralDataType_t>(12), comm, nullptr), comm, "datatype");
  expect_invalid(coralAllToAll(x, y, SIZE_MAX / 2, coralFloat32, comm, nullptr), comm, "overflow");
  expect_invalid(coralIAllToAll(x, y, 4, coralFloat32, comm, nullptr), comm, "request");
  expect_invalid(coralAllToAllv(x, nullptr, zero, y, one, zero, coralFloat32, comm, nullptr), comm, "sendcounts");
  expect_invalid(coralAllToAllv(x, one, nullptr, y, one, zero, coralFloat32, comm, nullptr), comm, "sdispls");
  expect_invalid(coralAllToAllv(x, one, zero, y, one, big, coralFloat32, comm, nullptr), comm, "rdispls");
  expect_invalid(coralAllToAllv(x, one, zero, nullptr, one, zero, coralFloat32, comm, nullptr), comm, "recvbuff");
  size_t three[1] = {3};
  expect_invalid(coralAllToAllv(x, one, zero, y, three, zero, coralFloat32, comm, nullptr), comm, "sendcounts[0] = 4");
  expect_invalid(coralGather(x, y, 4, coralFloat32, 1, comm, nullptr), comm, "root 1");
  expect_invalid(coralGather(x, nullptr, 4, coralFloat32, 0, comm, nullptr), comm, "recvbuff");
  expect_invalid(coralIScatter(nullptr, y, 4, coralFloat32, 0, comm, &req), comm, "sendbuff");
  expect_invalid(coralScatter(x, y, 4, coralFloat32, -1, comm, nullptr), comm, "root -1");
  expect_invalid(coralAllGatherv(x, 3, y, one, zero, coralFloat32, comm, nullptr), comm, "sendcount 3");
  expect_invalid(coralAllGatherv(x, 4, y, nullptr, zero, coralFloat32, comm, nullptr), comm, "recvcounts");
  expect_invalid(coralAllGatherv(x, 4, y, one, nullptr, coralFloat32, comm, nullptr), comm, "displs");
  expect_invalid(coralReduceScatterv(x, y, nullptr, coralFloat32, coralSum, comm, nullptr), comm, "recvcounts");
  expect_invalid(coralReduceScatterv(x, y, one, coralFloat32, coralBand, comm, nullptr), comm, "bitwise");
  expect_invalid(coralIReduceScatterv(x, nullptr, one, coralFloat32, coralSum, comm, &req), comm, "recvbuff");
  CHECK(req == nullptr);
  // The good forms work on one rank.
  CHECK(coralAllToAll(x, y, 4, coralFloat32, comm, nullptr) == coralSuccess);
  CHECK(y[3] == 4);
  CHECK(coralAllToAllv(x, one, zero, y, one, zero, coralFloat32, comm, nullptr) == coralSuccess);
  CHECK(coralAllGatherv(x, 4, y, one, zero, coralFloat32, comm, nullptr) == coralSuccess);
  CHECK(coralReduceScatterv(x, y, one, coralFloat32, coralSum, comm, nullptr) == coralSuccess);
  CHECK(coralIGather(x, y, 4, coralFloat32, 0, comm, &req) == coralSuccess);
  CHECK(coralWait(req) == coralSuccess);
  coralCommDestroy(comm);
}

TEST_CASE("bad arguments of point-to-point, groups, split, shrink and PreMulSum") {
  coralComm_t comm = one_rank_comm();
  float x[4] = {1, 2, 3, 4};
  coralRequest_t req = nullptr;
  expect_invalid(coralISend(x, 4, coralFloat32, 1, comm, &req), comm, "peer 1");
  expect_invalid(coralIRecv(nullptr, 4, coralFloat32, 0, comm, &req), comm, "recvbuff");
  expect_invalid(coralISend(x, 4, coralFloat32, 0, nullptr, &req), nullptr, "comm is NULL");
  CHECK(coralGroupStart() == coralSuccess);
  expect(coralInvalidUsage, coralIAllToAll(x, x, 1, coralFloat32, comm, &req), comm, "group");
  CHECK(coralGroupEnd() == coralInvalidUsage);  // the refused member fails the group
  expect(coralInvalidUsage, coralGroupEnd(), nullptr, "without a matching");
  coralComm_t child = nullptr;
  expect_invalid(coralCommSplit(comm, 0, 0, nullptr), comm, "newcomm");
  expect_invalid(coralCommSplit(nullptr, 0, 0, &child), nullptr, "comm is NULL");
  int self = 0, other = 3;
  expect_invalid(coralCommShrink(comm, &self, 1, &child), comm, "this rank");
  expect_invalid(coralCommShrink(comm, &other, 1, &child), comm, "excludeRanks holds 3");
  expect_invalid(coralCommShrink(comm, nullptr, 1, &child), comm, "excludeRanks is NULL");
  expect_invalid(coralCommShrink(comm, &self, -1, &child), comm, "excludeCount");
  coralRedOp_t op;
  float s = 2;
  expect_invalid(coralRedOpCreatePreMulSum(&op, nullptr, coralFloat32, coralScalarHostImmediate, comm), comm, "scalar");
  expect_invalid(coralRedOpCreatePreMulSum(&op, &s, static_cast<coralDataType_t>(99), coralScalarHostImmediate, comm),
                 comm, "datatype");
  expect_invalid(coralRedOpDestroy(coralSum, comm), comm, "built-in");
  expect_invalid(coralRedOpDestroy(static_cast<coralRedOp_t>(coralNumOps + 3), comm), comm, "not created");
  coralCommDestroy(comm);
}

TEST_CASE("buffers that overlap outside the in-place layout are refused; the in-place ones run") {
  coralComm_t comm = one_rank_comm();
  float x[16] = {1, 2, 3, 4, 5, 6, 7, 8};
  const char* overlap = "overlap, and not in the call's in-place layout";
  expect_invalid(coralAllReduce(x, x + 1, 4, coralFloat32, coralSum, comm, nullptr), comm, overlap);
  expect_invalid(coralBroadcast(x + 3, x, 4, coralFloat32, 0, comm, nullptr), comm, overlap);
  expect_invalid(coralReduce(x, x + 2, 4, coralFloat32, coralSum, 0, comm, nullptr), comm, overlap);
  expect_invalid(coralReduceScatter(x, x + 1, 4, coralFloat32, coralSum, comm, nullptr), comm, overlap);
  expect_invalid(coralAllGather(x + 1, x, 4, coralFloat32, comm, nullptr), comm, overlap);
  expect_invalid(coralAllToAll(x, x + 2, 4, coralFloat32, comm, nullptr), comm, overlap);
  expect_invalid(coralGather(x, x + 1, 4, coralFloat32, 0, comm, nullptr), comm, overlap);
  expect_invalid(coralScatter(x + 1, x, 4, coralFloat32, 0, comm, nullptr), comm, overlap);
  const size_t counts[1] = {4}, displs[1] = {0};
  expect_invalid(coralAllGatherv(x + 1, 4, x, counts, displs, coralFloat32, comm, nullptr), comm, overlap);
  expect_invalid(coralReduceScatterv(x, x + 1, counts, coralFloat32, coralSum, comm, nullptr), comm, overlap);
  expect_invalid(coralAllToAllv(x, counts, displs, x + 1, counts, displs, coralFloat32, comm, nullptr), comm, overlap);
  // Apart, touching end to end, or exactly in place: all run.
  CHECK(coralAllReduce(x, x + 4, 4, coralFloat32, coralSum, comm, nullptr) == coralSuccess);
  CHECK(coralAllReduce(x, x, 4, coralFloat32, coralSum, comm, nullptr) == coralSuccess);
  CHECK(coralAllGather(x, x, 4, coralFloat32, comm, nullptr) == coralSuccess);
  CHECK(coralReduceScatter(x, x, 4, coralFloat32, coralSum, comm, nullptr) == coralSuccess);
  CHECK(x[5] == 2);
  coralCommDestroy(comm);
}
