// Shared-memory specifics: the yield rule (transport/shm/presence.h), on hand-made presence, and
// the sender's board (transport/shm/board.h).
#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "tests/transport/conformance.h"
#include "transport/shm/connection.h"
#include "transport/shm/memory.h"

namespace shm = coral::transport::shm;

namespace {

// Three local ranks' segments in this process; this thread is local rank 0, pinned so that
// "this CPU" holds still. Ranks 1 and 2 start on another CPU, running.
struct Node {
  shm::Geometry geo{4096, 4, 3};
  shm::Segment seg[3];
  int cpu;
  Node() {
    for (int l = 0; l < 3; ++l) {
      std::string name = "/coral-presence-test-" + std::to_string(getpid()) + "-" + std::to_string(l);
      seg[l] = shm::Segment::create(name, geo.total());
      seg[l].unlink();
    }
    cpu = sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    for (int l = 1; l < 3; ++l) at(l).cpu = cpu + 1;  // elsewhere until a test says otherwise
  }
  ~Node() {
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
    sched_setaffinity(0, sizeof all, &all);
  }
  shm::Presence& at(int l) { return seg[l].control()->presence; }
  shm::FifoCtl& fifo(int owner, int f) { return *seg[owner].fifo(geo, f); }
  shm::Yielder yielder() { return shm::Yielder(geo, {&seg[0], &seg[1], &seg[2]}, 0, {0, 1, 2}); }
  // Local rank l waits until counter (owner, f, tail) reaches target.
  void wait(int l, shm::Watch w, uint32_t target) {
    at(l).target = target;
    at(l).wait = w.encode();
  }
};

// Catch's assertions are not for other threads: ranks throw instead, and on_ranks reports it.
void ensure(bool ok, const char* what) {
  if (!ok) coral::fail(coralInternalError, what);
}

}  // namespace

TEST_CASE("a waiter spins while the rank it awaits runs on another CPU, else yields", "[shm][presence]") {
  Node n;
  shm::Yielder y = n.yielder();
  SECTION("the awaited rank runs elsewhere: its message needs no core of ours") {
    CHECK_FALSE(y.worth_yielding(1));
  }
  SECTION("the awaited rank shares this CPU: it needs the core") {
    n.at(1).cpu = n.cpu;
    CHECK(y.worth_yielding(1));
  }
  SECTION("the awaited rank gave its core away") {
    n.at(1).yielded = 1;
    CHECK(y.worth_yielding(1));
  }
  SECTION("the awaited rank waits for a message not yet sent (maybe from a rank of this CPU)") {
    n.wait(1, shm::Watch{1, 2, false}, 3);  // rank 2's fifo into rank 1: message 3
    n.fifo(1, 2).head = 2;
    CHECK(y.worth_yielding(1));
    n.fifo(1, 2).head = 3;  // sent: rank 1 goes on by itself
    CHECK_FALSE(y.worth_yielding(1));
  }
  SECTION("credit waits compare released counts across the wrap") {
    n.wait(1, shm::Watch{2, 1, true}, 0);  // rank 1's fifo into rank 2: released up to 2^32
    n.fifo(2, 1).tail = 0xffffffffu;
    CHECK(y.worth_yielding(1));
    n.fifo(2, 1).tail = 0;
    CHECK_FALSE(y.worth_yielding(1));
  }
  SECTION("a rank off this host, or none, tells nothing: yield") {
    CHECK(y.worth_yielding(-1));
    CHECK(y.worth_yielding(7));
  }
}

TEST_CASE("a watch survives its encoding", "[shm][presence]") {
  for (shm::Watch w : {shm::Watch{0, 0, false}, shm::Watch{7, 3, true}, shm::Watch{32767, 32767, true}}) {
    uint32_t e = w.encode();
    CHECK(e != 0);
    shm::Watch d = shm::Watch::decode(e);
    CHECK(d.owner == w.owner);
    CHECK(d.fifo == w.fifo);
    CHECK(d.tail == w.tail);
  }
}

// A link whose peer is played by the test: it releases by writing the FIFO's tail.
struct FakeLink {
  shm::Geometry geo{4096, 4, 2};
  shm::FifoCtl out{}, in{};
  shm::ShmLink link;
  explicit FakeLink(shm::ShmBoard* b)
      : link(1, getpid(), geo, &out, nullptr, &in, nullptr, SIZE_MAX, 48, nullptr, 0, 1, b, nullptr) {}
};

TEST_CASE("a board slot comes back only once every reference to it was released", "[shm][board]") {
  std::vector<std::byte> mem(4 * 1024);
  shm::ShmBoard b(mem.data(), 1024, 4, 48);
  FakeLink one(&b), two(&b);
  CHECK(b.acquire(48) == nullptr);    // travels inline instead
  CHECK(b.acquire(1025) == nullptr);  // larger than a slot
  std::byte* first = b.acquire(49);
  REQUIRE(first == mem.data());
  b.note(first, &one.link, 1);
  b.note(first, &two.link, 1);
  for (int k = 1; k < 4; ++k) CHECK(b.acquire(1024) == mem.data() + k * 1024);
  CHECK(b.acquire(64) == nullptr);  // slot 0 is still read by both peers
  one.out.tail = 1;
  CHECK(b.acquire(64) == nullptr);  // and by one
  two.out.tail = 1;
  CHECK(b.acquire(64) == first);
}

TEST_CASE("a vector written once to the board reaches every peer by reference", "[shm][board]") {
  const int kSlots = 5;  // the board's (transport.cc); the FIFOs hold as many with CORAL_SHM_NSLOTS=8
  conformance::Env slots("CORAL_SHM_NSLOTS", "8");
  std::atomic<bool> checked{false};
  std::string err = conformance::on_ranks("shm", 3, [&](int r, coral::transport::Domain& d) {
    conformance::Monitor mon(&d, 20.0);
    if (r == 0) {
      coral::transport::Board* b = d.link(1)->board();
      ensure(b != nullptr, "the shm link has no board");
      ensure(b == d.link(2)->board(), "links of one domain do not share the board");
      for (int i = 0; i < kSlots; ++i) {
        std::byte* buf = b->acquire(4096);
        ensure(buf != nullptr, "a free board slot was refused");
        std::memset(buf, 'a' + i, 4096);
        d.link(1)->send_board(buf, 4096, 100 + i, mon);
        d.link(2)->send_board(buf, 4096, 100 + i, mon);
      }
      ensure(b->acquire(4096) == nullptr, "a slot still read was handed out");  // all are read
      checked = true;
      for (int q = 1; q <= 2; ++q) {
        coral::transport::Message m = d.link(q)->recv_peek(mon, true);
        ensure(m.tag == 7, "unexpected message");
        d.link(q)->recv_release();
      }
      ensure(b->acquire(4096) != nullptr, "a released slot did not come back");
    } else {
      while (!checked) std::this_thread::yield();
      for (int i = 0; i < kSlots; ++i) {
        coral::transport::Message m = d.link(0)->recv_peek(mon, false);
        ensure(m.data != nullptr, "a board message came without its data");
        ensure(m.bytes == 4096, "wrong size");
        ensure(m.tag == static_cast<uint64_t>(100 + i), "wrong tag");
        std::vector<std::byte> want(4096, static_cast<std::byte>('a' + i));
        ensure(std::memcmp(m.data, want.data(), 4096) == 0, "wrong contents");
        d.link(0)->recv_release();
      }
      std::memcpy(d.link(0)->send_acquire(8, mon), "released", 8);
      d.link(0)->send_commit(8, 7);
    }
  });
  CHECK(err == "");
}
