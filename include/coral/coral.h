/* Coral: collective communication (all-reduce and friends) for host and device buffers.
 * The API mirrors NCCL's shape and numeric values so an NCCL shim maps 1:1. */
#ifndef CORAL_CORAL_H
#define CORAL_CORAL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CORAL_API __attribute__((visibility("default")))
#else
#define CORAL_API
#endif

#define CORAL_MAJOR 0
#define CORAL_MINOR 1
#define CORAL_PATCH 0
#define CORAL_VERSION_CODE (CORAL_MAJOR * 10000 + CORAL_MINOR * 100 + CORAL_PATCH)

typedef enum {
  coralSuccess = 0,
  coralUnhandledCudaError = 1,
  coralSystemError = 2,
  coralInternalError = 3,
  coralInvalidArgument = 4,
  coralInvalidUsage = 5,
  coralRemoteError = 6,
  coralInProgress = 7,
  coralTimeout = 8,
  coralNumResults = 9
} coralResult_t;

typedef enum {
  coralInt8 = 0,
  coralChar = 0,
  coralUint8 = 1,
  coralInt32 = 2,
  coralInt = 2,
  coralUint32 = 3,
  coralInt64 = 4,
  coralUint64 = 5,
  coralFloat16 = 6,
  coralHalf = 6,
  coralFloat32 = 7,
  coralFloat = 7,
  coralFloat64 = 8,
  coralDouble = 8,
  coralBfloat16 = 9,
  /* OCP fp8 (NCCL's values): reductions accumulate each step in fp32 and round once. */
  coralFloat8e4m3 = 10,
  coralFloat8e5m2 = 11,
  coralNumTypes = 12,
  /* Keeps every int a valid value of the type (C++ callers), so bad values can be rejected. */
  coralMaxDataType = 0x7fffffff
} coralDataType_t;

typedef enum {
  coralSum = 0,
  coralProd = 1,
  coralMax = 2,
  coralMin = 3,
  coralAvg = 4,
  /* Ops from coralRedOpCreatePreMulSum are handles from coralNumOps up (as NCCL's dynamic ops). */
  coralNumOps = 5,
  /* Bitwise reductions of integer types (MPI's and PyTorch's BAND, BOR, BXOR; not in NCCL), set
   * apart from the range NCCL's dynamic ops (PreMulSum) start at. Float types: coralInvalidArgument. */
  coralBand = 0x40000000,
  coralBor = 0x40000001,
  coralBxor = 0x40000002,
  coralMaxRedOp = 0x7fffffff /* as coralMaxDataType */
} coralRedOp_t;

#define CORAL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[CORAL_UNIQUE_ID_BYTES];
} coralUniqueId;

typedef struct coralComm* coralComm_t;
/* color for ranks of coralCommSplit that join no new communicator (as NCCL_SPLIT_NOCOLOR). */
#define CORAL_SPLIT_NOCOLOR -1
/* Handle of a non-blocking host-buffer operation (see coralIAllReduce). */
typedef struct coralRequest* coralRequest_t;

CORAL_API const char* coralGetErrorString(coralResult_t result);
/* Detailed message for the last failure on comm (rank, peer, operation, OS error); "" if none.
 * With comm == NULL: the last failure of a call that had no communicator (e.g. init). */
CORAL_API const char* coralGetLastError(coralComm_t comm);
CORAL_API coralResult_t coralGetVersion(int* version);

/* Creates a rendezvous point (a store served by a thread of this process) and describes it in
 * *uniqueId together with a random per-job secret. Broadcast it to every rank out of band. */
CORAL_API coralResult_t coralGetUniqueId(coralUniqueId* uniqueId);
/* A unique id every process can make by itself from one agreed address ("host:port" or
 * "[ipv6]:port"; NCCL_COMM_ID's scheme): rank 0 of each communicator created from it listens on
 * that port while the ranks arrive, hands them a store of its own and frees the port. Several
 * communicators may come from one id, one after another, with any members and rank 0. Its
 * secret is derived from the port, so it keeps jobs apart but authenticates nothing. */
CORAL_API coralResult_t coralGetUniqueIdAt(const char* address, coralUniqueId* uniqueId);
CORAL_API coralResult_t coralCommInitRank(coralComm_t* comm, int nranks, coralUniqueId commId, int rank);
/* Options for coralCommInitRankConfig, as NCCL's ncclConfig_t: start from CORAL_CONFIG_INITIALIZER
 * (fields left CORAL_CONFIG_UNDEF_INT take their defaults). */
/* INT_MIN, spelt out: <limits.h> here would fix the feature-test macros of a C user. */
#define CORAL_CONFIG_UNDEF_INT (-2147483647 - 1)
#define CORAL_CONFIG_MAGIC 0xc0a1c0f9u
typedef struct {
  size_t size;          /* sizeof(coralConfig_t) */
  unsigned int magic;   /* CORAL_CONFIG_MAGIC */
  unsigned int version; /* CORAL_VERSION_CODE */
  /* 1 (default): returns once the communicator is up. 0: returns coralInProgress at once and
   * creation goes on in the background; coralCommGetAsyncError gives coralInProgress until it is
   * done, then coralSuccess or why it failed. Calls on the communicator meanwhile return
   * coralInProgress. */
  int blocking;
  /* > 0: seconds this communicator's waits on a peer may last (its CORAL_TIMEOUT). */
  int timeoutSeconds;
} coralConfig_t;
#define CORAL_CONFIG_INITIALIZER \
  { sizeof(coralConfig_t), CORAL_CONFIG_MAGIC, CORAL_VERSION_CODE, CORAL_CONFIG_UNDEF_INT, CORAL_CONFIG_UNDEF_INT }
/* coralCommInitRank with options; config may be NULL (the defaults). */
CORAL_API coralResult_t coralCommInitRankConfig(coralComm_t* comm, int nranks, coralUniqueId commId, int rank,
                                                const coralConfig_t* config);
/* Rank, size and rendezvous from the launcher: coral-run, Open MPI, MPICH/Hydra, Slurm, torchrun. */
CORAL_API coralResult_t coralCommInitEnv(coralComm_t* comm);
/* Collective over comm: ranks passing the same color form *newcomm, ranked by (key, rank in comm);
 * color CORAL_SPLIT_NOCOLOR gives *newcomm = NULL. Reuses comm's rendezvous (no new unique id)
 * and inherits its config. */
CORAL_API coralResult_t coralCommSplit(coralComm_t comm, int color, int key, coralComm_t* newcomm);
/* The ranks of comm but excludeRanks form *newcomm, renumbered densely in comm's order. Works on
 * a communicator that failed because the excluded ranks died, whichever ranks they were.
 * Survivors passing different lists get coralInvalidUsage naming the difference. */
CORAL_API coralResult_t coralCommShrink(coralComm_t comm, const int* excludeRanks, int excludeCount,
                                        coralComm_t* newcomm);
/* The ranks of comm this rank knows to have failed (their process exited, or their connection
 * broke), ascending: what a survivor passes to coralCommShrink after a peer's death. On input
 * *count is the room in ranks; on output the number of failed ranks (only the first of them fit
 * when it exceeds the room). Works on a communicator that failed; it asks every transport
 * afresh, so survivors that ask after their failed call agree on a dead process. */
CORAL_API coralResult_t coralCommGetFailedRanks(coralComm_t comm, int* ranks, int* count);
/* Waits for this rank's outstanding operations, then frees the communicator. */
CORAL_API coralResult_t coralCommDestroy(coralComm_t comm);
/* Marks the communicator failed (peers' pending calls return coralRemoteError) and frees it.
 * One still being created in the background (coralCommInitRankConfig with blocking = 0, or a
 * split or shrink of such a communicator) is given up: its waits for peers end at once. */
CORAL_API coralResult_t coralCommAbort(coralComm_t comm);
/* Marks the communicator failed without freeing it: this rank's pending and later operations on
 * it and its peers' pending ones end with coralRemoteError naming this rank. Safe while other
 * threads wait on its requests (as a watchdog that gives up on a stuck call does), including a
 * first call on device buffers still waiting for a peer to connect its links; afterwards
 * only coralCommShrink, coralCommGetFailedRanks, coralCommGetAsyncError, coralCommDestroy and
 * coralCommAbort are of use. A communicator still being created gives coralInProgress. */
CORAL_API coralResult_t coralCommRevoke(coralComm_t comm);
/* Seconds (> 0) that operations starting from now on may wait on a peer, as
 * coralConfig_t::timeoutSeconds at creation; operations already under way keep theirs. Later
 * splits inherit it. */
CORAL_API coralResult_t coralCommSetTimeout(coralComm_t comm, int timeoutSeconds);
CORAL_API coralResult_t coralCommCount(const coralComm_t comm, int* count);
CORAL_API coralResult_t coralCommUserRank(const coralComm_t comm, int* rank);
CORAL_API coralResult_t coralCommGetAsyncError(coralComm_t comm, coralResult_t* asyncError);

/* Collectives. Host buffers with stream == NULL: the call returns once the operation is complete.
 * Device buffers (or any non-NULL stream, a cudaStream_t): stream-ordered as in NCCL, the call
 * returns at once and the stream's later work waits for the result; failures surface through
 * coralCommGetAsyncError. A stream where CUDA is unusable gives coralUnhandledCudaError. */
CORAL_API coralResult_t coralAllReduce(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                       coralRedOp_t op, coralComm_t comm, void* stream);
CORAL_API coralResult_t coralReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           coralDataType_t datatype, coralRedOp_t op, coralComm_t comm, void* stream);
CORAL_API coralResult_t coralAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, coralDataType_t datatype,
                                       coralComm_t comm, void* stream);
CORAL_API coralResult_t coralBroadcast(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                       int root, coralComm_t comm, void* stream);
CORAL_API coralResult_t coralReduce(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                    coralRedOp_t op, int root, coralComm_t comm, void* stream);
CORAL_API coralResult_t coralSend(const void* sendbuff, size_t count, coralDataType_t datatype, int peer,
                                  coralComm_t comm, void* stream);
CORAL_API coralResult_t coralRecv(void* recvbuff, size_t count, coralDataType_t datatype, int peer, coralComm_t comm,
                                  void* stream);
CORAL_API coralResult_t coralBarrier(coralComm_t comm);
/* count elements per peer: block j of sendbuff goes to rank j, block j of recvbuff comes from it. */
CORAL_API coralResult_t coralAllToAll(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                      coralComm_t comm, void* stream);
/* Counts and displacements in elements, one per rank. */
CORAL_API coralResult_t coralAllToAllv(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                                       void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                                       coralDataType_t datatype, coralComm_t comm, void* stream);
/* root's recvbuff gets count elements from every rank, in rank order. */
CORAL_API coralResult_t coralGather(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                    int root, coralComm_t comm, void* stream);
/* Rank j gets block j (count elements) of root's sendbuff. */
CORAL_API coralResult_t coralScatter(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                     int root, coralComm_t comm, void* stream);
/* Rank j's sendcount (== recvcounts[j]) elements land at recvbuff + displs[j] on every rank. */
CORAL_API coralResult_t coralAllGatherv(const void* sendbuff, size_t sendcount, void* recvbuff,
                                        const size_t* recvcounts, const size_t* displs, coralDataType_t datatype,
                                        coralComm_t comm, void* stream);
/* sendbuff holds the blocks of every rank back to back (recvcounts[j] elements for rank j); rank j
 * gets the reduction of block j. */
CORAL_API coralResult_t coralReduceScatterv(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                            coralDataType_t datatype, coralRedOp_t op, coralComm_t comm, void* stream);

/* Grouped calls, per thread and nestable (as NCCL's): calls between the outermost start and end
 * are deferred and run together at coralGroupEnd. Send/recv pairs in a group progress together,
 * whatever their order on each rank, and may name this rank itself. coralGroupEnd returns the
 * first member's failure (coralGetLastError names it). */
CORAL_API coralResult_t coralGroupStart(void);
CORAL_API coralResult_t coralGroupEnd(void);
/* Ends the thread's innermost group level as coralGroupEnd does, except that at the outermost
 * the calls deferred so far are dropped instead of run (nothing of them has started): for a
 * tool that opened a group only to price it, as NCCL's ncclGroupSimulateEnd. */
CORAL_API coralResult_t coralGroupDiscard(void);
/* Inside a group: sets *microseconds to the cost model's time (coralQueryEstimateUs) for the
 * calls the thread's group holds so far, those of one communicator one after another and the
 * communicators side by side. The group stays open: end or discard it next. A member refused at
 * its call makes this return that failure, as coralGroupEnd would. */
CORAL_API coralResult_t coralGroupEstimate(double* microseconds);

/* PreMulSum (as NCCL's): every input is multiplied by *scalar before the sum. */
typedef enum {
  coralScalarDevice = 0,               /* scalar points to device memory, read when each call runs */
  coralScalarHostImmediate = 1,        /* scalar points to host memory, read now */
  coralMaxScalarResidence = 0x7fffffff /* as coralMaxDataType */
} coralScalarResidence_t;
CORAL_API coralResult_t coralRedOpCreatePreMulSum(coralRedOp_t* op, void* scalar, coralDataType_t datatype,
                                                  coralScalarResidence_t residence, coralComm_t comm);
CORAL_API coralResult_t coralRedOpDestroy(coralRedOp_t op, coralComm_t comm);

/* Non-blocking forms for host buffers. Operations run on the communicator's progress thread in
 * issue order (blocking calls made meanwhile queue behind them) and overlap the caller's work.
 * Buffers must stay valid and untouched until the request completes. Every request must be
 * completed with coralWait, or with coralTest returning done, which also frees it. */
CORAL_API coralResult_t coralIAllReduce(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                        coralRedOp_t op, coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                            coralDataType_t datatype, coralRedOp_t op, coralComm_t comm,
                                            coralRequest_t* request);
CORAL_API coralResult_t coralIAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                        coralDataType_t datatype, coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIBroadcast(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                        int root, coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIReduce(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                     coralRedOp_t op, int root, coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIBarrier(coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIAllToAll(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                       coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIAllToAllv(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                                        void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                                        coralDataType_t datatype, coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIGather(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                     int root, coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIScatter(const void* sendbuff, void* recvbuff, size_t count, coralDataType_t datatype,
                                      int root, coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIAllGatherv(const void* sendbuff, size_t sendcount, void* recvbuff,
                                         const size_t* recvcounts, const size_t* displs, coralDataType_t datatype,
                                         coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIReduceScatterv(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                             coralDataType_t datatype, coralRedOp_t op, coralComm_t comm,
                                             coralRequest_t* request);
/* Point-to-point sends and receives progress together, whatever their order: a rank may post
 * its send before the matching receive of its peer (as MPI_Isend/MPI_Irecv). They stay ordered
 * with the communicator's other operations. A send/receive to this rank itself is valid. */
CORAL_API coralResult_t coralISend(const void* sendbuff, size_t count, coralDataType_t datatype, int peer,
                                   coralComm_t comm, coralRequest_t* request);
CORAL_API coralResult_t coralIRecv(void* recvbuff, size_t count, coralDataType_t datatype, int peer, coralComm_t comm,
                                   coralRequest_t* request);
/* *done = 1 and the request is freed (its result returned) once complete; else *done = 0. */
CORAL_API coralResult_t coralTest(coralRequest_t request, int* done);
/* Blocks until complete, returns the operation's result and frees the request. */
CORAL_API coralResult_t coralWait(coralRequest_t request);
/* coralTest after waiting up to timeout_us microseconds for completion (0: coralTest), for
 * callers with other work to do between waits (the MPI interposer drives MPI's progress). */
CORAL_API coralResult_t coralWaitFor(coralRequest_t request, long timeout_us, int* done);
/* Blocks until one of requests[0..count) is complete (NULL entries are skipped; the requests may
 * belong to different communicators), as MPI_Waitany: sets *index to it, frees it, sets
 * requests[*index] to NULL and returns its operation's result. With no non-NULL entry it
 * returns coralSuccess at once with *index = -1. */
CORAL_API coralResult_t coralWaitAny(int count, coralRequest_t* requests, int* index);
/* A runtime sharing the process may need its own traffic moved along while this thread blocks
 * in Coral: a peer can need, say, an MPI library's progress on this rank before it reaches the
 * call this rank waits in. fn(arg) is then called on this thread between the sleep slices of a
 * blocking collective's waits (never on the fast path, before the first sleep), and not from
 * within fn itself. Requests run on Coral's progress thread and never call it. One per thread;
 * fn NULL removes it. */
typedef void (*coralWaitHook_t)(void* arg);
CORAL_API coralResult_t coralSetWaitHook(coralWaitHook_t fn, void* arg);

/* Registered buffers, the zero-copy path. coralMemAlloc gives host memory that local peers can
 * map (memfd-backed); coralMemFree frees only such memory (anything else, or memory still
 * registered, is refused). coralCommRegister registers any buffer with a communicator: memory
 * from coralMemAlloc, other host memory (read by cross-memory attach) or device memory. When a
 * step's source on one rank lies in registered coralMemAlloc memory, a peer on the same host
 * reads it where it lies, in one pass. coralCommDeregister waits for the communicator's
 * outstanding operations first, so no peer still reads the buffer. */
CORAL_API coralResult_t coralMemAlloc(void** ptr, size_t size);
CORAL_API coralResult_t coralMemFree(void* ptr);
CORAL_API coralResult_t coralCommRegister(coralComm_t comm, void* buff, size_t size, void** handle);
CORAL_API coralResult_t coralCommDeregister(coralComm_t comm, void* handle);

/* Asking a communicator what it runs, for tools (coral-bench, profilers, NCCL-style tests).
 * coralCommQuery writes the answer as text (numbers in decimal) into value, at most size bytes
 * with the terminating NUL; a value too small gives coralInvalidArgument. */
typedef enum {
  coralCollAllReduce = 0,
  coralCollReduceScatter = 1,
  coralCollAllGather = 2,
  coralCollBroadcast = 3,
  coralCollReduce = 4,
  coralCollAllToAll = 5,
  coralCollGather = 6,
  coralCollScatter = 7,
  coralNumCollectives = 8,
  coralMaxCollective = 0x7fffffff /* as coralMaxDataType */
} coralCollective_t;

typedef enum {
  coralQueryTransport = 0,  /* the transport to args->peer: "shm", "tcp", "ucx", "ibverbs"; "self" */
  coralQueryAlgorithm = 1,  /* the algorithm a call of args' shape runs: "ring", "rhd", "oneshot"... */
  coralQueryChunkBytes = 2, /* that call's pipelining chunk in bytes */
  coralQueryTuning = 3,     /* "1" while trials (CORAL_TUNE_TRIALS) of that shape still run, else "0" */
  coralQueryTrialPicks = 4, /* the trials' picks so far as a CORAL_ALGO value; "" if none */
  /* The cost model's time for that call in microseconds: the schedule it runs, timed message by
   * message over the link classes (latency plus bytes over bandwidth; across hosts as measured
   * when the communicator was made). Reductions and copies are not priced. */
  coralQueryEstimateUs = 5,
  coralNumQueries = 6,
  coralMaxQuery = 0x7fffffff /* as coralMaxDataType */
} coralQuery_t;

/* The call a query asks about: the arguments it would be made with. */
typedef struct {
  coralCollective_t collective;
  size_t count; /* the collective's count argument (per rank for reduce-scatter and all-gather) */
  coralDataType_t datatype;
  coralRedOp_t op;
  int root;
  int device; /* 1: device buffers */
  int peer;   /* coralQueryTransport: the other rank */
} coralQueryArgs_t;
#define CORAL_QUERY_ARGS_INITIALIZER \
  { coralCollAllReduce, 0, coralFloat32, coralSum, 0, 0, 0 }

/* args may be NULL for coralQueryTrialPicks. */
CORAL_API coralResult_t coralCommQuery(coralComm_t comm, coralQuery_t query, const coralQueryArgs_t* args, char* value,
                                       size_t size);

#ifdef __cplusplus
}
#endif
#endif /* CORAL_CORAL_H */
