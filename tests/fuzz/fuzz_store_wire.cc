// Fuzz target for the bootstrap store's wire: each input is one connection's bytes, sent to a
// live TcpStoreServer in this process (half the inputs after a valid hello, so Set/Get/Add with
// any lengths are reached). The server must answer only well-formed frames, drop what it
// refuses, and keep serving: a real client's set/get is checked every 64 inputs and at exit.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "base/socket.h"
#include "bootstrap/tcp_store.h"
#include "bootstrap/wire.h"

using namespace coral;
using namespace coral::bootstrap;

namespace {

wire::Secret secret() {
  wire::Secret s;
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(i * 7 + 1);
  return s;
}

TcpStoreServer& server() {
  static TcpStoreServer* s = [] {
    setenv("CORAL_DEBUG", "NONE", 1);  // every refused input would log a line
    return new TcpStoreServer(net::resolve("127.0.0.1", 0), secret(), false, std::chrono::milliseconds(0));
  }();
  return *s;
}

void check_alive() {
  TcpStore client(net::resolve("127.0.0.1", server().port()), secret(), std::chrono::milliseconds(5000));
  client.set("fuzz/alive", Bytes{1, 2, 3});
  if (client.get("fuzz/alive", std::chrono::milliseconds(5000)) != Bytes{1, 2, 3}) __builtin_trap();
}

void send_all(int fd, const uint8_t* p, size_t n) {
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return;  // the server may drop us mid-way
    p += k;
    n -= static_cast<size_t>(k);
  }
}

// Reads until the server closes (it must, once we have shut our side), checking every frame.
void read_replies(int fd) {
  std::vector<uint8_t> in;
  uint8_t buf[65536];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    // libFuzzer's SIGALRM (its -timeout watchdog) interrupts poll: EINTR is no hang.
    int rc;
    do rc = poll(&p, 1, 5000);
    while (rc < 0 && errno == EINTR);
    if (rc <= 0) __builtin_trap();  // a half-closed client left hanging
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k <= 0) break;
    in.insert(in.end(), buf, buf + k);
  }
  size_t pos = 0;
  while (in.size() - pos >= sizeof(wire::Header)) {
    wire::Header h;
    std::memcpy(&h, in.data() + pos, sizeof h);
    if (!wire::check_header(h, true).empty() || h.key_len != 0) __builtin_trap();
    pos += sizeof h + h.value_len;
  }
  if (pos != in.size()) __builtin_trap();  // a truncated reply
}

struct AtExit {
  ~AtExit() {
    if (std::getenv("FUZZ_STORE_FINAL_CHECK")) check_alive();
  }
} at_exit;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static unsigned runs = 0;
  const int port = server().port();
  int fd = net::connect_retry(net::resolve("127.0.0.1", port), net::Clock::now() + std::chrono::seconds(5));
  if (size > 0 && (data[0] & 1)) {
    wire::Header h{wire::kMagic, static_cast<uint8_t>(wire::Msg::Hello), {}, 0, wire::kSecretBytes};
    const wire::Secret s = secret();
    send_all(fd, reinterpret_cast<const uint8_t*>(&h), sizeof h);
    send_all(fd, s.data(), s.size());
  }
  if (size > 1) send_all(fd, data + 1, size - 1);
  shutdown(fd, SHUT_WR);
  read_replies(fd);
  close(fd);
  if (++runs % 64 == 0) check_alive();
  return 0;
}
