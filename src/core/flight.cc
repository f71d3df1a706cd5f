#include "core/flight.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include "kernels/reduce.h"

namespace coral {

namespace {

constexpr auto R = std::memory_order_relaxed;

std::string size_text(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.3g} {}", v, units[u]);
}

const char* algo_text(uint32_t kind) {
  const auto a = static_cast<collectives::Algo>((kind >> 26) & 31u);
  return a == collectives::Algo::Auto ? "schedule" : collectives::algo_name(a);
}

collectives::Coll coll_of(uint32_t kind) { return static_cast<collectives::Coll>(kind & 0xff); }

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\')
      o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      o += fmt::format("\\u{:04x}", c);
    else
      o += c;
  }
  return o;
}

}  // namespace

void FlightBoard::init() {
  kind.store(0, R);
  number.store(0, R);
  count.store(0, R);
  step.store(0, R);
  nsteps.store(0, R);
  state.store(0, R);
  waiting_on.store(-1, R);
  wait_step.store(UINT32_MAX, R);
  done_kind.store(0, R);
  done_number.store(0, R);
  heartbeat_ms.store(0, R);
  pid.store(getpid(), R);
  magic.store(kMagic, std::memory_order_release);
}

bool FlightBoard::waiting() const {
  const uint32_t st = state.load(R);
  return (st == 1 || st == 3) && waiting_on.load(R) >= 0 && wait_step.load(R) == step.load(R);
}

namespace {

// State T or t in /proc/pid/stat: stopped by a signal or traced at a stop.
bool process_stopped(int pid) {
  if (pid <= 0 || pid == getpid()) return false;
  char path[64], buf[512];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t k = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (k <= 0) return false;
  buf[k] = 0;
  const char* paren = std::strrchr(buf, ')');  // the command name may hold spaces and parens
  return paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
}

}  // namespace

FlightStatus FlightStatus::read(const FlightBoard& b) {
  FlightStatus s;
  if (b.magic.load(std::memory_order_acquire) != FlightBoard::kMagic) return s;
  s.known = true;
  s.kind = b.kind.load(R);
  s.number = b.number.load(R);
  s.count = b.count.load(R);
  s.step = b.step.load(R);
  s.nsteps = b.nsteps.load(R);
  s.state = b.state.load(R);
  s.waiting = b.waiting();
  s.waiting_on = s.waiting ? b.waiting_on.load(R) : -1;
  if (s.waiting && s.state == 1) s.quiet_ms = coarse_now_ms() - b.heartbeat_ms.load(R);
  s.stopped = process_stopped(b.pid.load(R));
  s.done_kind = b.done_kind.load(R);
  s.done_number = b.done_number.load(R);
  return s;
}

std::string FlightStatus::to_bytes() const {
  return fmt::format("{} {} {} {} {} {} {} {} {} {} {} {}", kind, number, count, step, nsteps, state, waiting ? 1 : 0,
                     waiting_on, done_kind, done_number, stopped ? 1 : 0, quiet_ms);
}

FlightStatus FlightStatus::from_bytes(const std::string& t) {
  FlightStatus s;
  unsigned long long number = 0, count = 0, done_number = 0;
  int waiting = 0, stopped = 0;
  long long quiet = -1;
  if (std::sscanf(t.c_str(), "%u %llu %llu %u %u %u %d %d %u %llu %d %lld", &s.kind, &number, &count, &s.step,
                  &s.nsteps, &s.state, &waiting, &s.waiting_on, &s.done_kind, &done_number, &stopped, &quiet) != 12)
    return FlightStatus{};
  s.stopped = stopped != 0;
  s.quiet_ms = quiet;
  s.known = true;
  s.number = number;
  s.count = count;
  s.done_number = done_number;
  s.waiting = waiting != 0;
  return s;
}

std::string op_label(uint32_t kind, uint64_t number) {
  if (kind & kFlightBatch) return fmt::format("point-to-point #{}", number);
  if (kind & kFlightInternal)
    return fmt::format("{} (Coral's own, after #{})", collectives::coll_name(coll_of(kind)), number);
  return fmt::format("{} #{}", collectives::coll_name(coll_of(kind)), number);
}

namespace {

// "float sum, 4 MiB"; nothing for a barrier.
std::string args_text(const FlightStatus& s) {
  const auto dtype = static_cast<coralDataType_t>((s.kind >> 8) & 0xff);
  const auto op = static_cast<coralRedOp_t>((s.kind >> 16) & 0xff);
  const collectives::Coll c = coll_of(s.kind);
  if (c == collectives::Coll::Barrier) return "";
  const std::string size = size_text(s.count * kernels::dtype_size(dtype));
  if (c == collectives::Coll::AllReduce || c == collectives::Coll::Reduce || c == collectives::Coll::ReduceScatter)
    return fmt::format("{} {}, {}", kernels::dtype_name(dtype), kernels::op_name(op), size);
  return fmt::format("{}, {}", kernels::dtype_name(dtype), size);
}

}  // namespace

std::string op_detail(const FlightStatus& s) {
  if (s.kind & kFlightBatch) return op_call(s);  // a batch has no step to tell
  const std::string args = args_text(s);
  return fmt::format("{} ({}{}{} step {} of {})", op_label(s.kind, s.number), args, args.empty() ? "" : ", ",
                     algo_text(s.kind), s.step + 1, s.nsteps);
}

std::string op_call(const FlightStatus& s) {
  if (s.kind & kFlightBatch) return fmt::format("point-to-point #{} ({} sends and receives)", s.number, s.count);
  const std::string args = args_text(s);
  return args.empty() ? op_label(s.kind, s.number) : fmt::format("{} ({})", op_label(s.kind, s.number), args);
}

FlightRecorder::FlightRecorder(int rank, int nranks)
    : rank_(rank), nranks_(nranks), epoch_ms_(coarse_now_ms()), board_(&own_) {
  own_.init();
  register_recorder(this);
}

FlightRecorder::~FlightRecorder() { unregister_recorder(this); }

void FlightRecorder::place_board(void* at) {
  if (!at) return;
  auto* b = static_cast<FlightBoard*>(at);
  b->init();
  board_ = b;
}

void FlightRecorder::waiting_on(int peer) {
  FlightBoard& b = *board_;
  const uint32_t step = b.step.load(R);
  const int64_t now = coarse_now_ms();
  b.heartbeat_ms.store(now, R);
  if (b.waiting_on.load(R) == peer && b.wait_step.load(R) == step) return;
  b.waiting_on.store(peer, R);
  b.wait_step.store(step, R);
  if (cur_) cur_->waited_on.store(static_cast<int16_t>(peer), R);
}

std::string FlightRecorder::dump_jsonl(const std::string& why) const {
  const uint64_t n = next_.load(std::memory_order_acquire);
  const int64_t now = coarse_now_ms();
  const FlightStatus s = FlightStatus::read(*board_);
  std::string out = fmt::format(
      "{{\"rank\":{},\"nranks\":{},\"pid\":{},\"event\":\"dump\",\"why\":\"{}\",\"current\":\"{}\",\"state\":\"{}\","
      "\"step\":{},\"nsteps\":{},\"waiting_on\":{},\"last_completed\":\"{}\"}}\n",
      rank_, nranks_, getpid(), json_escape(why), s.number ? op_label(s.kind, s.number) : "",
      s.state == 1   ? "running"
      : s.state == 2 ? "completed"
      : s.state == 3 ? "failed"
                     : "idle",
      s.step + 1, s.nsteps, s.waiting_on, s.done_number ? op_label(s.done_kind, s.done_number) : "");
  for (uint64_t i = n > kEntries ? n - kEntries : 0; i < n; ++i) {
    const Entry& e = ring_[i % kEntries];
    const uint32_t kind = e.kind.load(R);
    const int result = e.result.load(R);
    out += fmt::format(
        "{{\"rank\":{},\"op\":\"{}\",\"dtype\":\"{}\",\"redop\":\"{}\",\"count\":{},\"algo\":\"{}\","
        "\"started_ms_ago\":{},\"step\":{},\"result\":\"{}\",\"waited_on\":{}}}\n",
        rank_, op_label(kind, e.number.load(R)), kernels::dtype_name(static_cast<coralDataType_t>((kind >> 8) & 0xff)),
        kernels::op_name(static_cast<coralRedOp_t>((kind >> 16) & 0xff)), e.count.load(R), algo_text(kind),
        now - epoch_ms_ - static_cast<int64_t>(e.start_ms.load(R)), e.step.load(R) + 1,
        result < 0    ? "running"
        : result == 0 ? "ok"
                      : "failed",
        e.waited_on.load(R));
  }
  return out;
}

void FlightRecorder::dump(const std::string& why, bool or_stderr) const {
  const std::string text = dump_jsonl(why);
  std::string path = dump_path_;
  if (path.empty()) {
    if (or_stderr && ::write(2, text.data(), text.size()) < 0) return;
    return;
  }
  struct stat st;
  if (path.back() == '/' || (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
    path += fmt::format("/coral-flight-{}-{}.jsonl", rank_, getpid());
  // One write per dump on an O_APPEND file: ranks sharing the file do not interleave lines.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const ssize_t k = ::write(fd, text.data(), text.size());
  (void)k;
  ::close(fd);
}

}  // namespace coral
