// The PMPI interposer's internals. Compiled once per MPI ABI (Open MPI, MPICH) against that MPI's
// own mpi.h; uses Coral only through its public C API.
#pragma once

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <coral/coral.h>
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace coral_mpi {

// The collectives CORAL_MPI_OPS names; a non-blocking form counts as its blocking one.
enum Coll : int {
  kAllreduce,
  kReduce,
  kBcast,
  kReduceScatterBlock,
  kReduceScatter,
  kAllgather,
  kAllgatherv,
  kAlltoall,
  kAlltoallv,
  kGather,
  kScatter,
  kBarrier,
  kNumColls
};

// Why a call went to MPI (CORAL_MPI_REPORT at INFO lists them).
enum Reason : int {
  kHandled = -1,
  kOff,        // CORAL_MPI=0
  kNotListed,  // not in CORAL_MPI_OPS
  kInterComm,  // intercommunicator
  kType,       // a datatype Coral cannot reduce exactly (derived, 16-bit, long double...)
  kOp,         // user-defined op, MAXLOC/MINLOC, or an op the datatype does not allow
  kArgs,       // arguments MPI should judge (negative count, null handles)
  kCoralInit,  // Coral could not create a communicator for this one
  kNotMet,     // a non-blocking call on a communicator whose Coral twin is not made yet
  kNumReasons
};

struct Comm {
  MPI_Comm mpi = MPI_COMM_NULL;
  coralComm_t coral = nullptr;
  int rank = 0, size = 0;
  Reason unusable = kHandled;  // kInterComm or kCoralInit: every call on it goes to MPI
};

// --- state.cc ---
// Whether coll may run on Coral at all (CORAL_MPI, CORAL_MPI_OPS); else *why says why not.
bool enabled(Coll coll, Reason* why);
// The Coral communicator for comm. The first blocking collective on comm creates it (collective
// over comm: call it only where every member does, from arguments that agree everywhere); a
// non-blocking call must not wait for its peers, so before that it gets none (kNotMet), on every
// rank alike, since all call comm's collectives in one order. nullptr: *why says why not.
Comm* comm_for(MPI_Comm comm, bool blocking, Reason* why);
void count(Reason r);  // one call handled (kHandled) or passed to MPI
// Turns a Coral failure into MPI's error handling: prints and aborts under MPI_ERRORS_ARE_FATAL,
// else calls comm's handler and returns the error class (MPI_Error_string gives `message`).
int fail(MPI_Comm comm, const char* call, coralResult_t result, const std::string& message);
// Coral's message for a failure on comm just now.
std::string last_error(const Comm* c);
// CORAL_MPI_REPORT's line: rank 0's at MPI_Finalize, the calling rank's at MPI_Abort.
void report(bool at_abort);
// MPI_Finalize's work before PMPI_Finalize: the report line, then every Coral communicator freed.
void shutdown();
// Blocking progress of every pending request on comm (before its Coral communicator goes).
void settle_comm(const Comm* c);

// --- types.cc ---
struct Reduction {
  coralDataType_t dtype = coralUint8;
  coralRedOp_t op = coralSum;
  size_t count = 0;        // in Coral elements
  size_t bytes = 0;        // of the whole buffer
  int elem = 0;            // bytes per MPI element
  bool normalize = false;  // logical op: inputs become 0/1 first, then a bitwise op on bytes
};
// Maps an MPI reduction Coral does exactly; kHandled if it can, else the reason it cannot.
Reason map_reduction(MPI_Datatype type, MPI_Op op, int count, Reduction* out);
// Writes `in`'s elements as 0/1 of the same width to `out` (may equal `in`).
void normalize(const void* in, void* out, size_t elems, int elem);

// A buffer of `count` elements of `type` as bytes. Contiguous types are used where they lie;
// others are packed to a temporary (and unpacked after a receive), so every rank's route stays
// independent of its own datatype's layout.
struct Layout {
  MPI_Aint size = 0;    // bytes of data per element
  MPI_Aint extent = 0;  // stride between elements
  MPI_Aint lb = 0;      // true lower bound: where the data starts
  bool contiguous = true;
};
bool layout_of(MPI_Datatype type, Layout* out);  // false: not a valid datatype

// --- job.cc ---
// From MPI_Finalize on, a blocking Coral call no longer drives MPI's progress while it waits.
void stop_driving_mpi();
// One intercepted call on its way through Coral: its temporaries and what is left to do once the
// data has arrived (unpack, move). Blocking calls run it at once; non-blocking ones hand it to an
// MPI generalized request that MPI_Wait and friends complete.
class Job {
 public:
  Job(Comm* c, const char* call, MPI_Request* request) : comm_(c), call_(call), request_(request) {}
  std::byte* temp(size_t bytes);
  void then(std::function<void()> fn) { finish_.push_back(std::move(fn)); }
  // The datatype a deferred unpack uses. MPI lets the caller free a datatype while a
  // non-blocking call on it is in flight, so such a call unpacks with a duplicate of its own.
  std::shared_ptr<MPI_Datatype> hold(MPI_Datatype type);
  // issue(nullptr) runs the blocking Coral call; issue(&req) the non-blocking one. Taken by
  // reference, not as a std::function: the lambdas capture more than its inline buffer holds,
  // and a heap allocation per call is a measurable part of an 8-byte all-reduce.
  template <class F>
  int run(F&& issue) {
    return run_with(&issue,
                    [](void* f, coralRequest_t* q) { return (*static_cast<std::remove_reference_t<F>*>(f))(q); });
  }
  Comm* comm() const { return comm_; }
  // The gate every intercepted call passes: nullptr (counted as passed) sends it to MPI.
  static Comm* admit(Coll coll, MPI_Comm comm, Reason pre, bool blocking);

 private:
  int run_with(void* issue, coralResult_t (*call)(void*, coralRequest_t*));
  Comm* comm_;
  const char* call_;
  MPI_Request* request_;
  std::vector<std::unique_ptr<std::byte[]>> temps_;
  std::vector<std::function<void()>> finish_;
};

// Byte views of MPI buffers (pack on the way in, unpack registered on the job for the way out).
// `blocks` blocks of counts[j] elements at displs[j] extents from buf (counts == nullptr: every
// block `count` elements, back to back). Returns the bytes and fills byte counts and offsets.
struct Bytes {
  std::byte* ptr = nullptr;
  std::vector<size_t> counts, displs;  // per block, in bytes (only for block views)
  size_t total = 0;
};
Bytes send_view(Job& job, const void* buf, int count, MPI_Datatype type, MPI_Comm comm);
Bytes recv_view(Job& job, void* buf, int count, MPI_Datatype type, MPI_Comm comm);
Bytes send_blocks(Job& job, const void* buf, int nblocks, int count, const int* counts, const int* displs,
                  MPI_Datatype type, MPI_Comm comm);
Bytes recv_blocks(Job& job, void* buf, int nblocks, int count, const int* counts, const int* displs, MPI_Datatype type,
                  MPI_Comm comm);
// In place, block j already lies in the user's buffer (count elements at displ extents); where
// `view` is a packed copy, it is packed into its place there too.
void pack_block(const Bytes& view, int j, const void* buf, int count, long displ, MPI_Datatype type, MPI_Comm comm);

// --- requests.cc ---
// A non-blocking call's Coral request behind an MPI generalized request.
struct Pending {
  coralRequest_t creq = nullptr;
  MPI_Comm mpi = MPI_COMM_NULL;  // for the error handler (MPI_COMM_WORLD once comm is freed)
  const Comm* owner = nullptr;   // compared, never read: the Comm may be gone
  const char* call = "";
  std::vector<std::unique_ptr<std::byte[]>> temps;
  std::vector<std::function<void()>> finish;
  coralResult_t result = coralSuccess;
  std::string message;
  bool done = false;
  MPI_Request handle = MPI_REQUEST_NULL;
};
int start_request(std::unique_ptr<Pending> p, MPI_Request* request);
void reap_orphans();  // progress of freed-but-running requests; cheap when there are none
void complete_all();  // MPI_Finalize: every Coral request still running is waited for

// --- coll_reduce.cc, coll_move.cc: the calls, blocking (request == nullptr) or not ---
int allreduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request* req);
int reduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm, MPI_Request* req);
int reduce_scatter_block(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request* req);
int reduce_scatter(const void* sb, void* rb, const int* counts, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                   MPI_Request* req);
int bcast(void* buf, int n, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request* req);
int allgather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm comm,
              MPI_Request* req);
int allgatherv(const void* sb, int sn, MPI_Datatype st, void* rb, const int* rcounts, const int* displs,
               MPI_Datatype rt, MPI_Comm comm, MPI_Request* req);
int alltoall(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm comm,
             MPI_Request* req);
int alltoallv(const void* sb, const int* scounts, const int* sdispls, MPI_Datatype st, void* rb, const int* rcounts,
              const int* rdispls, MPI_Datatype rt, MPI_Comm comm, MPI_Request* req);
int gather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root, MPI_Comm comm,
           MPI_Request* req);
int scatter(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root, MPI_Comm comm,
            MPI_Request* req);
int barrier(MPI_Comm comm, MPI_Request* req);

}  // namespace coral_mpi
