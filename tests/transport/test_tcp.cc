// TCP specifics: the wire checks, striping, interface choice, IPv6, and strangers at the door.
#include <catch2/catch.hpp>

#include <linux/sockios.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "base/socket.h"
#include "bootstrap/exchange.h"
#include "tests/transport/conformance.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/interface.h"
#include "transport/tcp/wire.h"

using namespace conformance;
namespace tcp = coral::transport::tcp;

namespace {

tcp::Hello good_hello(const bootstrap::wire::Secret& token) {
  tcp::Hello h{tcp::kHelloMagic, tcp::kVersion, 0, 2, 0, 1, 3, 256 * 1024, 8, {}};
  std::memcpy(h.token, token.data(), sizeof h.token);
  return h;
}

// A fake rank 0 of a 2-rank job under `prefix` that knows the job's token (as a buggy or
// out-of-date build would): connects to rank 1 and says hello; returns the socket.
int fake_rank0(bootstrap::MemStore& store, const std::string& prefix) {
  const bootstrap::Record rec =
      bootstrap::Record::decode(store.get(prefix + "/addr/1", std::chrono::seconds(10)), "tcp address record", 1);
  bootstrap::wire::Secret token;
  rec.bytes("token", token.data(), token.size());
  int fd = net::connect_retry(net::resolve(rec.text("addr")), net::Clock::now() + std::chrono::seconds(5));
  tcp::Hello h = good_hello(token);
  h.from = 0;
  h.to = 1;
  h.nsocks = 1;
  net::send_all(fd, &h, sizeof h, net::Clock::now() + std::chrono::seconds(5));
  return fd;
}

// Rank 1 of a real tcp domain, across from fake_rank0 (peers must outlive it).
std::unique_ptr<transport::Domain> real_rank1(bootstrap::MemStore& store, const std::string& prefix,
                                              const std::vector<transport::PeerInfo>& peers) {
  transport::ConnectArgs a{&store, prefix, &peers, 1, {0}, 10.0};
  return find("tcp")->connect(a);
}

// Round trip of `msgs` messages of `bytes` from rank 0 to 1 with every byte checked.
std::string transfer(int msgs, size_t bytes) {
  return on_ranks("tcp", 2, [&](int r, transport::Domain& d) {
    Monitor mon(&d, 20);
    transport::Link& l = *d.link(1 - r);
    for (int m = 0; m < msgs; ++m) {
      if (r == 0) {
        std::byte* out = l.send_acquire(bytes, mon);
        for (size_t i = 0; i < bytes; ++i) out[i] = std::byte(static_cast<uint8_t>(i * 31 + m));
        l.send_commit(bytes, static_cast<uint64_t>(m));
      } else {
        transport::Message msg = l.recv_peek(mon, true);
        if (msg.bytes != bytes || msg.tag != static_cast<uint64_t>(m)) fail(coralInternalError, "wrong size or tag");
        for (size_t i = 0; i < bytes; ++i)
          if (msg.data[i] != std::byte(static_cast<uint8_t>(i * 31 + m)))
            fail(coralInternalError, "byte " + std::to_string(i) + " of message " + std::to_string(m));
        l.recv_release();
      }
    }
    d.drain(mon);
  });
}

}  // namespace

TEST_CASE("hello checks: the token, the ranks, the geometry") {
  bootstrap::wire::Secret token = bootstrap::wire::random_secret(), other = bootstrap::wire::random_secret();
  tcp::Geometry g{256 * 1024, 8, 2};
  CHECK(tcp::check_hello(good_hello(token), 3, 4, g, token.data()) == "");
  CHECK(tcp::check_hello(good_hello(other), 3, 4, g, token.data()) == "wrong job secret");
  tcp::Hello h = good_hello(token);
  h.magic = 0x47455420;  // "GET " from a web client
  CHECK_THAT(tcp::check_hello(h, 3, 4, g, token.data()), Catch::Contains("bad magic"));
  h = good_hello(token);
  h.to = 2;
  CHECK_THAT(tcp::check_hello(h, 3, 4, g, token.data()), Catch::Contains("meant for rank 2"));
  h = good_hello(token);
  h.from = 9;
  CHECK_THAT(tcp::check_hello(h, 3, 4, g, token.data()), Catch::Contains("claims rank 9"));
  h = good_hello(token);
  h.nsocks = 4;
  CHECK_THAT(tcp::check_hello(h, 3, 4, g, token.data()), Catch::Contains("CORAL_SOCKET_NSOCKS"));
  h = good_hello(token);
  h.nslots = 4;
  CHECK_THAT(tcp::check_hello(h, 3, 4, g, token.data()), Catch::Contains("CORAL_SOCKET_NSLOTS"));
  h = good_hello(token);
  h.sock = 2;
  CHECK_THAT(tcp::check_hello(h, 3, 4, g, token.data()), Catch::Contains("socket index"));
}

TEST_CASE("frame checks bound every field before it is used") {
  tcp::Geometry g{1 << 20, 4, 2};
  auto data = [](uint32_t total, uint8_t part, uint64_t seq) {
    int n = tcp::nparts_for(total, 2);
    return tcp::Frame{tcp::kFrameMagic,
                      static_cast<uint8_t>(tcp::Kind::Data),
                      part,
                      static_cast<uint16_t>(n),
                      static_cast<uint32_t>(tcp::part_of(total, n, part).bytes),
                      total,
                      0,
                      0,
                      seq,
                      7};
  };
  CHECK(tcp::check_frame(data(100, 0, 0), 0, g, 0, 4) == "");
  CHECK(tcp::check_frame(data(1 << 20, 1, 3), 1, g, 0, 0) == "");
  CHECK_THAT(tcp::check_frame(data(1 << 20, 1, 4), 1, g, 0, 0), Catch::Contains("outside the window"));
  CHECK_THAT(tcp::check_frame(data(1 << 20, 1, 3), 0, g, 0, 0), Catch::Contains("on socket 0"));
  tcp::Frame f = data(100, 0, 0);
  f.total = (1 << 20) + 1;
  CHECK_THAT(tcp::check_frame(f, 0, g, 0, 0), Catch::Contains("exceeds"));
  f = data(100, 0, 0);
  f.bytes = 99;
  CHECK_THAT(tcp::check_frame(f, 0, g, 0, 0), Catch::Contains("expected 100"));
  f = data(100, 0, 0);
  f.magic = 0;
  CHECK_THAT(tcp::check_frame(f, 0, g, 0, 0), Catch::Contains("magic"));
  f = data(100, 0, 0);
  f.credits = 1;
  CHECK_THAT(tcp::check_frame(f, 0, g, 0, 4), Catch::Contains("credits"));
  f = tcp::Frame{tcp::kFrameMagic, static_cast<uint8_t>(tcp::Kind::Abort), 0, 0, 5000, 0, 0, 0, 0, 0};
  CHECK_THAT(tcp::check_frame(f, 0, g, 0, 0), Catch::Contains("too long"));
  f.kind = 77;
  CHECK_THAT(tcp::check_frame(f, 0, g, 0, 0), Catch::Contains("unknown frame kind"));
}

TEST_CASE("stripes cover a message exactly once") {
  for (int nsocks : {1, 2, 3, 4, 16})
    for (size_t total :
         {size_t(0), size_t(1), size_t(65535), size_t(131072), size_t(200001), size_t(1) << 20, size_t(16 << 20) + 5}) {
      int n = tcp::nparts_for(total, nsocks);
      REQUIRE(n >= 1);
      REQUIRE(n <= nsocks);
      size_t next = 0;
      for (int i = 0; i < n; ++i) {
        tcp::Part p = tcp::part_of(total, n, i);
        REQUIRE(p.off == next);
        if (total >= tcp::kMinStripe) REQUIRE(p.bytes > 0);
        next += p.bytes;
      }
      REQUIRE(next == total);
    }
}

TEST_CASE("CORAL_SOCKET_IFNAME selects interfaces like NCCL_SOCKET_IFNAME") {
  CHECK(tcp::ifname_matches("eth", "eth0"));
  CHECK_FALSE(tcp::ifname_matches("eth", "ens3"));
  CHECK(tcp::ifname_matches("ens,eth", "eth1"));
  CHECK(tcp::ifname_matches("^docker,lo", "eth0"));
  CHECK_FALSE(tcp::ifname_matches("^docker,lo", "docker0"));
  CHECK(tcp::ifname_matches("=eth0", "eth0"));
  CHECK_FALSE(tcp::ifname_matches("=eth0", "eth01"));
  CHECK_FALSE(tcp::ifname_matches("^=lo", "lo"));
  {
    Env e("CORAL_SOCKET_IFNAME", "lo");
    auto a = tcp::choose_address("");
    CHECK(a.ifname == "lo");
  }
  {
    Env e("CORAL_SOCKET_IFNAME", "nosuchif");
    CHECK_THROWS_WITH(tcp::choose_address(""), Catch::Contains("CORAL_SOCKET_IFNAME='nosuchif'"));
  }
  {
    Env e("CORAL_SOCKET_FAMILY", "ipx");
    CHECK_THROWS_WITH(tcp::choose_address(""), Catch::Contains("CORAL_SOCKET_FAMILY"));
  }
}

TEST_CASE("striped and single-socket links carry large messages intact") {
  for (const char* nsocks : {"1", "3"}) {
    Env e("CORAL_SOCKET_NSOCKS", nsocks);
    INFO("nsocks " << nsocks);
    CHECK(transfer(20, 256 * 1024) == "");
    CHECK(transfer(50, 130 * 1024 + 3) == "");
  }
}

TEST_CASE("IPv6 links work") {
  Env fam("CORAL_SOCKET_FAMILY", "ipv6");
  Env ifn("CORAL_SOCKET_IFNAME", "lo");
  bool have_v6 = true;
  try {
    tcp::choose_address("");
  } catch (const Error&) {
    have_v6 = false;
  }
  if (!have_v6) {
    WARN("no IPv6 loopback address here: skipped");
    return;
  }
  CHECK(transfer(10, 100000) == "");
}

// Rank 0 sends "ok!" to rank 1, which checks it: the link works.
void exchange_ok(int r, transport::Domain& d) {
  Monitor mon(&d, 20);
  transport::Link& l = *d.link(1 - r);
  if (r == 0) {
    std::memcpy(l.send_acquire(4, mon), "ok!", 4);
    l.send_commit(4, 1);
    d.drain(mon);
  } else {
    transport::Message m = l.recv_peek(mon, true);
    if (m.bytes != 4 || std::memcmp(m.data, "ok!", 4) != 0) fail(coralInternalError, "wrong message");
    l.recv_release();
  }
}

// Rank 0 dials rank 1 while its domain connects, and rank 1 stops listening once rank 0 is in:
// this store holds back everyone's read of rank 1's address until the intruder has knocked.
struct IntruderFirst : bootstrap::MemStore {
  std::atomic<bool>& knocked;
  explicit IntruderFirst(std::atomic<bool>& k) : knocked(k) {}
  bootstrap::Bytes get(const std::string& key, std::chrono::milliseconds timeout) override {
    if (key == "conf/tcp/addr/1")
      while (!knocked) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return bootstrap::MemStore::get(key, timeout);
  }
};

TEST_CASE("a connection with the wrong token is turned away and the job still connects") {
  std::atomic<bool> intruder_done{false};
  auto store = std::make_shared<IntruderFirst>(intruder_done);
  std::string intruder_saw;
  std::thread intruder([&] {
    // Rank 1 accepts from rank 0; knock on its door first with a made-up token.
    const std::string addr =
        bootstrap::Record::decode(store->bootstrap::MemStore::get("conf/tcp/addr/1", std::chrono::seconds(10)),
                                  "tcp address record", 1)
            .text("addr");
    int fd = net::connect_retry(net::resolve(addr), net::Clock::now() + std::chrono::seconds(5));
    tcp::Hello h = good_hello(bootstrap::wire::random_secret());
    h.from = 0;
    h.to = 1;
    h.nsocks = 1;
    net::send_all(fd, &h, sizeof h, net::Clock::now() + std::chrono::seconds(5));
    char c;
    bool closed = !net::recv_all(fd, &c, 1, net::Clock::now() + std::chrono::seconds(5));
    intruder_saw = closed ? "closed" : "data";
    close(fd);
    intruder_done = true;
  });
  std::string err = on_ranks(
      "tcp", 2,
      [&](int r, transport::Domain& d) {
        if (r == 0)  // let the intruder go first
          while (!intruder_done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        exchange_ok(r, d);
      },
      store);
  intruder.join();
  CHECK(err == "");
  CHECK(intruder_saw == "closed");
}

TEST_CASE("strangers that connect and say nothing do not hold up the ranks behind them") {
  std::atomic<bool> knocked{false};
  auto store = std::make_shared<IntruderFirst>(knocked);
  std::vector<int> silent;
  std::thread intruder([&] {
    const std::string addr =
        bootstrap::Record::decode(store->bootstrap::MemStore::get("conf/tcp/addr/1", std::chrono::seconds(10)),
                                  "tcp address record", 1)
            .text("addr");
    for (int i = 0; i < 3; ++i)
      silent.push_back(net::connect_retry(net::resolve(addr), net::Clock::now() + std::chrono::seconds(5)));
    knocked = true;  // queued ahead of rank 0, silent: each used to cost 5 s of waiting for its hello
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::string err = on_ranks(
      "tcp", 2, [&](int r, transport::Domain& d) { exchange_ok(r, d); }, store);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  intruder.join();
  for (int fd : silent) close(fd);
  CHECK(err == "");
  INFO("connected in " << secs << " s");
  CHECK(secs < 10);  // serially it took at least 15 s
}

TEST_CASE("a peer that sends a malformed frame fails the link with the reason, nothing is written") {
  // A fake rank 0 that knows the job's token (as a buggy or out-of-date build would) sends a
  // data frame claiming more bytes than a slot holds.
  auto store = std::make_shared<bootstrap::MemStore>();
  std::vector<transport::PeerInfo> peers = {{0, 1, "a"}, {1, 2, "b"}};
  std::string err;
  std::thread rank1([&] {
    try {
      auto d = real_rank1(*store, "bad", peers);
      Monitor mon(d.get(), 10);
      d->link(0)->recv_peek(mon, true);
      err = "recv returned";
    } catch (const Error& e) {
      err = e.what();
    }
  });
  int fd = fake_rank0(*store, "bad");
  tcp::Frame f{tcp::kFrameMagic, static_cast<uint8_t>(tcp::Kind::Data), 0, 1, 1u << 30, 1u << 30, 0, 0, 0, 1};
  net::send_all(fd, &f, sizeof f, net::Clock::now() + std::chrono::seconds(5));
  rank1.join();
  close(fd);
  CHECK_THAT(err, Catch::Contains("malformed frame") && Catch::Contains("exceeds"));
}

TEST_CASE("a read takes one message and leaves the next ones in the kernel") {
  // Emptying a socket while two small segments are unacknowledged makes the kernel send a bare
  // ACK; later messages stay queued until they are waited for. A fake rank 0 sends three
  // 8-byte messages in one segment. Inline I/O: helper threads read whatever arrives.
  Env inline_io("CORAL_SOCKET_NTHREADS", "0");
  auto store = std::make_shared<bootstrap::MemStore>();
  std::vector<transport::PeerInfo> peers = {{0, 1, "a"}, {1, 2, "b"}};
  std::string err;
  std::vector<int> queued;  // bytes left in the socket after each message is delivered
  std::vector<uint64_t> got;
  std::thread rank1([&] {
    try {
      auto d = real_rank1(*store, "one", peers);
      Monitor mon(d.get(), 10);
      auto* link = dynamic_cast<tcp::TcpLink*>(d->link(0));
      if (!link) fail(coralInternalError, "not a TcpLink");
      for (int m = 0; m < 3; ++m) {
        transport::Message msg = link->recv_peek(mon, true);
        uint64_t v = 0;
        std::memcpy(&v, msg.data, sizeof v);
        got.push_back(v);
        int q = -1;
        ioctl(link->sock(0).fd, SIOCINQ, &q);
        queued.push_back(q);
        link->recv_release();
      }
    } catch (const Error& e) {
      err = e.what();
    }
  });
  int fd = fake_rank0(*store, "one");
  struct {
    tcp::Frame f;
    uint64_t v;
  } msgs[3];
  static_assert(sizeof msgs == 3 * (sizeof(tcp::Frame) + 8));
  for (uint64_t m = 0; m < 3; ++m)
    msgs[m] = {{tcp::kFrameMagic, static_cast<uint8_t>(tcp::Kind::Data), 0, 1, 8, 8, 0, 0, m, 7}, 100 + m};
  net::send_all(fd, msgs, sizeof msgs, net::Clock::now() + std::chrono::seconds(5));
  rank1.join();
  close(fd);
  REQUIRE(err == "");
  CHECK(got == std::vector<uint64_t>{100, 101, 102});
  // The first read found all three in the kernel (one segment) and took only the first.
  CHECK(queued == std::vector<int>{96, 48, 0});
}

TEST_CASE("recv_ready stays false while part of a message is still on the wire") {
  // A fake rank 0 sends a data frame and half its payload. The probe reads that off the socket
  // (the kernel's queue empties) yet must still say no; the other half makes it yes, and the
  // message is whole. Both ways of doing I/O: inline (the probe reads) and helper threads.
  for (const char* threads : {"0", "1"}) {
    INFO("CORAL_SOCKET_NTHREADS=" << threads);
    Env io("CORAL_SOCKET_NTHREADS", threads);
    auto store = std::make_shared<bootstrap::MemStore>();
    std::vector<transport::PeerInfo> peers = {{0, 1, "a"}, {1, 2, "b"}};
    const std::string prefix = std::string("half") + threads;
    std::atomic<bool> half{false}, checked{false};
    std::string err;
    constexpr uint32_t kBytes = 8192;
    // Bounded waits: a failure on one side must not leave the other waiting for ever.
    auto until = [](auto done) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!done()) {
        if (std::chrono::steady_clock::now() > give_up) return false;
        sched_yield();
      }
      return true;
    };
    std::thread rank1([&] {
      try {
        auto d = real_rank1(*store, prefix, peers);
        Monitor mon(d.get(), 10);
        auto* link = dynamic_cast<tcp::TcpLink*>(d->link(0));
        if (!link) fail(coralInternalError, "not a TcpLink");
        if (!until([&] { return half.load(); })) fail(coralInternalError, "the fake peer never sent");
        int queued = 1, polls = 0;
        const bool drained = until([&] {
          if (link->recv_ready()) fail(coralInternalError, "recv_ready with half the payload in");
          if (d->needs_polling()) d->advance();
          if (queued > 0) ioctl(link->sock(0).fd, SIOCINQ, &queued);
          return queued == 0 && ++polls > 100;
        });
        if (!drained) fail(coralInternalError, "the link never read the first half");
        checked = true;
        if (!until([&] {
              if (d->needs_polling()) d->advance();
              return link->recv_ready();
            }))
          fail(coralInternalError, "recv_ready never turned true once the message was whole");
        transport::Message m = link->recv_peek(mon, true);
        if (m.bytes != kBytes || m.tag != 7) fail(coralInternalError, "wrong size or tag");
        for (uint32_t i = 0; i < kBytes; ++i)
          if (m.data[i] != std::byte(static_cast<uint8_t>(i * 7)))
            fail(coralInternalError, "byte " + std::to_string(i));
        link->recv_release();
      } catch (const Error& e) {
        err = e.what();
      }
      checked = true;
    });
    int fd = fake_rank0(*store, prefix);
    struct {
      tcp::Frame f;
      std::byte payload[kBytes];
    } msg;
    msg.f = {tcp::kFrameMagic, static_cast<uint8_t>(tcp::Kind::Data), 0, 1, kBytes, kBytes, 0, 0, 0, 7};
    for (uint32_t i = 0; i < kBytes; ++i) msg.payload[i] = std::byte(static_cast<uint8_t>(i * 7));
    const size_t first = sizeof msg.f + kBytes / 2;
    net::send_all(fd, &msg, first, net::Clock::now() + std::chrono::seconds(5));
    half = true;
    until([&] { return checked.load(); });
    net::send_all(fd, reinterpret_cast<std::byte*>(&msg) + first, sizeof msg - first,
                  net::Clock::now() + std::chrono::seconds(5));
    rank1.join();
    close(fd);
    CHECK(err == "");
  }
}
