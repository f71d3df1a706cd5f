// One suite every transport must pass: ordered tagged messages of every size, flow control at
// the advertised depth, failure and abort reporting, timeouts.
#include <catch2/catch.hpp>

#include <atomic>
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
