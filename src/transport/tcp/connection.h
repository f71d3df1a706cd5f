// A TCP link: one or more non-blocking sockets to one peer. Messages are cut into stripes, one
// per socket, each behind a validated frame header; credits (free receive slots) travel back on
// the frames going the other way, so a sender never sends what the receiver has no room for and
// reading a socket never has to stop. I/O happens on the thread that waits, or on the domain's
// helper threads with CORAL_SOCKET_NTHREADS (see TcpDomain).
#pragma once
#include <sys/uio.h>

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/tcp/memory.h"
#include "transport/tcp/wire.h"
#include "transport/transport.h"

namespace coral::transport::tcp {

class TcpDomain;

struct OutFrame {
  Frame hdr;
  const std::byte* payload = nullptr;
  size_t done = 0;   // bytes of header + payload written so far
  std::string text;  // payload owned by the frame (abort text)
};

struct Sock {
  int fd = -1;
  int index = 0;
  bool open = true;
  std::deque<OutFrame> out;
  // Receive side: a bounce buffer for headers and small payloads; large payloads are read
  // straight into their slot.
  std::unique_ptr<std::byte[]> bounce;
  size_t have = 0;
  bool in_payload = false;
  Frame cur{};
  std::byte* dest = nullptr;
  size_t left = 0;
  uint64_t next_seq = 0;   // no Data frame on this socket may have a lower seq
  uint32_t predict = 0;    // payload bytes of the last frame: the next read asks for one such frame
  bool got_data = false;   // a Data frame ended during this read_socket call
  bool out_armed = false;  // helper-thread mode: EPOLLOUT is on in the owner's epoll set
};

// Helper-thread mode: the domain lock, released around each system call so that threads that
// own other sockets (and the executor) get on meanwhile. nullptr: hold it throughout.
using IoLock = std::unique_lock<std::recursive_mutex>;

class TcpLink : public Link {
 public:
  TcpLink(TcpDomain* dom, int peer, std::string where, const Geometry& g, const std::vector<int>& fds);
  ~TcpLink() override;
  size_t max_message() const override { return geo_.slot_bytes; }
  // Released slots are reported once half the window is free (see recv_release), so up to
  // ceil(n/2) - 1 freed slots may not have reached the sender yet: the room a sender can count
  // on is what is left.
  int max_in_flight() const override { return static_cast<int>(geo_.nslots - (geo_.nslots + 1) / 2 + 1); }
  std::byte* send_acquire(size_t bytes, WaitMonitor& mon) override;
  void send_commit(size_t bytes, uint64_t tag) override;
  Message recv_peek(WaitMonitor& mon, bool want_local) override;
  void recv_read(const Message& m, void* dst) override;
  void recv_release() override;
  bool send_ready(size_t bytes) override;
  bool recv_ready() override;

  // Called by the domain under its lock (see IoLock for io).
  // Reads up to one message from the socket; false once it is closed (take it out of the poll
  // set). One, not all the kernel has: see the definition.
  bool read_socket(int sock, IoLock* io = nullptr);
  // Writes what the kernel takes; true when nothing is left to write.
  bool write_out();
  bool write_socket(int sock, IoLock* io) { return write_socket(socks_[static_cast<size_t>(sock)], io); }
  bool has_output() const;
  // Sends the credits of released slots now (before this side waits, so the peer never stalls on them).
  void push_credits();
  void queue_abort(const std::string& why);
  void queue_bye();
  // "" while healthy, else what happened to the connection.
  const std::string& failure() const { return failed_; }
  bool closed_cleanly() const { return bye_; }
  const std::string& abort_text() const { return abort_text_; }
  Sock& sock(int i) { return socks_[static_cast<size_t>(i)]; }
  int nsocks() const { return static_cast<int>(socks_.size()); }
  int peer() const { return peer_; }

 private:
  void parse(Sock& s);
  void begin_frame(Sock& s);
  void end_frame(Sock& s);
  void lose(const std::string& why);
  bool write_socket(Sock& s, IoLock* io = nullptr);
  // After a wait that ended on a failure: throws the monitor's error (or this link's).
  [[noreturn]] void failed_wait(WaitMonitor& mon);
  void frame_written(const OutFrame& f);
  void queue(int sock, OutFrame f);
  // A frame without a message (credits, abort with its text, goodbye) on socket 0, sent now.
  void send_control(Kind kind, const std::string& text = {});
  // A probe: ready(), a failure or an abort, under the lock, after one pass of progress if needed.
  template <class Ready>
  bool probe(Ready ready);

  TcpDomain* dom_;
  int peer_;
  std::string where_;  // the peer's address, for messages
  Geometry geo_;
  std::vector<Sock> socks_;
  // Sending.
  SlotRing out_ring_;
  std::vector<uint16_t> parts_unwritten_;  // per send slot
  uint64_t out_seq_ = 0;                   // next message to commit
  uint64_t written_seq_ = 0;               // messages below this are wholly in the kernel's hands
  uint32_t credits_;                       // free receive slots at the peer
  // Receiving.
  SlotRing in_ring_;
  std::vector<InSlot> in_slots_;
  uint64_t in_seq_ = 0;      // next message to deliver; those below were released
  uint32_t unreported_ = 0;  // released slots the peer has not been told of
  std::string failed_;
  std::string abort_text_;
  bool bye_ = false;
  unsigned probes_ = 0;  // probes that had to move the sockets: they pace them as a wait's polls do
};

}  // namespace coral::transport::tcp
