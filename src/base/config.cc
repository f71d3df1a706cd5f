#include "base/config.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "base/error.h"

namespace coral::config {

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> table = {
      {"CORAL_DEBUG", Type::String, "WARN", "Log level: NONE, WARN, INFO or TRACE."},
      {"CORAL_DEBUG_SUBSYS", Type::String, "ALL",
       "Comma list of subsystems to log: INIT, NET, SHM, COLL, TUNE, BOOT, ALL."},
      {"CORAL_TIMEOUT", Type::Double, "300",
       "Seconds a collective or bootstrap step may wait on a peer before coralTimeout."},
      {"CORAL_RANK", Type::Int, "-1", "Rank of this process (set by coral-run)."},
      {"CORAL_SIZE", Type::Int, "-1", "Number of ranks (set by coral-run)."},
      {"CORAL_LOCAL_RANK", Type::Int, "-1", "Rank among the ranks on this host (set by coral-run)."},
      {"CORAL_ROOT", Type::String, "",
       "host:port of the rendezvous store (set by coral-run; or give it for multi-node runs)."},
      {"CORAL_SECRET", Type::String, "",
       "Hex per-job secret every connection must present (set by coral-run)."},
      {"CORAL_HOSTID", Type::String, "",
       "Overrides the host identity (default: hostname + boot id + network namespace)."},
      {"CORAL_ALGO", Type::String, "auto",
       "Force an algorithm (auto, ring, tree, rhd, rd, oneshot, hier, twoshot, chain) for every collective that has it, "
       "or per size: allreduce:0-4K:oneshot,4K-1M:rhd,1M-:ring;broadcast:0-64K:tree"},
      {"CORAL_SMALL_BYTES", Type::Bytes, "4K",
       "All-reduces up to this size take the latency path in auto mode (one-shot on one host, recursive doubling across hosts); "
       "on one host one-shot goes on while its peers read at most 64 KiB of it"},
      {"CORAL_SHM_SLOT_BYTES", Type::Bytes, "256K", "Bytes per shared-memory FIFO slot."},
      {"CORAL_SHM_NSLOTS", Type::Int, "4", "Slots per shared-memory FIFO (pipeline depth)."},
      {"CORAL_CUDA_IPC_SLOT_BYTES", Type::Bytes, "4M", "Bytes per cuda_ipc FIFO slot (device memory)."},
      {"CORAL_CUDA_IPC_NSLOTS", Type::Int, "4", "Slots per cuda_ipc FIFO (pipeline depth)."},
      {"CORAL_GPU_STAGE_BYTES", Type::Bytes, "4M",
       "Device buffers crossing hosts are staged through pinned host memory in pieces this large, "
       "so copies and the network overlap."},
      {"CORAL_GPU_EMULATE", Type::Int, "0",
       "Test hook: 1 makes a stand-in GPU of host memory (no CUDA needed), so the device-buffer "
       "path runs on machines without one."},
      {"CORAL_CMA_BYTES", Type::Bytes, "64K",
       "Shared-memory messages this large whose source stays put are read straight out of the "
       "sender (cross-memory attach: one copy instead of two); 0 turns it off."},
      {"CORAL_TRANSPORT", Type::String, "auto",
       "Transports to use, in order of preference: auto (shm on one host; ibverbs, ucx or tcp between "
       "hosts), or a name or comma list of shm, tcp, ucx, ibverbs to force."},
      {"CORAL_SOCKET_IFNAME", Type::String, "",
       "Interfaces TCP may use: name prefixes (eth,ens), ^ to exclude (^docker,lo), = for exact names "
       "(=eth0). Default: the interface that routes to the rendezvous store."},
      {"CORAL_SOCKET_FAMILY", Type::String, "auto", "Address family for TCP links: auto, ipv4 or ipv6."},
      {"CORAL_SOCKET_NSOCKS", Type::Int, "1",
       "TCP sockets per pair of ranks; messages of 128K and more are striped over them (1-16)."},
      {"CORAL_SOCKET_NTHREADS", Type::Int, "0",
       "Helper threads per communicator that do the TCP socket I/O, socket i of each pair on thread "
       "i % N (0-16, at most CORAL_SOCKET_NSOCKS used). 0: the thread that waits does it, which "
       "saves a hand-off per message."},
      {"CORAL_SOCKET_SLOT_BYTES", Type::Bytes, "256K", "Bytes per TCP receive slot (the largest message)."},
      {"CORAL_SOCKET_NSLOTS", Type::Int, "8", "Receive slots per TCP link: messages a sender may have in flight."},
      {"CORAL_UCX_SLOT_BYTES", Type::Bytes, "256K", "Bytes per UCX message slot (the largest message)."},
      {"CORAL_UCX_NSLOTS", Type::Int, "8", "UCX sends in flight and receives posted ahead, per peer."},
      {"CORAL_IB_HCA", Type::String, "", "RDMA device for the ibverbs transport (default: the first one)."},
      {"CORAL_IB_PORT", Type::Int, "1", "Port of the RDMA device."},
      {"CORAL_IB_GID_INDEX", Type::Int, "0", "GID index for RoCE (and InfiniBand without LIDs)."},
      {"CORAL_IB_SLOT_BYTES", Type::Bytes, "256K", "Bytes per RDMA receive slot (the largest message)."},
      {"CORAL_IB_NSLOTS", Type::Int, "8", "RDMA receive slots per link (credits)."},
      {"CORAL_IB_DIRECT_BYTES", Type::Bytes, "64K",
       "RDMA messages this large whose source stays put are written from the user's buffer (registered through the cache)."},
      {"CORAL_IB_REG_CACHE_BYTES", Type::Bytes, "1G", "Pinned bytes the RDMA registration cache may keep."},
      {"CORAL_TUNE_PROBE", Type::Int, "1",
       "1: a multi-host communicator measures its link classes at start (a few ms) for the tuner's cost model; 0: use defaults."},
      {"CORAL_TUNE_TRIALS", Type::Int, "0",
       "1: the all-reduce times the tuner's pick against its close rivals on the first calls of each "
       "size and keeps the fastest (picks then depend on timing, so runs stop being bitwise "
       "reproducible); 0: the cost model alone."},
      {"CORAL_CHUNK_BYTES", Type::Bytes, "0",
       "Pipelining chunk of every call, at most the transports' largest message. 0: the cost model "
       "picks it for chain broadcast and reduce (deep pipelines fill sooner with small chunks), "
       "others use the largest message."},
      {"CORAL_SPIN", Type::Int, "20000",
       "Polls a waiting rank makes before it yields the core; 0 blocks at once."},
      {"CORAL_KERNEL", Type::String, "auto",
       "CPU reduction kernels: auto, scalar, avx2, avx512 (must be supported)."},
  };
  return table;
}

static const Knob& find(const char* name) {
  for (const Knob& k : knobs())
    if (std::string(k.name) == name) return k;
  std::fprintf(stderr, "coral: internal error: undeclared config knob %s\n", name);
  std::abort();
}

static std::string raw(const char* name) {
  const Knob& k = find(name);
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : std::string(k.default_value);
}

bool is_set(const char* name) {
  find(name);
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

uint64_t parse_bytes(const std::string& text) {
  size_t pos = 0;
  unsigned long long v = std::stoull(text, &pos, 10);
  std::string suffix = text.substr(pos);
  uint64_t mult = 1;
  if (suffix == "" || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KB" || suffix == "KiB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MB" || suffix == "MiB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GB" || suffix == "GiB") mult = 1ull << 30;
  else throw std::invalid_argument("bad size suffix '" + suffix + "'");
  if (text.empty() || text[0] == '-') throw std::invalid_argument("negative size");
  if (v > UINT64_MAX / mult) throw std::invalid_argument("size overflows");
  return v * mult;
}

template <class F>
static auto parse(const char* name, F f) {
  std::string v = raw(name);
  try {
    return f(v);
  } catch (const std::exception& e) {
    fail(coralInvalidArgument, std::string(name) + "='" + v + "' is not a valid value (" + e.what() + ")");
  }
}

int64_t get_int(const char* name) {
  return parse(name, [](const std::string& s) {
    size_t pos = 0;
    long long v = std::stoll(s, &pos, 10);
    if (pos != s.size()) throw std::invalid_argument("trailing characters");
    return static_cast<int64_t>(v);
  });
}

uint64_t get_bytes(const char* name) { return parse(name, parse_bytes); }

double get_double(const char* name) {
  return parse(name, [](const std::string& s) {
    size_t pos = 0;
    double v = std::stod(s, &pos);
    if (pos != s.size()) throw std::invalid_argument("trailing characters");
    return v;
  });
}

std::string get_string(const char* name) { return raw(name); }

}  // namespace coral::config
