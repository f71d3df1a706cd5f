// The shared-memory transport's yield rule (transport/shm/presence.h), on hand-made presence:
// which waits make giving the core away worth a context switch.
#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <string>

#include "transport/shm/memory.h"

namespace shm = coral::transport::shm;

namespace {

// Three local ranks' segments in this process; this thread is local rank 0, pinned so that
// "this CPU" holds still.
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

}  // namespace

TEST_CASE("a waiter yields only to a rank on its CPU that could run", "[shm][presence]") {
  Node n;
  n.at(1).yielded = 1;  // the awaited rank 1 is off its CPU: only this CPU's ranks decide
  shm::Yielder y = n.yielder();
  SECTION("nobody else on this CPU") { CHECK_FALSE(y.worth_yielding(1)); }
  SECTION("a rank here that is not waiting wants the core") {
    n.at(2).cpu = n.cpu;
    CHECK(y.worth_yielding(1));
  }
  SECTION("a rank here waiting for a message not yet sent cannot run; once sent it can") {
    n.at(2).cpu = n.cpu;
    n.wait(2, shm::Watch{2, 1, false}, 5);  // rank 1's fifo into rank 2: message 5
    n.fifo(2, 1).head = 4;
    CHECK_FALSE(y.worth_yielding(1));
    n.fifo(2, 1).head = 5;
    CHECK(y.worth_yielding(1));
  }
  SECTION("credit waits compare released counts across the wrap") {
    n.at(2).cpu = n.cpu;
    n.wait(2, shm::Watch{1, 2, true}, 0);  // rank 2's fifo into rank 1: released up to 0 (wrapped)
    n.fifo(1, 2).tail = 0xffffffffu;
    CHECK_FALSE(y.worth_yielding(1));
    n.fifo(1, 2).tail = 0;
    CHECK(y.worth_yielding(1));
  }
}

TEST_CASE("a waiter spins while the rank it awaits runs elsewhere", "[shm][presence]") {
  Node n;
  n.at(2).cpu = n.cpu;  // a CPU-mate that could run
  shm::Yielder y = n.yielder();
  SECTION("the awaited rank runs on another CPU: its message needs no core of ours") {
    CHECK_FALSE(y.worth_yielding(1));
    CHECK(y.worth_yielding(2));  // waiting for the CPU-mate itself: let it run
  }
  SECTION("the awaited rank gave its core away") {
    n.at(1).yielded = 1;
    CHECK(y.worth_yielding(1));
  }
  SECTION("the awaited rank waits for something not there (maybe from our CPU-mate)") {
    n.wait(1, shm::Watch{1, 2, false}, 3);
    CHECK(y.worth_yielding(1));
    n.fifo(1, 2).head = 3;  // now it can go on by itself
    CHECK_FALSE(y.worth_yielding(1));
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
