// MPI-lite (see mpi.h): each MPI call is one blocking Coral call on host memory. Counts and types
// are turned into bytes or Coral dtypes; an error ends the process with Coral's message, as
// MPI_ERRORS_ARE_FATAL would, and coral-run then stops the other ranks.
#include "mpi.h"

#include <coral/coral.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

namespace {

std::vector<coralComm_t> g_comms;  // index = MPI_Comm handle; 0 is MPI_COMM_NULL

[[noreturn]] void fatal(const char* call, const char* why) {
  std::fprintf(stderr, "MPI-lite: %s: %s\n", call, why);
  std::fflush(stderr);
  std::_Exit(1);
}

void check(const char* call, coralResult_t rc, coralComm_t comm) {
  if (rc == coralSuccess) return;
  const char* last = comm ? coralGetLastError(comm) : nullptr;
  fatal(call, last && *last ? last : coralGetErrorString(rc));
}

coralComm_t comm_of(const char* call, MPI_Comm c) {
  if (g_comms.empty()) fatal(call, "called before MPI_Init");
  if (c <= 0 || c >= static_cast<int>(g_comms.size()) || !g_comms[c]) fatal(call, "invalid communicator");
  return g_comms[c];
}

// MPI's predefined types by handle (mpi.h numbers them 1..MPI_DOUBLE): Coral's type and size.
struct TypeInfo {
  coralDataType_t coral;
  size_t size;
};
constexpr TypeInfo kTypes[] = {{coralUint8, 1},  {coralInt8, 1},    {coralInt32, 4},  {coralUint32, 4},
                               {coralInt64, 8},  {coralUint64, 8},  {coralInt64, 8},  {coralInt64, 8},
                               {coralUint64, 8}, {coralFloat32, 4}, {coralFloat64, 8}};
static_assert(std::size(kTypes) == MPI_DOUBLE, "one entry per MPI type");

const TypeInfo& type_info(const char* call, MPI_Datatype t) {
  if (t < MPI_BYTE || t > MPI_DOUBLE) fatal(call, "unsupported datatype");
  return kTypes[t - MPI_BYTE];
}
coralDataType_t coral_type(const char* call, MPI_Datatype t) { return type_info(call, t).coral; }
size_t type_size(const char* call, MPI_Datatype t) { return type_info(call, t).size; }

coralRedOp_t coral_op(const char* call, MPI_Op op) {
  switch (op) {
    case MPI_SUM:
      return coralSum;
    case MPI_MIN:
      return coralMin;
    case MPI_MAX:
      return coralMax;
    case MPI_PROD:
      return coralProd;
    default:
      fatal(call, "unsupported op");
  }
}

int rank_of(coralComm_t c) {
  int r = 0;
  check("MPI_Comm_rank", coralCommUserRank(c, &r), c);
  return r;
}

size_t bytes(const char* call, int count, MPI_Datatype t) {
  if (count < 0) fatal(call, "negative count");
  return static_cast<size_t>(count) * type_size(call, t);
}

}  // namespace

extern "C" {

int MPI_Init(int*, char***) {
  if (!g_comms.empty()) fatal("MPI_Init", "called twice");
  coralComm_t world = nullptr;
  check("MPI_Init", coralCommInitEnv(&world), nullptr);
  g_comms = {nullptr, world};
  return MPI_SUCCESS;
}

int MPI_Initialized(int* flag) {
  *flag = g_comms.empty() ? 0 : 1;
  return MPI_SUCCESS;
}

int MPI_Finalize(void) {
  for (size_t i = g_comms.size(); i-- > 1;)
    if (g_comms[i]) check("MPI_Finalize", coralCommDestroy(g_comms[i]), nullptr);
  g_comms.clear();
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm, int errorcode) {
  std::fprintf(stderr, "MPI-lite: MPI_Abort(%d)\n", errorcode);
  std::_Exit(errorcode ? errorcode : 1);
}

int MPI_Comm_rank(MPI_Comm comm, int* rank) {
  *rank = rank_of(comm_of("MPI_Comm_rank", comm));
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int* size) {
  coralComm_t c = comm_of("MPI_Comm_size", comm);
  check("MPI_Comm_size", coralCommCount(c, size), c);
  return MPI_SUCCESS;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  coralComm_t c = comm_of("MPI_Comm_split", comm), n = nullptr;
  if (color < 0 && color != MPI_UNDEFINED) fatal("MPI_Comm_split", "negative color");
  check("MPI_Comm_split", coralCommSplit(c, color == MPI_UNDEFINED ? CORAL_SPLIT_NOCOLOR : color, key, &n), c);
  *newcomm = MPI_COMM_NULL;
  if (n) {
    g_comms.push_back(n);
    *newcomm = static_cast<MPI_Comm>(g_comms.size() - 1);
  }
  return MPI_SUCCESS;
}

int MPI_Comm_free(MPI_Comm* comm) {
  if (*comm == MPI_COMM_WORLD) fatal("MPI_Comm_free", "MPI_COMM_WORLD cannot be freed");
  coralComm_t c = comm_of("MPI_Comm_free", *comm);
  check("MPI_Comm_free", coralCommDestroy(c), nullptr);
  g_comms[*comm] = nullptr;
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm comm) {
  coralComm_t c = comm_of("MPI_Barrier", comm);
  check("MPI_Barrier", coralBarrier(c), c);
  return MPI_SUCCESS;
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  coralComm_t c = comm_of("MPI_Bcast", comm);
  size_t n = bytes("MPI_Bcast", count, datatype);
  check("MPI_Bcast", coralBroadcast(buffer, buffer, n, coralUint8, root, c, nullptr), c);
  return MPI_SUCCESS;
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  coralComm_t c = comm_of("MPI_Allreduce", comm);
  if (count < 0) fatal("MPI_Allreduce", "negative count");
  const void* src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  check("MPI_Allreduce",
        coralAllReduce(src, recvbuf, static_cast<size_t>(count), coral_type("MPI_Allreduce", datatype),
                       coral_op("MPI_Allreduce", op), c, nullptr),
        c);
  return MPI_SUCCESS;
}

// In place, this rank's block already sits in recvbuf; it is copied out first, since Coral's
// gathers take a separate send buffer.
int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  coralComm_t c = comm_of("MPI_Gather", comm);
  const int me = rank_of(c);
  size_t n = bytes("MPI_Gather", recvcount, recvtype);
  std::vector<char> own;
  const void* src = sendbuf;
  if (sendbuf == MPI_IN_PLACE) {
    if (me != root) fatal("MPI_Gather", "MPI_IN_PLACE is only for the root");
    own.assign(static_cast<char*>(recvbuf) + me * n, static_cast<char*>(recvbuf) + (me + 1) * n);
    src = own.data();
  } else if (me != root) {
    n = bytes("MPI_Gather", sendcount, sendtype);
  } else if (bytes("MPI_Gather", sendcount, sendtype) != n) {
    fatal("MPI_Gather", "send and receive sizes differ");
  }
  check("MPI_Gather", coralGather(src, recvbuf, n, coralUint8, root, c, nullptr), c);
  return MPI_SUCCESS;
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  coralComm_t c = comm_of("MPI_Allgather", comm);
  const size_t n = bytes("MPI_Allgather", recvcount, recvtype);
  std::vector<char> own;
  const void* src = sendbuf;
  if (sendbuf == MPI_IN_PLACE) {
    const int me = rank_of(c);
    own.assign(static_cast<char*>(recvbuf) + me * n, static_cast<char*>(recvbuf) + (me + 1) * n);
    src = own.data();
  } else if (bytes("MPI_Allgather", sendcount, sendtype) != n) {
    fatal("MPI_Allgather", "send and receive sizes differ");
  }
  check("MPI_Allgather", coralAllGather(src, recvbuf, n, coralUint8, c, nullptr), c);
  return MPI_SUCCESS;
}

double MPI_Wtime(void) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // extern "C"
