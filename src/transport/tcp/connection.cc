#include "transport/tcp/connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "base/error.h"
#include "transport/tcp/domain.h"

namespace coral::transport::tcp {

namespace {
constexpr size_t kBounce = 64 * 1024;
constexpr int kMaxIov = 32;
}  // namespace

TcpLink::TcpLink(TcpDomain* dom, int peer, std::string where, const Geometry& g, const std::vector<int>& fds)
    : dom_(dom),
      peer_(peer),
      where_(std::move(where)),
      geo_(g),
      out_ring_(g.slot_bytes, g.nslots),
      parts_unwritten_(g.nslots, 0),
      credits_(g.nslots),
      in_ring_(g.slot_bytes, g.nslots),
      in_slots_(g.nslots) {
  socks_.resize(fds.size());
  for (size_t i = 0; i < fds.size(); ++i) {
    socks_[i].fd = fds[i];
    socks_[i].index = static_cast<int>(i);
  }
}

TcpLink::~TcpLink() {
  for (Sock& s : socks_)
    if (s.fd >= 0) close(s.fd);
}

// ---- sending ----

std::byte* TcpLink::send_acquire(size_t bytes, WaitMonitor& mon) {
  if (bytes > geo_.slot_bytes) fail(coralInternalError, "tcp: message larger than a slot");
  // The readiness tests end the wait on a failure too; the failure is reported outside them,
  // never while holding the domain lock (a helper thread may need it to see other peers go).
  dom_->wait(mon, peer_, [&] { return !failed_.empty() || (credits_ > 0 && out_seq_ - written_seq_ < geo_.nslots); });
  {
    std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
    if (failed_.empty()) return out_ring_.at(out_seq_);
  }
  failed_wait(mon);
}

void TcpLink::failed_wait(WaitMonitor& mon) {
  mon.check(peer_);  // names every rank lost, or the abort that explains it
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  fail(coralRemoteError, failed_);
}

void TcpLink::send_commit(size_t bytes, uint64_t tag) {
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  const int n = nparts_for(bytes, nsocks());
  const std::byte* base = out_ring_.at(out_seq_);
  parts_unwritten_[out_seq_ % geo_.nslots] = static_cast<uint16_t>(n);
  for (int i = 0; i < n; ++i) {
    Part p = part_of(bytes, n, i);
    OutFrame f;
    f.hdr = Frame{kFrameMagic,
                  static_cast<uint8_t>(Kind::Data),
                  static_cast<uint8_t>(i),
                  static_cast<uint16_t>(n),
                  static_cast<uint32_t>(p.bytes),
                  static_cast<uint32_t>(bytes),
                  0,
                  0,
                  out_seq_,
                  tag};
    f.payload = base + p.off;
    queue(i, std::move(f));
  }
  --credits_;
  ++out_seq_;
  dom_->output_queued(this);
}

void TcpLink::queue(int sock, OutFrame f) {
  if (!failed_.empty()) return;  // nobody reads it any more; the wait reports the failure
  if (sock == 0) {               // released slots ride along for free
    f.hdr.credits = unreported_;
    unreported_ = 0;
  }
  socks_[static_cast<size_t>(sock)].out.push_back(std::move(f));
}

void TcpLink::send_control(Kind kind, const std::string& text) {
  OutFrame f;
  f.text = text.substr(0, kMaxAbortText);
  f.hdr = Frame{kFrameMagic, static_cast<uint8_t>(kind), 0, 0, static_cast<uint32_t>(f.text.size()), 0, 0, 0, 0, 0};
  queue(0, std::move(f));
  dom_->output_queued(this);
}

void TcpLink::push_credits() {
  if (unreported_ > 0 && failed_.empty()) send_control(Kind::Credit);
}

void TcpLink::queue_abort(const std::string& why) { send_control(Kind::Abort, why); }

void TcpLink::queue_bye() { send_control(Kind::Bye); }

bool TcpLink::has_output() const {
  for (const Sock& s : socks_)
    if (!s.out.empty()) return true;
  return false;
}

bool TcpLink::write_out() {
  bool done = true;
  for (Sock& s : socks_) done &= write_socket(s);
  return done;
}

bool TcpLink::write_socket(Sock& s, IoLock* io) {
  while (!s.out.empty() && failed_.empty()) {
    iovec iov[kMaxIov];
    int n = 0;
    size_t want = 0;
    for (auto it = s.out.begin(); it != s.out.end() && n + 2 <= kMaxIov; ++it) {
      size_t hdr = sizeof(Frame), body = it->hdr.bytes;
      const std::byte* payload = it->text.empty() ? it->payload : reinterpret_cast<const std::byte*>(it->text.data());
      if (it->done < hdr) {
        iov[n++] = {reinterpret_cast<char*>(&it->hdr) + it->done, hdr - it->done};
        if (body) iov[n++] = {const_cast<std::byte*>(payload), body};
      } else {
        iov[n++] = {const_cast<std::byte*>(payload) + (it->done - hdr), hdr + body - it->done};
      }
      want += hdr + body - it->done;
    }
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = static_cast<size_t>(n);
    // Frames only leave the queue's front, on this thread: what iov points at stays put even if
    // the executor queues more while the lock is down.
    if (io) io->unlock();
    ssize_t k = sendmsg(s.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    const int err = errno;
    if (io) io->lock();
    if (k < 0) {
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return false;
      lose(fmt::format("connection to rank {} ({}) failed: {}", peer_, where_, std::strerror(err)));
      break;
    }
    size_t left = static_cast<size_t>(k);
    while (left > 0 || (!s.out.empty() && s.out.front().done == sizeof(Frame) + s.out.front().hdr.bytes)) {
      OutFrame& f = s.out.front();
      size_t rest = sizeof(Frame) + f.hdr.bytes - f.done;
      size_t take = std::min(rest, left);
      f.done += take;
      left -= take;
      if (f.done < sizeof(Frame) + f.hdr.bytes) break;
      frame_written(f);
      s.out.pop_front();
    }
    if (static_cast<size_t>(k) < want) return false;  // the kernel's buffer is full
  }
  if (!failed_.empty()) s.out.clear();
  return true;
}

void TcpLink::frame_written(const OutFrame& f) {
  if (static_cast<Kind>(f.hdr.kind) != Kind::Data) return;
  --parts_unwritten_[f.hdr.seq % geo_.nslots];
  while (written_seq_ < out_seq_ && parts_unwritten_[written_seq_ % geo_.nslots] == 0) ++written_seq_;
}

// ---- receiving ----

Message TcpLink::recv_peek(WaitMonitor& mon, bool) {
  InSlot* slot = &in_slots_[in_seq_ % geo_.nslots];
  auto ready = [&] { return slot->nparts != 0 && slot->received == slot->nparts; };
  dom_->wait(mon, peer_, [&] { return ready() || !failed_.empty(); });
  {
    std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
    if (ready()) return Message{in_ring_.at(in_seq_), slot->total, slot->tag};
  }
  failed_wait(mon);
}

// ---- probes ----

// The tests of send_acquire's and recv_peek's waits. Without helper threads nobody else moves
// the sockets, so a probe that finds nothing makes one pass of the wait's progress (writes, this
// link's input, now and then the other links'). The abort test stands in for the monitor's
// check: an aborted wait ends through it, not through these tests.
template <class Ready>
bool TcpLink::probe(Ready ready) {
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  auto done = [&] { return ready() || !failed_.empty() || dom_->aborted(); };
  if (done()) return true;
  if (dom_->threaded()) return false;
  dom_->spin_pass(this, ++probes_);
  return done();
}

bool TcpLink::send_ready(size_t bytes) {
  if (bytes > geo_.slot_bytes) return true;  // send_acquire reports that at once
  return probe([&] { return credits_ > 0 && out_seq_ - written_seq_ < geo_.nslots; });
}

bool TcpLink::recv_ready() {
  return probe([&] {
    const InSlot& slot = in_slots_[in_seq_ % geo_.nslots];
    return slot.nparts != 0 && slot.received == slot.nparts;
  });
}

void TcpLink::recv_read(const Message& m, void* dst) {
  if (m.bytes) std::memcpy(dst, m.data, m.bytes);
}

void TcpLink::recv_release() {
  std::lock_guard<std::recursive_mutex> lock(dom_->mutex());
  in_slots_[in_seq_ % geo_.nslots] = InSlot{};
  ++in_seq_;
  ++unreported_;
  // Half the window freed: tell the peer now rather than stall its pipeline.
  if (unreported_ * 2 >= geo_.nslots) push_credits();
}

void TcpLink::lose(const std::string& why) {
  if (failed_.empty()) failed_ = why;
}

// Each call reads one Data frame, asking for a header plus as many payload bytes as the last
// frame had, and leaves later frames in the kernel. Why: a read that empties the socket while
// two small segments are unacknowledged makes the kernel send a bare ACK at once. Two such
// segments are common: a peer one step ahead sends its next message before this side's reply,
// which would carry the acknowledgement, has gone out. Left queued, that message is read after
// the reply, and no extra packet crosses the stack (a 4-host 8-byte all-reduce sent 0.7 bare
// ACKs per call on one link before this).
bool TcpLink::read_socket(int index, IoLock* io) {
  Sock& s = socks_[static_cast<size_t>(index)];
  if (!s.open) return false;
  if (!s.bounce) s.bounce.reset(new std::byte[kBounce]);
  s.got_data = false;
  while (failed_.empty()) {
    bool direct = s.in_payload && s.have == 0 && s.left >= kBounce;
    std::byte* to = direct ? s.dest : s.bounce.get() + s.have;
    size_t want = s.in_payload ? s.left : sizeof(Frame) + s.predict - s.have;  // parse leaves have < a header
    size_t room = direct ? s.left : std::min(kBounce - s.have, want);
    // Only this thread touches the socket, its bounce buffer and the slot part it fills.
    if (io) io->unlock();
    ssize_t n = recv(s.fd, to, room, MSG_DONTWAIT);
    const int err = errno;
    if (io) io->lock();
    if (n < 0) {
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return true;
      lose(fmt::format("connection to rank {} ({}) failed: {}", peer_, where_, std::strerror(err)));
      break;
    }
    if (n == 0) {
      // The goodbye travels on socket 0, so only socket 0's end tells a crash from a clean
      // close. After a goodbye, stripes of the peer's last messages may still be queued on the
      // other sockets: the link ends with its last socket.
      s.open = false;
      if (!bye_ && index == 0)
        lose(fmt::format("connection to rank {} ({}) closed", peer_, where_));
      else if (bye_ && std::none_of(socks_.begin(), socks_.end(), [](const Sock& o) { return o.open; }))
        lose(fmt::format("rank {} ({}) closed its communicator", peer_, where_));
      return false;
    }
    if (direct) {
      s.dest += n;
      s.left -= static_cast<size_t>(n);
      if (s.left == 0) end_frame(s);
    } else {
      s.have += static_cast<size_t>(n);
      parse(s);
    }
    if (static_cast<size_t>(n) < room || s.got_data) return failed_.empty();  // drained, or a message in
  }
  s.open = false;
  return false;
}

void TcpLink::parse(Sock& s) {
  size_t pos = 0;
  while (failed_.empty()) {
    if (!s.in_payload) {
      if (s.have - pos < sizeof(Frame)) break;
      std::memcpy(&s.cur, s.bounce.get() + pos, sizeof(Frame));
      pos += sizeof(Frame);
      begin_frame(s);
    } else {
      size_t take = std::min(s.have - pos, s.left);
      if (take == 0) break;
      std::memcpy(s.dest, s.bounce.get() + pos, take);
      s.dest += take;
      s.left -= take;
      pos += take;
      if (s.left == 0) end_frame(s);
    }
  }
  if (!failed_.empty()) pos = s.have;
  std::memmove(s.bounce.get(), s.bounce.get() + pos, s.have - pos);
  s.have -= pos;
}

void TcpLink::begin_frame(Sock& s) {
  const Frame& f = s.cur;
  std::string why = check_frame(f, s.index, geo_, in_seq_, credits_);
  if (why.empty() && static_cast<Kind>(f.kind) == Kind::Data) {
    if (f.seq < s.next_seq || (s.index == 0 && f.seq != s.next_seq))
      why = fmt::format("message {} out of order", f.seq);
    InSlot& slot = in_slots_[f.seq % geo_.nslots];
    if (why.empty() && slot.nparts != 0 &&
        (slot.seq != f.seq || slot.total != f.total || slot.tag != f.tag || slot.nparts != f.nparts))
      why = fmt::format("stripes of message {} disagree", f.seq);
    if (why.empty()) {
      if (slot.nparts == 0) slot = InSlot{f.seq, f.tag, f.total, f.nparts, 0};
      s.next_seq = f.seq + 1;
      s.dest = in_ring_.at(f.seq) + part_of(f.total, f.nparts, s.index).off;
    }
  }
  if (!why.empty()) {
    lose(fmt::format("rank {} ({}) sent a malformed frame: {}", peer_, where_, why));
    return;
  }
  credits_ += f.credits;
  if (static_cast<Kind>(f.kind) == Kind::Abort) {
    abort_text_.assign(f.bytes, '\0');
    s.dest = reinterpret_cast<std::byte*>(abort_text_.data());
  }
  s.left = f.bytes;
  s.predict = static_cast<uint32_t>(std::min<size_t>(f.bytes, kBounce / 2));
  s.in_payload = true;
  if (s.left == 0) end_frame(s);
}

void TcpLink::end_frame(Sock& s) {
  s.in_payload = false;
  switch (static_cast<Kind>(s.cur.kind)) {
    case Kind::Data:
      ++in_slots_[s.cur.seq % geo_.nslots].received;
      s.got_data = true;
      break;
    case Kind::Bye:
      bye_ = true;
      break;
    case Kind::Abort:
      if (abort_text_.empty()) abort_text_ = fmt::format("rank {} aborted", peer_);
      dom_->note_abort();
      break;
    case Kind::Credit:
      break;
  }
}

}  // namespace coral::transport::tcp
