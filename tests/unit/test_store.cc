// Stores: semantics, timeouts, and refusal of anything without the job secret.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>
#include <thread>

#include "bootstrap/mem_store.h"
#include "bootstrap/tcp_store.h"
#include "base/error.h"

using namespace coral;
using namespace std::chrono_literals;

namespace {

void exercise(Store& a, Store& b) {
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    a.set("k", to_bytes("value"));
  });
  CHECK(to_string(b.get("k", 5s)) == "value");  // waits for the key
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
  MemStore s;
  exercise(s, s);
}

TEST_CASE("TCP store: two clients see each other's keys") {
  wire::Secret secret = wire::random_secret();
  TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, 0ms);
  auto addr = net::resolve("127.0.0.1", server.port());
  TcpStore a(addr, secret, 5s), b(addr, secret, 5s);
  exercise(a, b);
}

TEST_CASE("TCP store refuses random bytes and wrong secrets; the job still works") {
  wire::Secret secret = wire::random_secret();
  TcpStoreServer server(net::resolve("127.0.0.1", 0), secret, false, 0ms);
  auto addr = net::resolve("127.0.0.1", server.port());
  TcpStore good(addr, secret, 5s);
  good.set("before", to_bytes("1"));

  int junk = raw_connect(server.port());
  std::mt19937 rng(7);
  std::vector<uint8_t> noise(4096);
  for (auto& x : noise) x = static_cast<uint8_t>(rng());
  (void)!send(junk, noise.data(), noise.size(), MSG_NOSIGNAL);
  CHECK(closed_by_server(junk));
  close(junk);

  wire::Secret wrong = secret;
  wrong[0] ^= 1;
  try {
    TcpStore bad(addr, wrong, 2s);
    FAIL("a client with the wrong secret was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("secret"));
  }
  // A header that claims a huge value must be refused before anything is allocated.
  int liar = raw_connect(server.port());
  wire::Header h{wire::kMagic, static_cast<uint8_t>(wire::Msg::Hello), {}, 0, 0xffffffffu};
  (void)!send(liar, &h, sizeof h, MSG_NOSIGNAL);
  CHECK(closed_by_server(liar));
  close(liar);

  CHECK(server.refused() >= 3);
  good.set("after", to_bytes("2"));
  CHECK(to_string(good.get("before", 1s)) == "1");
  CHECK(to_string(good.get("after", 1s)) == "2");
}

TEST_CASE("secrets parse from hex and reject junk") {
  wire::Secret s = wire::random_secret();
  CHECK(wire::secret_from_hex(wire::secret_to_hex(s)) == s);
  CHECK_THROWS(wire::secret_from_hex("abc"));
  CHECK_THROWS(wire::secret_from_hex(std::string(64, 'z')));
}
