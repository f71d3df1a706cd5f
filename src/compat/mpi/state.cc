// Knobs, counters, and one Coral communicator per MPI communicator (cached as an attribute).
#include <strings.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "interpose.h"

namespace coral_mpi {

namespace {

const char* const kCollNames[kNumColls] = {"allreduce",      "reduce",    "bcast",      "reduce_scatter_block",
                                           "reduce_scatter", "allgather", "allgatherv", "alltoall",
                                           "alltoallv",      "gather",    "scatter",    "barrier"};
const char* const kReasonNames[kNumReasons] = {"CORAL_MPI=0",
                                               "not in CORAL_MPI_OPS",
                                               "intercommunicator",
                                               "datatype",
                                               "op",
                                               "arguments for MPI to check",
                                               "Coral communicator not created",
                                               "non-blocking before the first blocking call"};

struct Knobs {
  bool on = true;
  bool report = false;
  bool info = false;
  bool colls[kNumColls];
};

// A 0/1 knob as Coral's registry reads it (src/base/config.cc): unset or empty is the default.
bool flag(const char* name, bool dflt, std::string* bad) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end == '\0' && (n == 0 || n == 1)) return n == 1;
  *bad = std::string(name) + "='" + v + "' is not 0 or 1";
  return dflt;
}

// CORAL_MPI_OPS as the registry reads it: words from kCollNames or "all", any case.
void parse_ops(bool (&colls)[kNumColls], std::string* bad) {
  const char* v = std::getenv("CORAL_MPI_OPS");
  const std::string list = (v && *v) ? v : "all";
  for (bool& b : colls) b = false;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string word = list.substr(start, end - start);
    const bool all = strcasecmp(word.c_str(), "all") == 0;
    bool known = all;
    for (int i = 0; i < kNumColls; ++i)
      if (all || strcasecmp(word.c_str(), kCollNames[i]) == 0) colls[i] = known = true;
    if (!known && bad->empty()) {
      *bad = "CORAL_MPI_OPS='" + list + "': '" + word + "' is not one of ";
      for (const char* name : kCollNames) *bad += std::string(name) + ", ";
      *bad += "all";
    }
    start = end + 1;
  }
}

const Knobs& knobs() {
  static const Knobs k = [] {
    Knobs k;
    std::string bad;
    k.on = flag("CORAL_MPI", true, &bad);
    k.report = flag("CORAL_MPI_REPORT", false, &bad);
    const char* dbg = std::getenv("CORAL_DEBUG");
    k.info = dbg && (strcasecmp(dbg, "INFO") == 0 || strcasecmp(dbg, "TRACE") == 0);
    parse_ops(k.colls, &bad);
    // Coral refuses to make communicators while any of its knobs is invalid, so nothing could run
    // on it: say why once, and leave every call to MPI.
    if (!bad.empty()) {
      std::fprintf(stderr, "coral-mpi: %s; every call goes to MPI\n", bad.c_str());
      k.on = false;
    }
    return k;
  }();
  return k;
}

std::atomic<long> g_counts[kNumReasons + 1];  // [0]: handled; [1 + r]: passed for reason r

std::mutex g_mu;            // guards g_live and the keyval's creation
std::vector<Comm*> g_live;  // communicators with a Coral twin, for MPI_Finalize
std::atomic<int> g_keyval{MPI_KEYVAL_INVALID};
std::atomic<unsigned> g_generation{0};  // bumped when a Comm goes: per-thread caches drop it

int on_delete(MPI_Comm, int, void* attr, void*) {
  auto* c = static_cast<Comm*>(attr);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto it = g_live.begin(); it != g_live.end(); ++it)
      if (*it == c) {
        g_live.erase(it);
        break;
      }
  }
  g_generation.fetch_add(1, std::memory_order_release);
  if (c->coral) {
    settle_comm(c);
    coralCommDestroy(c->coral);
  }
  delete c;
  return MPI_SUCCESS;
}

int keyval() {
  int k = g_keyval.load(std::memory_order_acquire);
  if (k != MPI_KEYVAL_INVALID) return k;
  std::lock_guard<std::mutex> lock(g_mu);
  k = g_keyval.load(std::memory_order_relaxed);
  if (k == MPI_KEYVAL_INVALID) {
    // Not copied on MPI_Comm_dup: a child meets on its own first collective.
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &k, nullptr);
    g_keyval.store(k, std::memory_order_release);
  }
  return k;
}

// Every member builds the Coral twin together: rank 0's unique id reaches the others over MPI,
// and all agree whether it worked, so a failure anywhere sends the comm to MPI everywhere. The
// barrier keeps a rank from waiting in Coral's bootstrap, where it drives no MPI progress, before
// every peer is in this call (a root's broadcast may end first): a peer still outside may need
// this rank's MPI progress to get here, as for a send this rank posted before the call.
Comm* create(MPI_Comm comm) {
  auto* c = new Comm;
  c->mpi = comm;
  PMPI_Comm_rank(comm, &c->rank);
  PMPI_Comm_size(comm, &c->size);
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    c->unusable = kInterComm;
  } else {
    struct {
      int result;
      coralUniqueId id;
    } msg{};
    if (c->rank == 0) msg.result = coralGetUniqueId(&msg.id);
    PMPI_Bcast(&msg, sizeof msg, MPI_BYTE, 0, comm);
    PMPI_Barrier(comm);
    coralResult_t r = static_cast<coralResult_t>(msg.result);
    if (r == coralSuccess) r = coralCommInitRank(&c->coral, c->size, msg.id, c->rank);
    int ok = r == coralSuccess, all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
      // A rank whose own creation failed says why, once: usually a setting Coral rejects. The
      // program's results stay right, only slower, so it is a warning, not an abort.
      static std::atomic<bool> told{false};
      if (knobs().info || (!ok && !told.exchange(true)))
        std::fprintf(stderr, "coral-mpi: rank %d: no Coral communicator (%s), this one stays with MPI\n", c->rank,
                     ok ? "a peer failed" : coralGetLastError(nullptr));
      if (c->coral) coralCommDestroy(c->coral);
      c->coral = nullptr;
      c->unusable = kCoralInit;
    }
  }
  PMPI_Comm_set_attr(comm, keyval(), c);
  std::lock_guard<std::mutex> lock(g_mu);
  g_live.push_back(c);
  return c;
}

}  // namespace

bool enabled(Coll coll, Reason* why) {
  const Knobs& k = knobs();
  if (!k.on) return *why = kOff, false;
  if (!k.colls[coll]) return *why = kNotListed, false;
  return true;
}

Comm* comm_for(MPI_Comm comm, bool blocking, Reason* why) {
  if (comm == MPI_COMM_NULL) return *why = kArgs, nullptr;
  // MPI programs call on one communicator again and again: one entry per thread skips the
  // attribute lookup. A freed handle may come back as a new comm, hence the generation.
  thread_local MPI_Comm last_mpi = MPI_COMM_NULL;
  thread_local Comm* last = nullptr;
  thread_local unsigned last_gen = 0;
  Comm* c = nullptr;
  const unsigned gen = g_generation.load(std::memory_order_acquire);
  if (last && last_mpi == comm && last_gen == gen) {
    c = last;
  } else {
    void* attr = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(comm, keyval(), &attr, &flag);
    if (!flag && !blocking) return *why = kNotMet, nullptr;
    c = flag ? static_cast<Comm*>(attr) : create(comm);
    last_mpi = comm, last = c, last_gen = gen;
  }
  if (c->unusable != kHandled) return *why = c->unusable, nullptr;
  return c;
}

void count(Reason r) {
  // Only the report reads the counts: without it a call skips the locked add.
  if (knobs().report) g_counts[r + 1].fetch_add(1, std::memory_order_relaxed);
}

std::string last_error(const Comm* c) {
  const char* m = coralGetLastError(c ? c->coral : nullptr);
  return m ? m : "";
}

void report(bool at_abort) {
  const Knobs& k = knobs();
  if (!k.report) return;
  int world_rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (!at_abort && world_rank != 0) return;
  long passed = 0;
  for (int r = 0; r < kNumReasons; ++r) passed += g_counts[r + 1].load();
  // At MPI_Abort only the calling rank is sure to print before the job is killed: its own counts.
  const std::string where = at_abort ? " (rank " + std::to_string(world_rank) + ", at MPI_Abort)" : "";
  std::fprintf(stderr, "coral-mpi: handled %ld collective calls, passed %ld to MPI%s\n", g_counts[0].load(), passed,
               where.c_str());
  if (k.info)
    for (int r = 0; r < kNumReasons; ++r)
      if (long n = g_counts[r + 1].load())
        std::fprintf(stderr, "coral-mpi: passed %ld to MPI: %s\n", n, kReasonNames[r]);
  std::fflush(stderr);
}

void shutdown() {
  complete_all();
  report(false);
  std::vector<Comm*> live;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    live = g_live;
  }
  const int k_val = g_keyval.load();
  for (Comm* c : live) PMPI_Comm_delete_attr(c->mpi, k_val);  // on_delete frees each
  if (k_val != MPI_KEYVAL_INVALID) {
    int kv = k_val;
    PMPI_Comm_free_keyval(&kv);
    g_keyval.store(MPI_KEYVAL_INVALID);
  }
  stop_driving_mpi();
}

}  // namespace coral_mpi
