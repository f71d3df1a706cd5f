#include "base/config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "base/error.h"

namespace coral::config {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kG = 1ull << 30;

Knob integer(const char* n, const char* def, double lo, double hi, const char* doc) {
  return Knob{n, Type::Int, def, doc, lo, hi, 1, nullptr};
}
Knob bytes(const char* n, const char* def, double lo, double hi, uint64_t multiple, const char* doc) {
  return Knob{n, Type::Bytes, def, doc, lo, hi, multiple, nullptr};
}
Knob real(const char* n, const char* def, double lo, double hi, const char* doc) {
  return Knob{n, Type::Double, def, doc, lo, hi, 1, nullptr};
}
Knob text(const char* n, const char* def, const char* doc) {
  return Knob{n, Type::String, def, doc, -kInf, kInf, 1, nullptr};
}
Knob choice(const char* n, const char* def, const char* choices, const char* doc) {
  return Knob{n, Type::Choice, def, doc, -kInf, kInf, 1, choices};
}
Knob list(const char* n, const char* def, const char* choices, const char* doc) {
  return Knob{n, Type::List, def, doc, -kInf, kInf, 1, choices};
}

}  // namespace

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> table = {
      choice("CORAL_DEBUG", "WARN", "NONE,WARN,INFO,TRACE", "Log level. Lines go to stderr, prefixed host:pid:rank."),
      list("CORAL_DEBUG_SUBSYS", "ALL", "INIT,NET,SHM,COLL,TUNE,BOOT,TOPO,ALL",
           "Comma list of the subsystems that log."),
      real("CORAL_TIMEOUT", "300", 1e-3, 1e9,
           "Seconds a collective or bootstrap step may wait on a peer before coralTimeout (1e9, 31 years, "
           "stands for ever)."),
      integer("CORAL_RANK", "-1", -1, 1 << 30, "Rank of this process (set by coral-run)."),
      integer("CORAL_SIZE", "-1", -1, 1 << 30, "Number of ranks (set by coral-run)."),
      integer("CORAL_LOCAL_RANK", "-1", -1, 1 << 30, "Rank among the ranks on this host (set by coral-run)."),
      integer("CORAL_LOCAL_SIZE", "-1", -1, 1 << 30, "Number of ranks on this host (set by coral-run)."),
      text("CORAL_ROOT", "", "host:port of the rendezvous store (set by coral-run; or give it for multi-node runs)."),
      text("CORAL_SECRET", "", "Per-job secret, 64 hex digits, that every connection must present (set by coral-run)."),
      text("CORAL_HOSTID", "", "Overrides the host identity (default: hostname + boot id + network namespace)."),
      text("CORAL_ALGO", "auto",
           "Forces an algorithm (auto, ring, tree, rhd, rd, oneshot, twoshot, hier, chain, direct, pairwise, "
           "bruck) for every collective that has it, or per collective and size: "
           "allreduce:0-4K:oneshot,4K-1M:rhd,1M-:ring;broadcast:0-64K:tree (bytes, the whole buffer for "
           "reduce-scatter and all-gather; collectives allreduce, reducescatter, allgather, broadcast, reduce, "
           "alltoall, alltoallv, gather, scatter, allgatherv, reducescatterv); sizes outside the ranges stay "
           "with the tuner."),
      bytes("CORAL_SMALL_BYTES", "4K", 0, kInf, 1,
            "All-reduces up to this size take the latency path in auto mode: one-shot on one host, recursive "
            "doubling across hosts. On one host one-shot goes on while its peers read at most 64 KiB of it."),
      bytes("CORAL_SHM_SLOT_BYTES", "256K", 4096, kG, 64, "Bytes per shared-memory FIFO slot: the pipelining chunk."),
      integer("CORAL_SHM_NSLOTS", "4", 1, 64,
              "Slots per shared-memory FIFO (pipeline depth); schedules need at least 2."),
      bytes("CORAL_CUDA_IPC_SLOT_BYTES", "4M", 4096, kG, 64,
            "Bytes per cuda_ipc FIFO slot (device memory): the chunk of device-buffer collectives on one host."),
      integer("CORAL_CUDA_IPC_NSLOTS", "4", 1, 64, "Slots per cuda_ipc FIFO (pipeline depth)."),
      bytes("CORAL_GPU_STAGE_BYTES", "4M", 4096, kG, 1,
            "Device buffers crossing hosts are staged through pinned host memory in pieces this large, so copies "
            "and the network overlap."),
      choice("CORAL_GPU_STREAM_WAIT", "auto", "auto,flag,host",
             "How a stream-ordered call holds back the caller's stream. flag: the stream waits on a host-mapped "
             "word the progress thread raises, and the call returns at once. host: the call returns once done, "
             "the stream never waits (slower; needed where a waiting stream could block Coral's own work on the "
             "same hardware queue). auto: host when CUDA_DEVICE_MAX_CONNECTIONS=1, else flag."),
      integer("CORAL_GPU_EMULATE", "0", 0, 8,
              "Test hook: N > 0 makes N stand-in GPUs of host memory (no CUDA needed), so the device-buffer path "
              "runs on machines without one."),
      bytes("CORAL_CMA_BYTES", "64K", 0, kInf, 1,
            "Shared-memory messages this large whose source stays put are read straight out of the sender: in "
            "place from registered memory or another thread's, else by cross-memory attach (CORAL_CMA); 0 turns "
            "both off."),
      choice("CORAL_CMA", "auto", "auto,on,off",
             "Cross-memory attach (process_vm_readv) for such messages from unregistered memory: auto measures "
             "once per process whether one read beats the two copies through the slots (on some VMs it is several "
             "times slower than memcpy); on; off."),
      text("CORAL_TRANSPORT", "auto",
           "Transports to use, in order of preference: auto (shm on one host; ibverbs, ucx with RDMA devices, or "
           "tcp between hosts), or a name or comma list of shm, tcp, ucx, ibverbs."),
      text("CORAL_SOCKET_IFNAME", "",
           "Interfaces TCP may use, as NCCL_SOCKET_IFNAME: name prefixes (eth,ens), ^ to exclude (^docker,lo), = "
           "for exact names (=eth0). Default: the physical NIC the topology puts closest to the rank, else the "
           "interface that routes to the rendezvous store."),
      text("CORAL_TOPO_FILE", "",
           "Read this host's topology from a file (NCCL topology XML, hwloc XML or coral-topo JSON), as "
           "NCCL_TOPO_FILE, instead of detecting it."),
      text("CORAL_TOPO_DUMP_FILE", "",
           "Rank 0 writes the topology it used here: NCCL XML when the name ends in .xml, else coral-topo JSON "
           "(as NCCL_TOPO_DUMP_FILE)."),
      text("CORAL_TOPO_DEVICES", "",
           "The devices this host's ranks drive, in rank order, as ids of the topology (PCI bus ids of GPUs, or "
           "cpuN NUMA domains), comma-separated. Default: each rank's NUMA domain, from its CPU affinity."),
      choice("CORAL_SOCKET_FAMILY", "auto", "auto,ipv4,ipv6", "Address family for TCP links."),
      integer("CORAL_SOCKET_NSOCKS", "1", 1, 16,
              "TCP sockets per pair of ranks; messages of 128K and more are striped over them."),
      integer("CORAL_SOCKET_NTHREADS", "0", 0, 16,
              "Helper threads per communicator that do the TCP socket I/O, socket i of each pair on thread i % N (at "
              "most CORAL_SOCKET_NSOCKS used). 0: the thread that waits does it, which saves a hand-off per message; "
              "threads pay off only with spare cores and a NIC one core cannot fill."),
      bytes("CORAL_SOCKET_SLOT_BYTES", "256K", 4096, kG, 64, "Bytes per TCP receive slot (the largest message)."),
      integer("CORAL_SOCKET_NSLOTS", "8", 2, 1024, "Receive slots per TCP link: messages a sender may have in flight."),
      bytes("CORAL_UCX_SLOT_BYTES", "256K", 4096, kG, 1, "Bytes per UCX message slot (the largest message)."),
      integer("CORAL_UCX_NSLOTS", "8", 2, 1024,
              "UCX sends in flight and receives posted ahead, per peer. UCX's own UCX_* variables apply as usual."),
      text("CORAL_IB_HCA", "",
           "RDMA device for the ibverbs transport (default: the one the topology puts closest to the rank, else "
           "the first one)."),
      integer("CORAL_IB_PORT", "1", 1, 255, "Port of the RDMA device."),
      integer("CORAL_IB_GID_INDEX", "0", 0, 255, "GID index for RoCE (and InfiniBand without LIDs)."),
      bytes("CORAL_IB_SLOT_BYTES", "256K", 4096, kG, 64, "Bytes per RDMA receive slot (the largest message)."),
      integer("CORAL_IB_NSLOTS", "8", 2, 256, "RDMA receive slots per link (credits)."),
      bytes("CORAL_IB_DIRECT_BYTES", "64K", 0, kInf, 1,
            "RDMA messages this large whose source stays put are written from the user's buffer (registered "
            "through the cache)."),
      bytes("CORAL_IB_REG_CACHE_BYTES", "1G", 0, kInf, 1, "Pinned bytes the RDMA registration cache may keep."),
      integer("CORAL_CHECK_ROOTS", "1", 0, 1,
              "1: broadcast, reduce, gather and scatter first agree on the root (an 8-byte all-reduce), so ranks "
              "that pass different roots all fail at once, naming both, instead of hanging; 0: skip that "
              "check (saves its latency on small rooted calls)."),
      text("CORAL_DUMP_ON_TIMEOUT", "",
           "A file (or directory) where a rank whose operation fails on a timeout or a peer's abort, or that gets "
           "SIGUSR1, appends its flight recorder (its recent operations) as JSON lines; empty: SIGUSR1 dumps to "
           "stderr and timeouts dump nothing."),
      integer("CORAL_TUNE_PROBE", "1", 0, 1,
              "1: a multi-host communicator measures its link classes at start (a few ms) for the tuner's cost "
              "model; 0: the defaults (shared memory, and the speed of the NICs the topology chose, else a 100 Gb/s "
              "network)."),
      integer("CORAL_TUNE_TRIALS", "0", 0, 1,
              "1: the all-reduce times the tuner's pick against its close rivals on the first calls of each size "
              "class and keeps the fastest (picks then depend on timing, so runs stop being bitwise "
              "reproducible); 0: the cost model alone."),
      bytes("CORAL_CHUNK_BYTES", "0", 0, kInf, 1,
            "Pipelining chunk of every call, at most the transports' largest message. 0: the cost model picks it "
            "for chain broadcast and reduce; the other algorithms use the largest message."),
      integer("CORAL_SPIN", "20000", 0, 1 << 30,
              "Polls a waiting rank makes before it yields the core; 0 blocks at once."),
      choice("CORAL_KERNEL", "auto", "auto,scalar,avx2,avx512",
             "CPU reduction kernels (the choice must be supported by the CPU)."),
      // Read by the MPI interposer (src/compat/mpi), declared here so coral-info lists them.
      integer("CORAL_MPI", "1", 0, 1, "0: the MPI interposer (coral-mpi) passes every call to MPI unchanged."),
      list("CORAL_MPI_OPS", "all",
           "allreduce,reduce,bcast,reduce_scatter_block,reduce_scatter,allgather,allgatherv,alltoall,alltoallv,"
           "gather,scatter,barrier,all",
           "MPI collectives the interposer runs on Coral (their non-blocking forms follow); the rest go to MPI."),
      integer("CORAL_MPI_REPORT", "0", 0, 1,
              "1: rank 0 prints at MPI_Finalize how many collective calls Coral handled and how many went to "
              "MPI (with CORAL_DEBUG=INFO, why, by reason); a rank calling MPI_Abort prints its own counts."),
      choice("CORAL_MPI_ABI", "auto", "auto,ompi,mpich",
             "Which interposer coral-mpi preloads; auto: from the launcher's environment, else the program's "
             "libraries."),
  };
  return table;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::Int:
      return "int";
    case Type::Bytes:
      return "bytes";
    case Type::Double:
      return "double";
    case Type::String:
      return "string";
    case Type::Choice:
      return "choice";
    case Type::List:
      return "list";
  }
  return "?";
}

const Knob& knob(const char* name) {
  for (const Knob& k : knobs())
    if (std::string(k.name) == name) return k;
  std::fprintf(stderr, "coral: internal error: undeclared config knob %s\n", name);
  std::abort();
}

namespace {

std::string raw(const Knob& k) {
  const char* v = std::getenv(k.name);
  return (v && *v) ? std::string(v) : std::string(k.default_value);
}

// Sizes with K/M/G suffixes, as the knobs take them.
std::string number(double v, bool size) {
  if (v == kInf) return "inf";
  const uint64_t u = static_cast<uint64_t>(v);
  if (size && v >= 1024 && static_cast<double>(u) == v) {
    for (auto [shift, s] : {std::pair{30, "G"}, {20, "M"}, {10, "K"}})
      if (u % (1ull << shift) == 0) return std::to_string(u >> shift) + s;
  }
  if (std::floor(v) == v) return std::to_string(static_cast<long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The declared spelling of word, matched regardless of case (NCCL_DEBUG=info works, so
// CORAL_DEBUG=info must too); empty when word is none of the choices.
std::string canonical(const Knob& k, const std::string& word) {
  for (const std::string& c : split(k.choices, ','))
    if (c.size() == word.size() && std::equal(c.begin(), c.end(), word.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return c;
  return "";
}

bool is_choice(const Knob& k, const std::string& word) { return !canonical(k, word).empty(); }

// Parses one value of k (numbers as double, exact up to 2^53) and checks it against the
// declaration; throws std::invalid_argument saying why it does not fit.
double parse_number(const Knob& k, const std::string& s) {
  size_t pos = 0;
  double v;
  if (k.type == Type::Bytes) {
    v = static_cast<double>(parse_bytes(s));
    pos = s.size();
  } else if (k.type == Type::Int) {
    v = static_cast<double>(std::stoll(s, &pos, 10));
  } else {
    v = std::stod(s, &pos);
  }
  if (pos != s.size()) throw std::invalid_argument("trailing characters");
  if (!(v >= k.min && v <= k.max) || (k.type == Type::Bytes && static_cast<uint64_t>(v) % k.multiple))
    throw std::invalid_argument("expected " + allowed(k));
  return v;
}

[[noreturn]] void reject(const Knob& k, const std::string& v, const std::string& why) {
  fail(coralInvalidArgument, std::string(k.name) + "='" + v + "' is not a valid value (" + why + ")");
}

double get_number(const char* name) {
  const Knob& k = knob(name);
  const std::string v = raw(k);
  try {
    return parse_number(k, v);
  } catch (const std::exception& e) {
    reject(k, v, e.what());
  }
}

}  // namespace

std::string allowed(const Knob& k) {
  switch (k.type) {
    case Type::Choice:
      return "one of " + std::string(k.choices);
    case Type::List:
      return "a comma list of " + std::string(k.choices);
    case Type::String:
      return "";
    default:
      break;
  }
  const bool size = k.type == Type::Bytes;
  std::string range;
  if (k.min > -kInf && k.max < kInf)
    range = number(k.min, size) + " to " + number(k.max, size);
  else if (k.min > -kInf)
    range = "at least " + number(k.min, size);
  else if (k.max < kInf)
    range = "at most " + number(k.max, size);
  if (k.multiple > 1) return "a multiple of " + std::to_string(k.multiple) + (range.empty() ? "" : ", " + range);
  return range;
}

std::string check(const Knob& k, const std::string& value) {
  try {
    switch (k.type) {
      case Type::String:
        return "";
      case Type::Choice:
        if (!is_choice(k, value)) throw std::invalid_argument("expected " + allowed(k));
        return "";
      case Type::List:
        for (const std::string& w : split(value, ','))
          if (!is_choice(k, w)) throw std::invalid_argument("'" + w + "' is not one of " + k.choices);
        return "";
      default:
        parse_number(k, value);
        return "";
    }
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string current(const Knob& k) { return raw(k); }

void validate_all() {
  for (const Knob& k : knobs()) {
    const std::string v = raw(k);
    const std::string why = check(k, v);
    if (!why.empty()) reject(k, v, why);
  }
}

bool is_set(const char* name) {
  knob(name);
  const char* v = std::getenv(name);
  return v && *v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); i++)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

int64_t get_int(const char* name) { return static_cast<int64_t>(get_number(name)); }
uint64_t get_bytes(const char* name) {
  const Knob& k = knob(name);
  const std::string v = raw(k);
  try {
    parse_number(k, v);  // the range; the value itself is read exactly, beyond a double's 2^53
    return parse_bytes(v);
  } catch (const std::exception& e) {
    reject(k, v, e.what());
  }
}
double get_double(const char* name) { return get_number(name); }

std::string get_string(const char* name) {
  const Knob& k = knob(name);
  const std::string v = raw(k);
  const std::string why = check(k, v);
  if (!why.empty()) reject(k, v, why);
  if (k.type == Type::Choice) return canonical(k, v);
  if (k.type == Type::List) {
    std::string out;
    for (const std::string& w : split(v, ',')) {
      if (!out.empty()) out += ',';
      out += canonical(k, w);
    }
    return out;
  }
  return v;
}

}  // namespace coral::config
