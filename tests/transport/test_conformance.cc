// One suite every transport must pass: ordered tagged messages of every size, flow control at
// the advertised depth, failure and abort reporting, timeouts.
#include <catch2/catch.hpp>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstring>

#include "base/config.h"
#include "tests/transport/conformance.h"

using namespace conformance;

namespace {

std::vector<std::string> transports() {
  std::vector<std::string> names;
  for (transport::Transport* t : transport::built_transports())
    if (t->available()) {
      names.push_back(t->name());
      if (names.back() == "tcp") names.push_back("tcp:threads");
    } else {
      WARN(t->name() << " is not available on this host: not tested");
    }
  return names;
}

uint8_t pattern(int from, uint64_t msg, size_t i) { return static_cast<uint8_t>(from * 131 + msg * 7 + i * 13); }

void send(transport::Link& l, int from, uint64_t msg, size_t bytes, WaitMonitor& mon) {
  std::byte* out = l.send_acquire(bytes, mon);
  for (size_t i = 0; i < bytes; ++i) out[i] = std::byte{pattern(from, msg, i)};
  l.send_commit(bytes, 1000 + msg);
}

// Receives message msg from `from` and checks every byte and the tag; "" when right.
std::string expect(transport::Link& l, int from, uint64_t msg, size_t bytes, WaitMonitor& mon, bool peek) {
  transport::Message m = l.recv_peek(mon, peek);
  std::string why;
  if (m.tag != 1000 + msg)
    why = "tag " + std::to_string(m.tag) + " for message " + std::to_string(msg);
  else if (m.bytes != bytes)
    why = "size " + std::to_string(m.bytes) + " for message " + std::to_string(msg);
  std::vector<uint8_t> got(bytes);
  if (why.empty() && bytes) {
    if (m.data)
      std::memcpy(got.data(), m.data, bytes);
    else
      l.recv_read(m, got.data());
    for (size_t i = 0; i < bytes && why.empty(); ++i)
      if (got[i] != pattern(from, msg, i)) why = "byte " + std::to_string(i) + " of message " + std::to_string(msg);
  }
  l.recv_release();
  return why;
}

// The monitor of a call that a probe said would not wait; a wait that asks it fails. A
// shared-memory wait (wait_until) not ready at its first test asks at once; a network wait asks
// only after a poll and a short sleep, so there it catches the waits that outlast those.
struct NoWait : WaitMonitor {
  NoWait() {
    spin = 0;
    pause_polls = 0;
    sleep_slice_ns = 1;
  }
  void check(int peer) override {
    fail(coralInternalError, "a call waited for rank " + std::to_string(peer) + " although its probe said ready");
  }
};

// Calls done() until it holds, moving the domain along as a probing engine does between passes.
// False when it never does: the bound guards against a hang, it does not time anything.
template <class Done>
bool until(transport::Domain& d, Done done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    if (d.needs_polling()) d.advance();
    sched_yield();
  }
  return true;
}

// Whether probe() holds within `polls` polls (each moving the domain along). A probe that stays
// false for all of them is taken to mean the link is blocked.
template <class Probe>
bool within(transport::Domain& d, int polls, Probe probe) {
  for (int i = 0; i < polls; ++i) {
    if (probe()) return true;
    if (d.needs_polling()) d.advance();
    sched_yield();
  }
  return false;
}

constexpr int kBlockedPolls = 2000;

// Waits (bounded) for another rank's flag.
void await_flag(transport::Domain& d, const std::atomic<bool>& flag, const char* what) {
  if (!until(d, [&] { return flag.load(); })) fail(coralInternalError, std::string("the peer never ") + what);
}

// Sends 64-byte messages (numbered from 0) to a peer that releases none until send_ready stays
// false; returns how many went. The first max_in_flight() must find the probe true at once (the
// transport promises them), each send after a true probe must not wait, and the probe must turn
// false by 2 * max_in_flight() + 8 (where the other cases of this suite draw the line too).
int fill_window(transport::Domain& d, transport::Link& l, int from) {
  const int window = l.max_in_flight(), most = 2 * window + 8;
  NoWait now;
  for (int i = 0; i < most; ++i) {
    if (i < window ? !l.send_ready(64) : !within(d, kBlockedPolls, [&] { return l.send_ready(64); })) {
      if (i < window)
        fail(coralInternalError, "send_ready is false with " + std::to_string(i) +
                                     " messages in flight; max_in_flight is " + std::to_string(window));
      return i;
    }
    send(l, from, static_cast<uint64_t>(i), 64, now);
  }
  fail(coralInternalError, "send_ready still true after " + std::to_string(most) +
                               " messages the peer did not release; max_in_flight is " + std::to_string(window));
}

// Expects the call to throw coralRemoteError whose text has `says`.
template <class Call>
void expect_remote_error(const char* what, const std::string& says, Call call) {
  try {
    call();
  } catch (const Error& e) {
    if (e.code() != coralRemoteError || std::string(e.what()).find(says) == std::string::npos)
      fail(coralInternalError, std::string(what) + ": wrong error: " + e.what());
    return;
  }
  fail(coralInternalError, std::string(what) + " returned instead of reporting the failed peer");
}

}  // namespace

TEST_CASE("messages arrive in order, intact, with their tags, in both directions at once") {
  for (const std::string& name : transports()) {
    INFO(name);
    std::string err = on_ranks(name, 3, [](int r, transport::Domain& d) {
      Monitor mon(&d, 20);
      const size_t max = d.link((r + 1) % 3)->max_message();
      const std::vector<size_t> sizes = {0, 1, 7, 4096, 65537, max / 2 + 3, max};
      int next = (r + 1) % 3, prev = (r + 2) % 3;
      transport::Link& out = *d.link(next);
      transport::Link& in = *d.link(prev);
      // Ring: everyone sends a whole window before reading, then alternates.
      uint64_t sent = 0, got = 0;
      const uint64_t total = 40;
      int window = out.max_in_flight();
      while (got < total) {
        while (sent < total && sent < got + static_cast<uint64_t>(window)) {
          send(out, r, sent, sizes[sent % sizes.size()], mon);
          ++sent;
        }
        std::string why = expect(in, prev, got, sizes[got % sizes.size()], mon, got % 2 == 0);
        if (!why.empty()) fail(coralInternalError, why);
        ++got;
      }
      d.drain(mon);
    });
    CHECK(err == "");
  }
}

TEST_CASE("a sender gets max_in_flight messages ahead, then blocks until the receiver releases") {
  for (const std::string& name : transports()) {
    INFO(name);
    std::atomic<int> committed{0};
    std::atomic<bool> reader_started{false};
    std::string err = on_ranks(name, 2, [&](int r, transport::Domain& d) {
      Monitor mon(&d, 20);
      transport::Link& l = *d.link(1 - r);
      const int window = l.max_in_flight();
      if (r == 0) {
        for (int i = 0; i < 2 * window + 8; ++i) {
          send(l, 0, static_cast<uint64_t>(i), 64, mon);
          committed = i + 1;
        }
        d.drain(mon);
      } else {
        // Give the sender time to fill the window: it must get at least max_in_flight ahead
        // (the schedules count on it) and must then block (bounded memory).
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        int ahead = committed.load();
        if (ahead < window || ahead >= 2 * window + 8)
          fail(coralInternalError,
               "sender got " + std::to_string(ahead) + " messages ahead; max_in_flight is " + std::to_string(window));
        reader_started = true;
        for (int i = 0; i < 2 * window + 8; ++i) {
          std::string why = expect(l, 0, static_cast<uint64_t>(i), 64, mon, true);
          if (!why.empty()) fail(coralInternalError, why);
        }
      }
    });
    CHECK(err == "");
    CHECK(reader_started);
  }
}

TEST_CASE("a waiting rank learns of an abort with its reason") {
  for (const std::string& name : transports()) {
    INFO(name);
    std::string err = on_ranks(name, 2, [](int r, transport::Domain& d) {
      Monitor mon(&d, 20);
      if (r == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        d.abort("rank 0 hit a bad input");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // stay alive: the abort must be what is seen
        return;
      }
      try {
        d.link(0)->recv_peek(mon, true);
        fail(coralInternalError, "recv returned without a message");
      } catch (const Error& e) {
        if (e.code() != coralRemoteError || std::string(e.what()).find("bad input") == std::string::npos)
          fail(coralInternalError, std::string("wrong error: ") + e.what());
      }
    });
    CHECK(err == "");
  }
}

TEST_CASE("a peer that goes away ends the wait with coralRemoteError naming it") {
  for (const std::string& name : transports()) {
    if (name == "shm") continue;  // shm watches processes (pidfd): covered by the multi-process failure test
    INFO(name);
    std::string err = on_ranks(name, 2, [](int r, transport::Domain& d) {
      if (r == 0) return;  // its domain closes at once
      Monitor mon(&d, 20);
      try {
        d.link(0)->recv_peek(mon, true);
        fail(coralInternalError, "recv returned without a message");
      } catch (const Error& e) {
        if (e.code() != coralRemoteError || std::string(e.what()).find("rank 0") == std::string::npos)
          fail(coralInternalError, std::string("wrong error: ") + e.what());
      }
    });
    CHECK(err == "");
  }
}

TEST_CASE("a wait with no sender times out") {
  for (const std::string& name : transports()) {
    INFO(name);
    std::string err = on_ranks(name, 2, [](int r, transport::Domain& d) {
      Monitor mon(&d, 0.3);
      if (r == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(800));
        return;
      }
      try {
        d.link(0)->recv_peek(mon, true);
        fail(coralInternalError, "recv returned without a message");
      } catch (const Error& e) {
        if (e.code() != coralTimeout) fail(coralInternalError, std::string("wrong error: ") + e.what());
      }
    });
    CHECK(err == "");
  }
}

// In the probe cases rank 0 probes and rank 1 plays the peer, so that on_ranks reports rank
// 0's error first; however rank 0 ends, it raises every flag, so the peer need not wait out
// its bound.
struct Flags {
  std::atomic<bool> a{false}, b{false};
};
struct RaiseOnExit {
  Flags& f;
  ~RaiseOnExit() { f.a = f.b = true; }
};

TEST_CASE("recv_ready turns true once a whole message is in, and recv_peek then does not wait") {
  for (const std::string& name : transports()) {
    INFO(name);
    Flags flags;
    std::atomic<bool>&go = flags.a, &done = flags.b;
    std::string err = on_ranks(name, 2, [&](int r, transport::Domain& d) {
      Monitor mon(&d, 20);
      transport::Link& l = *d.link(1 - r);
      const size_t max = l.max_message();
      // Striped and multi-slot sizes too: a probe must wait for a message's every part.
      const std::vector<size_t> sizes = {0, 1, 4096 + 5, max / 2 + 3, max};
      if (r == 1) {
        await_flag(d, go, "asked for the messages");
        for (size_t k = 0; k < sizes.size(); ++k) send(l, 1, k, sizes[k], mon);
        d.drain(mon);
        await_flag(d, done, "finished receiving");  // leaving now would fail the link: probes true
        return;
      }
      RaiseOnExit raise{flags};
      if (within(d, kBlockedPolls, [&] { return l.recv_ready(); }))
        fail(coralInternalError, "recv_ready is true before the peer sent anything");
      go = true;
      NoWait now;
      for (size_t k = 0; k < sizes.size(); ++k) {
        if (!until(d, [&] { return l.recv_ready(); }))
          fail(coralInternalError, "recv_ready never turned true for message " + std::to_string(k));
        std::string why = expect(l, 1, k, sizes[k], now, k % 2 == 0);
        if (!why.empty()) fail(coralInternalError, why);
      }
      if (within(d, kBlockedPolls, [&] { return l.recv_ready(); }))
        fail(coralInternalError, "recv_ready is true after every message was received");
    });
    CHECK(err == "");
  }
}

TEST_CASE("send_ready turns false when the window is full, and true again once the peer releases") {
  for (const std::string& name : transports()) {
    INFO(name);
    Flags flags;
    std::atomic<bool>&released = flags.a, &done = flags.b;
    std::string err = on_ranks(name, 2, [&](int r, transport::Domain& d) {
      Monitor mon(&d, 20);
      transport::Link& l = *d.link(1 - r);
      const int most = 2 * l.max_in_flight() + 8;
      if (r == 1) {
        await_flag(d, released, "filled its window");
        for (int i = 0; i < most; ++i) {
          std::string why = expect(l, 0, static_cast<uint64_t>(i), 64, mon, true);
          if (!why.empty()) fail(coralInternalError, why);
        }
        await_flag(d, done, "finished sending");
        return;
      }
      RaiseOnExit raise{flags};
      int sent = fill_window(d, l, 0);
      released = true;  // the peer now reads everything
      if (!until(d, [&] { return l.send_ready(64); }))
        fail(coralInternalError, "send_ready stays false after the peer released its messages");
      NoWait now;
      send(l, 0, static_cast<uint64_t>(sent++), 64, now);
      for (; sent < most; ++sent) send(l, 0, static_cast<uint64_t>(sent), 64, mon);
      d.drain(mon);
    });
    CHECK(err == "");
  }
}

// Rank 0 fills its window towards rank 1, which reads nothing, so both of rank 0's probes are
// false; then rank 1 aborts (or, with `leave`, goes away). Both probes must turn true, and the
// blocking calls must then report it.
std::string probes_see_failure(const std::string& name, bool leave) {
  Flags flags;
  std::atomic<bool>&filled = flags.a, &done = flags.b;
  return on_ranks(name, 2, [&](int r, transport::Domain& d) {
    Monitor mon(&d, 20);
    transport::Link& l = *d.link(1 - r);
    if (r == 1) {
      await_flag(d, filled, "filled its window");
      if (leave) return;  // its domain closes
      d.abort("rank 1 hit a bad input");
      await_flag(d, done, "saw the abort");  // stay alive: the abort must be what is seen
      return;
    }
    RaiseOnExit raise{flags};
    if (within(d, kBlockedPolls, [&] { return l.recv_ready(); }))
      fail(coralInternalError, "recv_ready is true before the peer sent anything");
    const int filled_to = fill_window(d, l, 0);
    filled = true;
    if (!until(d, [&] { return l.recv_ready(); }))
      fail(coralInternalError, "recv_ready stays false after the peer failed");
    if (!until(d, [&] { return l.send_ready(64); }))
      fail(coralInternalError, "send_ready stays false after the peer failed");
    const std::string says = leave ? "rank 1" : "bad input";
    expect_remote_error("recv_peek", says, [&] { l.recv_peek(mon, true); });
    // A transport that allows more than max_in_flight may still free a slot the probe found
    // taken (the peer's side matched it meanwhile): a send that goes may go, but within the
    // bound, and every probe stays true.
    for (int sent = filled_to;; ++sent) {
      if (sent == 2 * l.max_in_flight() + 8) fail(coralInternalError, "send_acquire never reported the failed peer");
      if (!l.send_ready(64)) fail(coralInternalError, "send_ready turned false again after the peer failed");
      try {
        send(l, 0, static_cast<uint64_t>(sent), 64, mon);
      } catch (const Error& e) {
        if (e.code() != coralRemoteError || std::string(e.what()).find(says) == std::string::npos)
          fail(coralInternalError, std::string("send_acquire: wrong error: ") + e.what());
        break;
      }
    }
  });
}

TEST_CASE("an abort turns both probes true, and the blocking calls report it") {
  for (const std::string& name : transports()) {
    INFO(name);
    CHECK(probes_see_failure(name, false) == "");
  }
}

TEST_CASE("a peer that goes away turns both probes true, and the blocking calls report it") {
  for (const std::string& name : transports()) {
    if (name == "shm") continue;  // shm watches processes (pidfd): threads cannot go away alone
    INFO(name);
    CHECK(probes_see_failure(name, true) == "");
  }
}
