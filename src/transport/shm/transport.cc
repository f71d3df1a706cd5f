// Shared-memory transport for ranks on one host: one segment per rank holding its inbound FIFOs,
// opened by name through the store and unlinked once everyone attached. Peer death is seen
// through a pidfd; aborts through the control page of every peer's segment.
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/exchange.h"
#include "transport/shm/cma.h"
#include "transport/shm/connection.h"
#include "transport/shm/transport.h"

namespace coral::transport::shm {

namespace {

class ShmDomain : public Domain {
 public:
  ShmDomain(const ConnectArgs& a, FifoOptions opts);
  ~ShmDomain() override;
  Link* link(int peer) override {
    auto it = links_.find(peer);
    return it == links_.end() ? nullptr : it->second.get();
  }
  std::string peer_failure(int peer) override;
  std::string remote_abort() override;
  void abort(const std::string& why) override;
  void drain(WaitMonitor&) override { wakes_.flush(); }
  void give_way(int peer) override {
    if (yielder_)
      yielder_->give_way(peer);
    else
      sched_yield();
  }
  bool knows_cpus() const override { return yielder_ != nullptr; }
  void* own_board() override { return opts_.slots ? nullptr : mine_.control()->board; }
  const void* peer_board(int peer) override {
    auto it = theirs_.find(peer);
    return it == theirs_.end() || opts_.slots ? nullptr : it->second.control()->board;
  }

 private:
  Geometry geo_{};
  FifoOptions opts_;
  Segment mine_;
  std::map<int, Segment> theirs_;
  std::map<int, std::unique_ptr<ShmLink>> links_;
  std::map<int, int> pidfds_;
  std::map<int, int> pids_;
  std::unique_ptr<ShmPosts> posts_;   // host memory, and few enough local ranks
  std::unique_ptr<Yielder> yielder_;  // host memory only: the host domain is the one consulted
  Wakes wakes_;                       // host memory only: device operations end without drain()
};

constexpr size_t kBoardSlotBytes = 64 * 1024;  // the largest post

// A known value at a known address: peers read it to learn whether cross-memory attach works.
const uint64_t kProbe = 0xc0a1c0a1d15ea5e5ull;

std::string segment_name(const std::string& prefix, int rank) {
  // Names must be short and free of '/': hash the communicator prefix.
  uint64_t h = 1469598103934665603ull;
  for (char c : prefix) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  char buf[64];
  std::snprintf(buf, sizeof buf, "/coral-%016llx-%d", static_cast<unsigned long long>(h), rank);
  return buf;
}

ShmDomain::ShmDomain(const ConnectArgs& a, FifoOptions opts) : opts_(std::move(opts)) {
  std::vector<int> local = a.targets;
  local.push_back(a.rank);
  std::sort(local.begin(), local.end());
  auto local_index = [&](int r) { return static_cast<int>(std::find(local.begin(), local.end(), r) - local.begin()); };
  // The registry holds the knobs' ranges (kMaxSlots slots at most).
  uint64_t slot = config::get_bytes(opts_.slot_bytes_knob);
  int64_t nslots = config::get_int(opts_.nslots_knob);
  SlotMemory* ext = opts_.slots.get();
  geo_ = Geometry{slot, static_cast<uint32_t>(nslots), static_cast<int>(local.size()), ext != nullptr};
  // Posts serve the small broadcasts of one-shot; larger sends go by CMA or slots.
  if (!ext && geo_.nlocal <= kMaxPostRanks) geo_.board_slot_bytes = std::min<size_t>(slot, kBoardSlotBytes);
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(a.timeout_s * 1000));

  const uint64_t direct_min = ext ? 0 : config::get_bytes("CORAL_CMA_BYTES");
  const bool cma = direct_min && cma_wanted();
  // Peers may read our memory (single-copy sends) even where Yama restricts ptrace to children.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

  mine_ = Segment::create(segment_name(a.prefix, a.rank), geo_.total());
  Presence* presence = ext ? nullptr : &mine_.control()->presence;
  mine_.control()->presence.cpu.store(-1);
  // Each rank's segment geometry (which every rank must share), where a probe word of its lives
  // (can peers read this process's memory?), and with device slots, where those are.
  bootstrap::Exchange exchange(*a.store, a.prefix, a.rank, timeout);
  bootstrap::Record mine("shared-memory record", a.rank);
  mine.add("slot_bytes", static_cast<uint64_t>(slot)).add("nslots", nslots);
  mine.add("probe", static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&kProbe)));
  if (ext) mine.add("slots", ext->create(geo_.ring_bytes(), geo_.nlocal));
  const auto records =
      exchange.swap("shm", mine, a.targets, {{"slot_bytes", opts_.slot_bytes_knob}, {"nslots", opts_.nslots_knob}});
  // Which peers' memory this rank can read, as ",3,5," (published so senders know).
  std::string readable = ",";
  for (int q : a.targets) {
    const bootstrap::Record& theirs = records.at(q);
    theirs_.emplace(q, Segment::open(segment_name(a.prefix, q), geo_.total()));
    if (ext) ext->attach(q, (*a.peers)[q].pid, theirs.text("slots"));
    auto probe = reinterpret_cast<const void*>(theirs.unsigned_number("probe"));
    if (can_read_process((*a.peers)[q].pid, probe, kProbe)) readable += std::to_string(q) + ",";
  }
  const auto readers =
      exchange.swap("cma", bootstrap::Record("shared-memory readers", a.rank).add("readable", readable), a.targets);
  std::vector<int> local_of(a.peers->size(), -1);
  for (int r : local) local_of[r] = local_index(r);
  auto segment_of = [&](int l) -> const Segment& { return local[l] == a.rank ? mine_ : theirs_.at(local[l]); };
  if (geo_.posts()) {
    std::vector<PostArea*> areas;
    for (int l = 0; l < geo_.nlocal; ++l) areas.push_back(segment_of(l).posts(geo_));
    posts_ = std::make_unique<ShmPosts>(std::move(areas), local_index(a.rank), mine_.board(geo_), geo_.board_slot_bytes,
                                        local_of, &wakes_);
  }
  for (int q : a.targets) {
    // fmt, not string + to_string: GCC 12 warns falsely on that (-Wrestrict, GCC bug 105329).
    bool q_reads_me = readers.at(q).text("readable").find(fmt::format(",{},", a.rank)) != std::string::npos;
    if (!q_reads_me && direct_min)
      log::info(log::Shm, "shm: rank {} cannot read this process's memory: copies through slots", q);
    const int me_l = local_index(a.rank), q_l = local_index(q);
    auto post_links = [&](int l) {
      if (!posts_) return PostLinks{};
      return PostLinks{posts_.get(), mine_.posts(geo_), segment_of(l).posts(geo_), segment_of(l).board(geo_),
                       geo_.board_slot_bytes};
    };
    const Segment& theirs_seg = theirs_.at(q);
    std::byte* out_slots = ext ? ext->theirs(q, me_l) : theirs_seg.slot(geo_, me_l, 0);
    std::byte* in_slots = ext ? ext->mine(q_l) : mine_.slot(geo_, q_l, 0);
    links_.emplace(q, std::make_unique<ShmLink>(
                          q, (*a.peers)[q].pid, geo_, theirs_seg.fifo(geo_, me_l), out_slots, mine_.fifo(geo_, q_l),
                          in_slots, direct_min && q_reads_me ? direct_min : SIZE_MAX, cma, ext ? 0 : kInlineBytes,
                          presence, me_l, q_l, post_links(q_l), ext ? nullptr : &wakes_));
    links_.at(q)->watch_health(this);
    int pid = (*a.peers)[q].pid;
    pids_[q] = pid;
    if (pid != getpid()) {
      int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
      if (fd >= 0) pidfds_[q] = fd;
    }
  }
  if (!ext) {
    std::vector<const Segment*> by_local(local.size());
    by_local[local_index(a.rank)] = &mine_;
    for (auto& [q, seg] : theirs_) by_local[local_index(q)] = &seg;
    yielder_ = std::make_unique<Yielder>(geo_, std::move(by_local), local_index(a.rank), std::move(local_of));
  }
  // Everyone attached: the names can go, so a crash later leaves nothing in /dev/shm.
  a.store->set(a.prefix + "/shm_attached/" + std::to_string(a.rank), {});
  for (int q : a.targets) a.store->get(a.prefix + "/shm_attached/" + std::to_string(q), timeout);
  mine_.unlink();
  log::info(log::Shm, "{}: {} local peers, {} slots of {} bytes{}", ext ? "cuda_ipc" : "shm", a.targets.size(), nslots,
            slot, ext ? " in device memory" : "");
}

ShmDomain::~ShmDomain() {
  for (auto& [r, fd] : pidfds_) close(fd);
}

std::string ShmDomain::peer_failure(int peer) {
  auto it = pidfds_.find(peer);
  if (it == pidfds_.end()) return "";
  pollfd p{it->second, POLLIN, 0};
  if (poll(&p, 1, 0) > 0) return "rank " + std::to_string(peer) + " (pid " + std::to_string(pids_[peer]) + ") exited";
  return "";
}

std::string ShmDomain::remote_abort() {
  Control* c = mine_.control();
  if (!c->abort.load(std::memory_order_acquire)) return "";
  return std::string(c->why, strnlen(c->why, sizeof c->why));
}

void ShmDomain::abort(const std::string& why) {
  auto post = [&](Control* c) {
    if (c->claimed.exchange(1) == 0) {
      std::snprintf(c->why, sizeof c->why, "%s", why.c_str());
      c->abort.store(1, std::memory_order_release);
    }
  };
  for (auto& [r, seg] : theirs_) post(seg.control());
}

}  // namespace

bool ShmTransport::can_connect(const PeerInfo& a, const PeerInfo& b) const { return a.host_id == b.host_id; }

std::unique_ptr<Domain> ShmTransport::connect(const ConnectArgs& args) { return connect_fifos(args, FifoOptions{}); }

std::unique_ptr<Domain> connect_fifos(const ConnectArgs& args, FifoOptions opts) {
  return std::make_unique<ShmDomain>(args, std::move(opts));
}

}  // namespace coral::transport::shm
