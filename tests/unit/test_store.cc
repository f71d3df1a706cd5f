// Stores: semantics, timeouts, and refusal of anything without the job secret.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "base/error.h"
#include "bootstrap/exchange.h"
#include "bootstrap/mem_store.h"
#include "bootstrap/tcp_store.h"

using namespace coral;
using namespace std::chrono_literals;

namespace {

void exercise(bootstrap::Store& a, bootstrap::Store& b) {
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    a.set("k", bootstrap::to_bytes("value"));
  });
  CHECK(bootstrap::to_string(b.get("k", 5s)) == "value");  // waits for the key
  late.join();
  CHECK(a.add("n", 2) == 2);
  CHECK(b.add("n", 5) == 7);
  try {
    b.get("missing", 100ms);
    FAIL("no timeout");
  } catch (const Error& e) {
    CHECK(e.code() == coralTimeout);
  }
}

int raw_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  return fd;
}

// Reads until the server closes the connection; true if it did within the deadline.
bool closed_by_server(int fd) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[256];
  while (true) {
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k == 0 || (k < 0 && errno == ECONNRESET)) return true;
    if (k < 0) return false;
  }
}

}  // namespace

TEST_CASE("in-memory store") {
  bootstrap::MemStore s;
  exercise(s, s);
}

TEST_CASE("TCP store: two clients see each other's keys") {
  bootstrap::wire::Secret secret = bootstrap::wire::random_secret();
  bootstrap::TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, 0ms);
  auto addr = net::resolve("127.0.0.1", server.port());
  bootstrap::TcpStore a(addr, secret, 5s), b(addr, secret, 5s);
  exercise(a, b);
}

TEST_CASE("TCP store: a client whose wait timed out connects again and goes on") {
  bootstrap::wire::Secret secret = bootstrap::wire::random_secret();
  bootstrap::TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, 0ms);
  auto addr = net::resolve("127.0.0.1", server.port());
  bootstrap::TcpStore a(addr, secret, 5s), b(addr, secret, 5s);
  CHECK_THROWS_AS(a.get("late", 50ms), Error);
  // The key the timed-out wait asked for arrives afterwards; the old reply must not be read as
  // the answer to a later request.
  b.set("late", bootstrap::to_bytes("L"));
  b.set("k", bootstrap::to_bytes("v"));
  CHECK(bootstrap::to_string(a.get("k", 2s)) == "v");
  CHECK(bootstrap::to_string(a.get("late", 2s)) == "L");
  CHECK(a.add("n", 3) == 3);
}

TEST_CASE("TCP store: a server that ends when idle waits for its last client to connect again") {
  // coralGetUniqueId's server: the only client's timed-out wait drops its connection, and its
  // next request reconnects to the server, which must still be there, with the keys.
  bootstrap::wire::Secret secret = bootstrap::wire::random_secret();
  const int port = bootstrap::start_detached_store_server(net::resolve("127.0.0.1", 0), secret, 10s);
  auto addr = net::resolve("127.0.0.1", port);
  bootstrap::TcpStore a(addr, secret, 2s);
  a.set("k", bootstrap::to_bytes("v"));
  CHECK_THROWS_AS(a.get("never", 50ms), Error);
  std::this_thread::sleep_for(500ms);  // the server notices the drop within its 200 ms poll
  CHECK(bootstrap::to_string(a.get("k", 1s)) == "v");
}

TEST_CASE("TCP store: after the server is gone, a request says so") {
  bootstrap::wire::Secret secret = bootstrap::wire::random_secret();
  auto server = std::make_unique<bootstrap::TcpStoreServer>(net::resolve("127.0.0.1", 0), secret, false, 0ms);
  auto addr = net::resolve("127.0.0.1", server->port());
  bootstrap::TcpStore a(addr, secret, 5s);
  CHECK_THROWS_AS(a.get("never", 50ms), Error);
  server.reset();
  try {
    a.get("k", 300ms);
    FAIL("a request to a store that is gone succeeded");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("connecting again"));
  }
}

namespace {

// A wait on a key nobody sets, cancelled from another thread 100 ms in: it must end at once
// with coralRemoteError saying it was given up.
void expect_given_up(bootstrap::Store& store, bootstrap::CancelToken& token) {
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    token.cancel();
  });
  const auto t0 = std::chrono::steady_clock::now();
  try {
    store.get("never", 30s);
    FAIL("the wait was not given up");
  } catch (const Error& e) {
    CHECK(e.code() == coralRemoteError);
    CHECK_THAT(e.what(), Catch::Contains("given up"));
  }
  canceller.join();
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

}  // namespace

TEST_CASE("TCP store: a cancel ends a wait at once, and later requests fail") {
  bootstrap::wire::Secret secret = bootstrap::wire::random_secret();
  bootstrap::TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, 0ms);
  auto addr = net::resolve("127.0.0.1", server.port());
  auto token = std::make_shared<bootstrap::CancelToken>();
  bootstrap::TcpStore a(addr, secret, 60s, token);
  a.set("k", bootstrap::to_bytes("v"));
  expect_given_up(a, *token);
  CHECK_THROWS_AS(a.get("k", 1s), Error);
  // Connecting with a cancelled token fails at once too, whatever the timeout.
  CHECK_THROWS_AS(bootstrap::TcpStore(net::resolve("127.0.0.1", 1), secret, 60s, token), Error);
}

namespace {

// One communicator's view of a shared store (a split child's): cancelling it ends that view's
// wait, while the store goes on serving its other users, over the same client.
void view_cancel(std::shared_ptr<bootstrap::Store> shared) {
  auto token = std::make_shared<bootstrap::CancelToken>();
  bootstrap::CancellableStore view(shared, token);
  view.set("seen", bootstrap::to_bytes("1"));
  CHECK(bootstrap::to_string(shared->get("seen", 1s)) == "1");
  expect_given_up(view, *token);
  // The view stays given up; the store does not.
  CHECK_THROWS_AS(view.get("seen", 1s), Error);
  CHECK_THROWS_AS(view.set("later", bootstrap::to_bytes("x")), Error);
  shared->set("after", bootstrap::to_bytes("2"));
  CHECK(bootstrap::to_string(shared->get("after", 1s)) == "2");
  CHECK(shared->add("count", 3) == 3);
  // A cancel after the reply came leaves the client usable too.
  auto late = std::make_shared<bootstrap::CancelToken>();
  bootstrap::CancellableStore second(shared, late);
  CHECK(bootstrap::to_string(second.get("after", 1s)) == "2");
  late->cancel();
  CHECK(bootstrap::to_string(shared->get("seen", 1s)) == "1");
}

}  // namespace

TEST_CASE("a cancelled view of a shared store gives up its wait; the store serves on") {
  SECTION("TCP") {
    bootstrap::wire::Secret secret = bootstrap::wire::random_secret();
    bootstrap::TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, 0ms);
    view_cancel(std::make_shared<bootstrap::TcpStore>(net::resolve("127.0.0.1", server.port()), secret, 60s));
  }
  SECTION("in memory") { view_cancel(std::make_shared<bootstrap::MemStore>()); }
}

TEST_CASE("TCP store refuses random bytes and wrong secrets; the job still works") {
  bootstrap::wire::Secret secret = bootstrap::wire::random_secret();
  bootstrap::TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, 0ms);
  auto addr = net::resolve("127.0.0.1", server.port());
  bootstrap::TcpStore good(addr, secret, 5s);
  good.set("before", bootstrap::to_bytes("1"));

  int junk = raw_connect(server.port());
  std::mt19937 rng(7);
  std::vector<uint8_t> noise(4096);
  for (auto& x : noise) x = static_cast<uint8_t>(rng());
  (void)!send(junk, noise.data(), noise.size(), MSG_NOSIGNAL);
  CHECK(closed_by_server(junk));
  close(junk);

  bootstrap::wire::Secret wrong = secret;
  wrong[0] ^= 1;
  try {
    bootstrap::TcpStore bad(addr, wrong, 2s);
    FAIL("a client with the wrong secret was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("secret"));
  }
  // A header that claims a huge value must be refused before anything is allocated.
  int liar = raw_connect(server.port());
  bootstrap::wire::Header h{
      bootstrap::wire::kMagic, static_cast<uint8_t>(bootstrap::wire::Msg::Hello), {}, 0, 0xffffffffu};
  (void)!send(liar, &h, sizeof h, MSG_NOSIGNAL);
  CHECK(closed_by_server(liar));
  close(liar);

  CHECK(server.refused() >= 3);
  good.set("after", bootstrap::to_bytes("2"));
  CHECK(bootstrap::to_string(good.get("before", 1s)) == "1");
  CHECK(bootstrap::to_string(good.get("after", 1s)) == "2");
}

TEST_CASE("secrets parse from hex and reject junk") {
  bootstrap::wire::Secret s = bootstrap::wire::random_secret();
  CHECK(bootstrap::wire::secret_from_hex(bootstrap::wire::secret_to_hex(s)) == s);
  CHECK_THROWS(bootstrap::wire::secret_from_hex("abc"));
  CHECK_THROWS(bootstrap::wire::secret_from_hex(std::string(64, 'z')));
}

TEST_CASE("peer records round-trip, and every malformed one is refused naming its rank") {
  using coral::bootstrap::Record;
  Record r("test record", 3);
  const uint8_t raw[5] = {0, 1, 2, 255, 0};
  r.add("host", std::string("node-a")).add("pid", 1234).add("big", uint64_t{1} << 60).add("raw", raw, sizeof raw);
  const Record back = Record::decode(r.encode(), "test record", 3);
  CHECK(back.text("host") == "node-a");
  CHECK(back.number("pid", 1, 1 << 30) == 1234);
  CHECK(back.unsigned_number("big") == uint64_t{1} << 60);
  uint8_t out[5];
  back.bytes("raw", out, sizeof out);
  CHECK(std::memcmp(out, raw, sizeof raw) == 0);

  auto refused = [](auto&& f) {
    try {
      f();
    } catch (const coral::Error& e) {
      CHECK(e.code() == coralRemoteError);
      CHECK_THAT(e.what(), Catch::Contains("test record of rank 3"));
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused([&] { back.text("nope"); }), Catch::Contains("no field 'nope'"));
  CHECK_THAT(refused([&] { back.number("pid", 1, 100); }), Catch::Contains("outside 1 to 100"));
  CHECK_THAT(refused([&] { back.number("host"); }), Catch::Contains("not a number"));
  CHECK_THAT(refused([&] { back.bytes("raw", out, 4); }), Catch::Contains("5 bytes, expected 4"));
  coral::bootstrap::Bytes b = r.encode();
  CHECK_THAT(refused([&] {
               Record::decode({b.begin(), b.end() - 1}, "test record", 3);
             }),
             Catch::Contains("truncated"));
  CHECK_THAT(refused([&] { Record::decode({}, "test record", 3); }), Catch::Contains("truncated"));
  coral::bootstrap::Bytes longer = b;
  longer.push_back(0);
  CHECK_THAT(refused([&] { Record::decode(longer, "test record", 3); }), Catch::Contains("trail"));
  coral::bootstrap::Bytes magic = b;
  magic[0] ^= 1;
  CHECK_THAT(refused([&] { Record::decode(magic, "test record", 3); }), Catch::Contains("magic"));
  coral::bootstrap::Bytes huge = b;
  huge[8] = 0xff;  // the first field name's length
  huge[9] = 0xff;
  CHECK_THAT(refused([&] { Record::decode(huge, "test record", 3); }), Catch::Contains("at most 64"));
  Record twice("test record", 3);
  twice.add("a", 1).add("a", 2);
  CHECK_THAT(refused([&] { Record::decode(twice.encode(), "test record", 3); }), Catch::Contains("'a' twice"));
}

TEST_CASE("fields every rank must agree on are compared, naming the knob and both values") {
  using coral::bootstrap::Record;
  Record mine("r", 0), same("r", 1), other("r", 2);
  mine.add("nslots", 4);
  same.add("nslots", 4);
  other.add("nslots", 8);
  coral::bootstrap::check_agreed(mine, same, 0, {{"nslots", "CORAL_SHM_NSLOTS"}});
  try {
    coral::bootstrap::check_agreed(mine, other, 0, {{"nslots", "CORAL_SHM_NSLOTS"}});
    FAIL("a different value was accepted");
  } catch (const coral::Error& e) {
    CHECK(e.code() == coralInvalidUsage);
    CHECK(std::string(e.what()) == "CORAL_SHM_NSLOTS must be the same on every rank: rank 2 has '8', rank 0 has '4'");
  }
}
