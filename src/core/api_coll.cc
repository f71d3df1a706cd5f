// The C API's all-to-all, gather, scatter and v-collectives: blocking (or stream-ordered) and
// non-blocking forms share one check per collective.
#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "core/api_checks.h"
#include "kernels/reduce.h"

namespace {

using coral::Call;
using coral::Communicator;
using coral::fail;
using coral::collectives::Coll;
using namespace coral::capi;

const std::byte* at(const void* p, size_t elems, coralDataType_t t) {
  return static_cast<const std::byte*>(p) + elems * coral::kernels::dtype_size(t);
}

Call alltoall(Communicator& c, const void* s, void* r, size_t n, coralDataType_t t) {
  check_type(t);
  check_bytes(n, t, c.nranks());
  check_buf(s, n, "sendbuff");
  check_buf(r, n, "recvbuff");
  Call call = coral::make_call(Coll::AllToAll, s, r, n, t, coralSum, 0);
  call.args.in_place = n && s == r;
  check_apart(s, n * c.nranks(), r, n * c.nranks(), t, call.args.in_place);
  return call;
}

// The end of the furthest block: counts[q] elements at displs[q].
size_t extent(const Communicator& c, const size_t* counts, const size_t* displs, coralDataType_t t,
              const char* counts_name, const char* displs_name) {
  check_counts(c, counts, t, counts_name);
  if (!displs) fail(coralInvalidArgument, std::string(displs_name) + " is NULL");
  const size_t limit = static_cast<size_t>(PTRDIFF_MAX) / coral::kernels::dtype_size(t);
  size_t end = 0;
  for (int q = 0; q < c.nranks(); ++q) {
    if (displs[q] > limit - counts[q])
      fail(coralInvalidArgument, fmt::format("{}[{}] + {}[{}] = {} + {} overflows the addressable size", displs_name, q,
                                             counts_name, q, displs[q], counts[q]));
    end = std::max(end, displs[q] + counts[q]);
  }
  return end;
}

Call alltoallv(Communicator& c, const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc,
               const size_t* rd, coralDataType_t t) {
  check_type(t);
  const size_t send_end = extent(c, sc, sd, t, "sendcounts", "sdispls");
  const size_t recv_end = extent(c, rc, rd, t, "recvcounts", "rdispls");
  check_buf(s, send_end, "sendbuff");
  check_buf(r, recv_end, "recvbuff");
  const int me = c.rank();
  if (sc[me] != rc[me])
    fail(coralInvalidArgument, fmt::format("sendcounts[{}] = {} but recvcounts[{}] = {}: what this rank sends itself "
                                           "is what it receives from itself",
                                           me, sc[me], me, rc[me]));
  auto v = std::make_shared<coral::collectives::VCounts>();
  const size_t p = static_cast<size_t>(c.nranks());
  v->send_counts.assign(sc, sc + p);
  v->send_displs.assign(sd, sd + p);
  v->recv_counts.assign(rc, rc + p);
  v->recv_displs.assign(rd, rd + p);
  size_t total = 0;
  for (size_t x : v->recv_counts) total += x;
  Call call = coral::make_call(Coll::AllToAllv, s, r, total, t, coralSum, 0);
  call.args.v = std::move(v);
  call.args.in_place = (send_end || recv_end) && s == r;
  check_apart(s, send_end, r, recv_end, t, call.args.in_place);
  return call;
}

Call gather(Communicator& c, const void* s, void* r, size_t n, coralDataType_t t, int root) {
  check_type(t);
  check_root(c, root, "root");
  check_bytes(n, t, c.nranks());
  check_buf(s, n, "sendbuff");
  const bool me = c.rank() == root;
  if (me) check_buf(r, n, "recvbuff");
  Call call = coral::make_call(Coll::Gather, s, r, n, t, coralSum, root);
  call.args.in_place = me && n && s == at(r, n * root, t);
  if (me) check_apart(s, n, r, n * c.nranks(), t, call.args.in_place);
  return call;
}

Call scatter(Communicator& c, const void* s, void* r, size_t n, coralDataType_t t, int root) {
  check_type(t);
  check_root(c, root, "root");
  check_bytes(n, t, c.nranks());
  const bool me = c.rank() == root;
  if (me) check_buf(s, n, "sendbuff");
  check_buf(r, n, "recvbuff");
  Call call = coral::make_call(Coll::Scatter, s, r, n, t, coralSum, root);
  call.args.in_place = me && n && r == at(s, n * root, t);
  if (me) check_apart(s, n * c.nranks(), r, n, t, call.args.in_place);
  return call;
}

Call allgatherv(Communicator& c, const void* s, size_t sendcount, void* r, const size_t* rc, const size_t* displs,
                coralDataType_t t) {
  check_type(t);
  const size_t end = extent(c, rc, displs, t, "recvcounts", "displs");
  if (sendcount != rc[c.rank()])
    fail(coralInvalidArgument, fmt::format("sendcount {} differs from recvcounts[{}] = {} (this rank's block)",
                                           sendcount, c.rank(), rc[c.rank()]));
  check_buf(s, sendcount, "sendbuff");
  check_buf(r, end, "recvbuff");
  auto v = std::make_shared<coral::collectives::VCounts>();
  const size_t p = static_cast<size_t>(c.nranks());
  v->recv_counts.assign(rc, rc + p);
  v->recv_displs.assign(displs, displs + p);
  Call call = coral::make_call(Coll::AllGatherv, s, r, sendcount, t, coralSum, 0);
  call.args.v = std::move(v);
  call.args.in_place = sendcount && s == at(r, displs[c.rank()], t);
  check_apart(s, sendcount, r, end, t, call.args.in_place);
  return call;
}

Call reducescatterv(Communicator& c, const void* s, void* r, const size_t* rc, coralDataType_t t, coralRedOp_t op) {
  check_type(t);
  const size_t total = check_counts(c, rc, t, "recvcounts");
  Call call = coral::make_call(Coll::ReduceScatterv, s, r, rc[c.rank()], t, op, 0);
  check_op(c, op, t, call.premul);
  if (call.premul.on) call.args.op = coralSum;
  check_buf(s, total, "sendbuff");
  check_buf(r, rc[c.rank()], "recvbuff");
  size_t mine = 0;
  for (int q = 0; q < c.rank(); ++q) mine += rc[q];
  auto v = std::make_shared<coral::collectives::VCounts>();
  v->recv_counts.assign(rc, rc + c.nranks());
  call.args.v = std::move(v);
  call.args.in_place = rc[c.rank()] && r == at(s, mine, t);
  check_apart(s, total, r, rc[c.rank()], t, call.args.in_place);
  return call;
}

}  // namespace

extern "C" {

coralResult_t coralAllToAll(const void* s, void* r, size_t n, coralDataType_t t, coralComm_t comm, void* stream) {
  return launch(
      "coralAllToAll", comm, [&](Communicator& c) { return alltoall(c, s, r, n, t); }, stream);
}
coralResult_t coralIAllToAll(const void* s, void* r, size_t n, coralDataType_t t, coralComm_t comm, coralRequest_t* q) {
  return launch_nb(
      "coralIAllToAll", comm, [&](Communicator& c) { return alltoall(c, s, r, n, t); }, q);
}

coralResult_t coralAllToAllv(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc,
                             const size_t* rd, coralDataType_t t, coralComm_t comm, void* stream) {
  return launch(
      "coralAllToAllv", comm, [&](Communicator& c) { return alltoallv(c, s, sc, sd, r, rc, rd, t); }, stream);
}
coralResult_t coralIAllToAllv(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc,
                              const size_t* rd, coralDataType_t t, coralComm_t comm, coralRequest_t* q) {
  return launch_nb(
      "coralIAllToAllv", comm, [&](Communicator& c) { return alltoallv(c, s, sc, sd, r, rc, rd, t); }, q);
}

coralResult_t coralGather(const void* s, void* r, size_t n, coralDataType_t t, int root, coralComm_t comm,
                          void* stream) {
  return launch(
      "coralGather", comm, [&](Communicator& c) { return gather(c, s, r, n, t, root); }, stream);
}
coralResult_t coralIGather(const void* s, void* r, size_t n, coralDataType_t t, int root, coralComm_t comm,
                           coralRequest_t* q) {
  return launch_nb(
      "coralIGather", comm, [&](Communicator& c) { return gather(c, s, r, n, t, root); }, q);
}

coralResult_t coralScatter(const void* s, void* r, size_t n, coralDataType_t t, int root, coralComm_t comm,
                           void* stream) {
  return launch(
      "coralScatter", comm, [&](Communicator& c) { return scatter(c, s, r, n, t, root); }, stream);
}
coralResult_t coralIScatter(const void* s, void* r, size_t n, coralDataType_t t, int root, coralComm_t comm,
                            coralRequest_t* q) {
  return launch_nb(
      "coralIScatter", comm, [&](Communicator& c) { return scatter(c, s, r, n, t, root); }, q);
}

coralResult_t coralAllGatherv(const void* s, size_t n, void* r, const size_t* rc, const size_t* d, coralDataType_t t,
                              coralComm_t comm, void* stream) {
  return launch(
      "coralAllGatherv", comm, [&](Communicator& c) { return allgatherv(c, s, n, r, rc, d, t); }, stream);
}
coralResult_t coralIAllGatherv(const void* s, size_t n, void* r, const size_t* rc, const size_t* d, coralDataType_t t,
                               coralComm_t comm, coralRequest_t* q) {
  return launch_nb(
      "coralIAllGatherv", comm, [&](Communicator& c) { return allgatherv(c, s, n, r, rc, d, t); }, q);
}

coralResult_t coralReduceScatterv(const void* s, void* r, const size_t* rc, coralDataType_t t, coralRedOp_t op,
                                  coralComm_t comm, void* stream) {
  return launch(
      "coralReduceScatterv", comm, [&](Communicator& c) { return reducescatterv(c, s, r, rc, t, op); }, stream);
}
coralResult_t coralIReduceScatterv(const void* s, void* r, const size_t* rc, coralDataType_t t, coralRedOp_t op,
                                   coralComm_t comm, coralRequest_t* q) {
  return launch_nb(
      "coralIReduceScatterv", comm, [&](Communicator& c) { return reducescatterv(c, s, r, rc, t, op); }, q);
}

}  // extern "C"
