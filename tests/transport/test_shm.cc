// Shared-memory specifics: the yield rule (transport/shm/presence.h), on hand-made presence, and
// posts (transport/shm/post.h), and deferred wakes (transport/shm/wakes.h).
#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/transport/conformance.h"
#include "transport/shm/connection.h"
#include "transport/shm/memory.h"
#include "transport/shm/post.h"

namespace shm = coral::transport::shm;

namespace {

// Three local ranks' segments in this process; this thread is local rank 0, pinned so that
// "this CPU" holds still. Ranks 1 and 2 start on another CPU, running.
struct Node {
  shm::Geometry geo{4096, 4, 3, false, 1024};
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
  SECTION("the awaited rank runs elsewhere: its message needs no core of ours") { CHECK_FALSE(y.worth_yielding(1)); }
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
  SECTION("the awaited rank waits for a post not yet made") {
    n.wait(1, shm::Watch{2, shm::kPostWatch, false}, 9);  // rank 2's post 9
    shm::PostHeader& h = n.seg[2].posts(n.geo)->ring[shm::post_slot(9)];
    h.seq = 1;  // the header's previous post
    CHECK(y.worth_yielding(1));
    h.seq = 9;
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

// Waits that must not happen: the test fails instead of hanging.
struct NoWait : coral::WaitMonitor {
  void check(int peer) override { throw std::runtime_error("waited for rank " + std::to_string(peer)); }
};

// Rank 0's posts in a hand-made node of three local ranks; the readers are played by the test.
struct PostNode {
  std::vector<shm::PostArea> areas{3};
  std::vector<std::byte> board = std::vector<std::byte>(shm::kPostSlots * 1024);
  shm::Wakes wakes;
  shm::ShmPosts posts{{&areas[0], &areas[1], &areas[2]}, 0, board.data(), 1024, {0, 1, 2}, &wakes};
  NoWait mon;
  void post(size_t bytes, uint64_t tag) {
    posts.acquire(bytes, mon);
    const int peers[] = {1, 2};
    posts.commit(bytes, tag, posts.readers(peers, 2));
  }
};

TEST_CASE("a post's header comes back only once every reader acknowledged it", "[shm][post]") {
  PostNode n;
  const uint32_t slots = shm::kPostSlots;
  // Small posts travel in the header's line; larger ones use the board buffer of that header.
  CHECK(n.posts.acquire(48, n.mon) == n.areas[0].ring[1].inline_data);
  CHECK(n.posts.acquire(49, n.mon) == n.board.data() + 1 * 1024);
  CHECK_THROWS(n.posts.acquire(1025, n.mon));
  const int self[] = {0};
  CHECK_THROWS(n.posts.readers(self, 1));
  for (uint32_t s = 1; s <= slots; ++s) {
    CHECK(n.posts.next_free());
    n.post(s % 2 ? 8 : 512, 100 + s);
    CHECK(n.areas[0].ring[shm::post_slot(s)].seq == s);
    CHECK(n.areas[0].ring[shm::post_slot(s)].tag == 100 + s);
  }
  CHECK_FALSE(n.posts.next_free());  // post 1's header is still read by both readers
  CHECK_THROWS(n.post(8, 1));        // so the next post would wait
  n.areas[1].acked[0] = 1;
  CHECK_FALSE(n.posts.next_free());  // and by one
  n.areas[2].acked[0] = slots;       // an acknowledgement covers every earlier post
  CHECK(n.posts.next_free());
  n.post(8, 200);
  CHECK_FALSE(n.posts.next_free());  // post 2 is read by reader 1 still
  n.areas[1].acked[0] = slots;
  for (uint32_t s = 2; s <= slots; ++s) {
    CHECK(n.posts.next_free());
    n.post(8, 200 + s);
  }
}

TEST_CASE("a post's readers are the peers that post named, whatever earlier posts named", "[shm][post]") {
  PostNode n;
  const uint32_t slots = shm::kPostSlots;
  const int both[] = {1, 2}, second[] = {2}, first[] = {1};
  // Headers 1..slots alternate between {1, 2}, {2} and {1}.
  for (uint32_t s = 1; s <= slots; ++s) {
    n.posts.acquire(8, n.mon);
    const int* peers = s % 3 == 1 ? both : s % 3 == 2 ? second : first;
    n.posts.commit(8, s, n.posts.readers(peers, s % 3 == 1 ? 2 : 1));
  }
  // Post 1 went to both: reader 2 alone does not free its header.
  n.areas[2].acked[0] = 1;
  CHECK_FALSE(n.posts.next_free());
  n.areas[1].acked[0] = 1;
  CHECK(n.posts.next_free());
  n.post(8, 100);  // header 1 again, to both
  // Post 2 went to reader 2 only, whose acknowledgement of post 2 frees it; reader 1's stays at 1.
  CHECK_FALSE(n.posts.next_free());
  n.areas[2].acked[0] = 2;
  CHECK(n.posts.next_free());
  n.posts.acquire(8, n.mon);
  n.posts.commit(8, 101, n.posts.readers(second, 1));
  // Post 3 went to reader 1 only.
  CHECK_FALSE(n.posts.next_free());
  n.areas[1].acked[0] = 3;
  CHECK(n.posts.next_free());
  const int self[] = {0, 1};
  CHECK_THROWS(n.posts.readers(self, 2));  // a set with this rank in it is refused, new or not
  CHECK_THROWS(n.posts.readers(self, 2));
  CHECK_THROWS(n.posts.commit(8, 1, 0));  // and so is a set never made
  CHECK_THROWS(n.posts.commit(8, 1, 99));
}

TEST_CASE("deferred wakes reach a sleeper however many other counters were bumped", "[shm][wakes]") {
  std::atomic<uint32_t> word{0}, sleeping{1};
  std::atomic<bool> woke{false}, ready{false};
  std::thread sleeper([&] {
    ready = true;
    coral::futex_wait(&word, 0, 20L * 1000 * 1000 * 1000);  // returns at once if already bumped
    woke = true;
  });
  std::vector<std::atomic<uint32_t>> others(600);
  std::vector<shm::Wakes::Stamp> stamps(others.size(), 0);  // one per pair, as each bump site has
  shm::Wakes::Stamp stamp = 0;
  std::atomic<uint32_t> awake{0};
  while (!ready) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // asleep by now, as a rank would be
  shm::Wakes w;
  // Duplicates of the sleeper's pair among enough distinct ones to fill the list several times:
  // each fill flushes and empties it, and a pair added again later must count again.
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < others.size(); ++i) {
      w.add(&others[i], &awake, stamps[i]);
      w.add(&others[i], &awake, stamps[i]);
    }
    if (round == 2) word = 1;
    w.add(&word, &sleeping, stamp);
    w.add(&word, &sleeping, stamp);
  }
  const auto t0 = std::chrono::steady_clock::now();
  w.flush();
  sleeper.join();
  CHECK(woke);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));  // not the futex timeout
  w.flush();  // nothing left: a second flush wakes no one and does not fail
}

// A poster's readers share one sleeper count (PostArea::sleeping): with a flag, the first
// sleeper to wake would clear it under the second, whose later wakes would then be skipped.
TEST_CASE("readers asleep on one header are all counted and all woken", "[shm][wakes]") {
  shm::PostArea area{};
  std::atomic<uint32_t>& word = area.ring[1].seq;
  struct Sleepy : coral::WaitMonitor {
    Sleepy() {
      spin = 0;                                   // straight to the futex
      sleep_slice_ns = 30L * 1000 * 1000 * 1000;  // a lost wake shows as a 30 s wait
    }
    void check(int) override {}
  };
  auto reader = [&](uint32_t want, std::atomic<bool>* done) {
    return std::thread([&word, &area, want, done] {
      Sleepy mon;
      coral::wait_until(mon, 0, word, area.sleeping, [&] { return word.load() >= want; });
      *done = true;
    });
  };
  auto until = [](auto cond) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!cond() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return cond();
  };
  shm::Wakes wakes;
  std::vector<shm::Wakes::Stamp> stamps(2, 0);
  std::atomic<bool> a{false}, b{false};
  std::thread ta = reader(1, &a), tb = reader(2, &b);
  REQUIRE(until([&] { return area.sleeping.load() == 2; }));
  word = 1;  // wakes both; only the first is done
  wakes.add(&word, &area.sleeping, stamps[0]);
  wakes.flush();
  CHECK(until([&] { return a.load(); }));
  ta.join();
  CHECK(until([&] { return area.sleeping.load() == 1; }));  // the second went back to sleep, counted
  word = 2;
  wakes.add(&word, &area.sleeping, stamps[1]);
  wakes.flush();
  CHECK(until([&] { return b.load(); }));  // not after the 30 s slice
  tb.join();
  CHECK(area.sleeping.load() == 0);
}

TEST_CASE("a vector posted once reaches every local peer in place", "[shm][post]") {
  const int kPosts = static_cast<int>(shm::kPostSlots);
  std::atomic<bool> checked{false};
  std::string err = conformance::on_ranks("shm", 3, [&](int r, coral::transport::Domain& d) {
    conformance::Monitor mon(&d, 20.0);
    if (r == 0) {
      coral::transport::Poster* p = d.link(1)->poster();
      ensure(p != nullptr, "the shm link has no poster");
      ensure(p == d.link(2)->poster(), "links of one domain do not share the poster");
      auto* posts = dynamic_cast<shm::ShmPosts*>(p);
      ensure(posts != nullptr, "not the shm poster");
      const int peers[] = {1, 2};
      auto post = [&](int i) {
        const size_t bytes = i % 2 ? 4096 : 12;  // on the board, then inline
        std::memset(p->acquire(bytes, mon), 'a' + i, bytes);
        p->commit(bytes, 100 + i, p->readers(peers, 2));
      };
      for (int i = 0; i < kPosts; ++i) post(i);
      ensure(!posts->next_free(), "a header still unread was handed out");
      checked = true;
      for (int q = 1; q <= 2; ++q) {
        coral::transport::Message m = d.link(q)->recv_peek(mon, true);
        ensure(m.tag == 7, "unexpected message");
        d.link(q)->recv_release();
      }
      ensure(posts->next_free(), "a released header did not come back");
      post(kPosts);
    } else {
      while (!checked) std::this_thread::yield();
      for (int i = 0; i <= kPosts; ++i) {
        if (i == kPosts) {  // tell rank 0 the first round is read, then take the last post
          std::memcpy(d.link(0)->send_acquire(8, mon), "released", 8);
          d.link(0)->send_commit(8, 7);
        }
        const size_t bytes = i % 2 ? 4096 : 12;
        coral::transport::Message m = d.link(0)->post_peek(mon);
        ensure(m.bytes == bytes, "wrong size");
        ensure(m.tag == static_cast<uint64_t>(100 + i), "wrong tag");
        std::vector<std::byte> want(bytes, static_cast<std::byte>('a' + i));
        ensure(std::memcmp(m.data, want.data(), bytes) == 0, "wrong contents");
        d.link(0)->post_release();
      }
    }
  });
  CHECK(err == "");
}
