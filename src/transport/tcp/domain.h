// The TCP links of one communicator and their progress engine. By default there is no I/O
// thread: whoever waits (the executor inside a collective, or the progress thread for
// non-blocking calls) drives every socket of the domain, so a message never waits for a thread
// hand-off and a rank that waits on one peer still drains the others. With
// CORAL_SOCKET_NTHREADS=N, N helper threads own the sockets instead (socket i of every link goes
// to thread i % N), so striped messages (CORAL_SOCKET_NSOCKS) move on several cores at once;
// waits then watch a counter the helpers bump. Either way every wait ends on a peer's failure,
// an abort or the deadline (WaitMonitor).
#pragma once
#include <sched.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/wait.h"
#include "transport/net_wait.h"
#include "transport/tcp/connection.h"
#include "transport/transport.h"

namespace coral::transport::tcp {

class TcpDomain : public Domain {
 public:
  explicit TcpDomain(const ConnectArgs& a);
  ~TcpDomain() override;
  Link* link(int peer) override;
  std::string peer_failure(int peer) override;
  std::string remote_abort() override;
  void abort(const std::string& why) override;
  void drain(WaitMonitor& mon) override;
  bool needs_polling() const override { return !threaded(); }
  // Other transports' waits call this: output always moves, input only on every kFullPass-th
  // call (see wait).
  void advance() override {
    if (threaded()) return;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    spin_pass(nullptr, ++advances_);
  }
  // A full pass, every socket read (advance reads only now and then); helper threads read by
  // themselves.
  void check_peers() override {
    if (threaded()) return;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    progress(0);
  }

  // One pass over the sockets: write what is pending, read what arrived. timeout_ms > 0 sleeps
  // until something happens. With small_too false, sockets other than focus's are read only
  // when a stream is backing up in them (kEarlyReadBytes) or the connection ended (see wait).
  void progress(int timeout_ms, const TcpLink* focus = nullptr, bool small_too = true);
  // Writes what is pending and reads only the sockets of `focus`.
  void progress_link(TcpLink* focus);
  // Pass n of a spin: writes, reads focus (if any), and on every kFullPass-th pass the other
  // links as progress(small_too) says, everything on every kFullPass^2-th (see wait).
  void spin_pass(TcpLink* focus, unsigned n);
  // A link queued output (under the lock): written now, or handed to the sockets' helper threads.
  void output_queued(TcpLink* l);
  bool threaded() const { return !io_.empty(); }
  // A peer's abort arrived on some link (under the lock): every link's probes turn ready, as the
  // monitor's check of remote_abort() ends every wait.
  void note_abort() { aborted_ = true; }
  bool aborted() const { return aborted_; }
  // Links take it before touching their queues from the executor's side.
  std::recursive_mutex& mutex() { return mu_; }

  // Credits are not pushed here: a link reports released slots by the time half its window is
  // free, so a peer always keeps max_in_flight() >= 2 messages of room, the depth the schedules
  // are verified against; nothing can deadlock on a credit this side still holds.
  //
  // A spinning wait reads only the link it waits on. Why: reading a small message early,
  // before this side's reply on the same connection carries the acknowledgement, makes the
  // kernel send a bare ACK at once (a second small segment unacknowledged): one more packet
  // through the whole stack per message, which cost a 4-host 8-byte all-reduce 15-40% on 2
  // cores. Every kFullPass-th poll reads the other sockets where a stream is backing up (so
  // bulk senders keep going) or a connection ended (failures show at once); every
  // kFullPass^2-th poll, and every sleep, reads everything (aborts, stray small frames). The
  // schedules need no more: a peer's sends never wait on this side reading them early.
  template <class Ready>
  void wait(WaitMonitor& mon, int peer, Ready ready) {
    if (threaded()) {
      // Test the state only when a helper changed something, and then under the lock.
      uint32_t seen = events_.load(std::memory_order_acquire) - 1;
      // Yield from the first poll, not pause: the helper this waits for may need this core.
      Override<int> yield_first(mon.pause_polls, 0), yield_first_eager(mon.eager_pause_polls, 0);
      wait_until(mon, peer, events_, sleeping_, [&] {
        uint32_t now = events_.load(std::memory_order_acquire);
        if (now == seen) return false;
        seen = now;
        std::lock_guard<std::recursive_mutex> lock(mu_);
        return ready();
      });
      return;
    }
    TcpLink* focus = static_cast<TcpLink*>(link(peer));
    unsigned polls = 0;
    network_wait(
        mon, peer, this, mu_,
        [&] {
          if (focus == nullptr)
            progress(0);
          else
            spin_pass(focus, ++polls);
        },
        [&] { progress(20); }, ready);
  }

 private:
  static constexpr unsigned kFullPass = 16;
  // epoll data of a socket: its peer and its index on the link.
  static uint64_t sock_key(int peer, int sock) {
    return (static_cast<uint64_t>(peer) << 8) | static_cast<uint64_t>(sock);
  }
  static int key_peer(uint64_t key) { return static_cast<int>(key >> 8); }
  static int key_sock(uint64_t key) { return static_cast<int>(key & 0xff); }
  // Input a spinning pass leaves in a socket of another link: the kernel holds it without
  // slowing the sender (its buffers are far larger), and reading it early costs a bare ACK.
  static constexpr int kEarlyReadBytes = 16 << 10;
  struct IoThread {
    int epfd = -1;
    int kick = -1;  // eventfd: output was queued on one of this thread's sockets
    std::atomic<bool> stop{false};
    std::thread thread;
  };
  void connect_all(const ConnectArgs& a);
  // Makes the link to peer over its connected sockets and puts them in the poll set.
  void add_link(int peer, const std::string& where, const Geometry& g, const std::vector<int>& fds);
  void want_write(TcpLink* l);
  void write_pending();
  // Helper-thread mode (domain_threads.cc).
  void start_threads(int n);
  void stop_threads();
  void io_loop(IoThread& t, int index);
  void flush(IoThread& t, TcpLink* l, int sock, IoLock& lk);
  // Lets the helpers work for up to ms with the lock down (held once by the caller, as lk).
  void let_io_run(IoLock& lk, int ms);
  // Output still queued on a healthy link (slow- and rare-path: it visits every link).
  bool any_output();
  // Moves the sockets for up to ms: itself, or through the helpers.
  void pump(IoLock& lk, int ms);
  void set_events(TcpLink* l, bool want_out);

  int nranks_ = 0;
  int epfd_ = -1;
  std::map<int, std::unique_ptr<TcpLink>> links_;
  std::vector<TcpLink*> writers_;  // links with output the kernel has not taken yet
  unsigned advances_ = 0;
  bool aborted_ = false;
  std::vector<std::unique_ptr<IoThread>> io_;
  std::atomic<uint32_t> events_{0};    // bumped by helper threads after any change
  std::atomic<uint32_t> sleeping_{0};  // a wait sleeps on events_
  std::recursive_mutex mu_;  // progress runs on one thread at a time; abort may come from another (recursive: waits
                             // test readiness under it)
};

}  // namespace coral::transport::tcp
