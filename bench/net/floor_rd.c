/* The floor under an 8-byte all-reduce between emulated hosts: recursive doubling with bare TCP
 * sockets (TCP_NODELAY, one per peer, a non-blocking read and sched_yield while waiting), no
 * library at all. What Coral's small-message path is measured against: it cannot beat the
 * kernel's cost per message on this machine. FLOOR_UDP=1 does the exchange with bare UDP
 * datagrams instead (no acknowledgements, no retransmission: a lost datagram ends the run with
 * an error), the floor of any protocol over the kernel's IP stack.
 * Usage: floor_rd RANK NRANKS ADDR_0 ... ADDR_{N-1} PORT   (rank r listens on PORT + r; N a
 * power of two). Prints "floor-rd P=N bytes=8 time_us=T" (or floor-udp) on rank 0. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int dial(const char* addr, int port, int rank) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, addr, &a.sin_addr);
  for (int tries = 0; tries < 500; tries++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr*)&a, sizeof a) == 0) {
      if (write(s, &rank, sizeof rank) != sizeof rank) exit(1);
      return s;
    }
    close(s);
    usleep(10000);
  }
  fprintf(stderr, "floor_rd: cannot reach %s:%d\n", addr, port);
  exit(1);
}

static int udp_port;

static void recv_all(int fd, void* buf, size_t n) {
  char* p = buf;
  while (n > 0) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r < 0 && errno == EAGAIN) {
      sched_yield();
      continue;
    }
    if (r <= 0) {
      perror("floor_rd: recv");
      exit(1);
    }
    p += r;
    n -= (size_t)r;
  }
}

/* UDP: one socket per rank. A datagram from a later round may arrive early, so each is kept in a
 * small queue per sender; rounds of one iteration have distinct partners. */
#define QDEPTH 8
static struct {
  double v[QDEPTH];
  int head, n;
} pending[64];

static void udp_recv(int fd, int from, double* out, double deadline) {
  while (pending[from].n == 0) {
    struct sockaddr_in src;
    socklen_t len = sizeof src;
    double v;
    ssize_t r = recvfrom(fd, &v, sizeof v, MSG_DONTWAIT, (struct sockaddr*)&src, &len);
    if (r < 0 && errno == EAGAIN) {
      if (now() > deadline) {
        fprintf(stderr, "floor_rd: a datagram was lost (no retransmission in the UDP floor)\n");
        exit(1);
      }
      sched_yield();
      continue;
    }
    int q = ntohs(src.sin_port) - udp_port;
    if (r != sizeof v || q < 0 || q >= 64 || pending[q].n == QDEPTH) exit(1);
    pending[q].v[(pending[q].head + pending[q].n++) % QDEPTH] = v;
  }
  *out = pending[from].v[pending[from].head];
  pending[from].head = (pending[from].head + 1) % QDEPTH;
  pending[from].n--;
}

static int udp_main(int rank, int n, char** addrs) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(udp_port + rank), .sin_addr.s_addr = INADDR_ANY};
  struct sockaddr_in to[64];
  if (bind(fd, (struct sockaddr*)&me, sizeof me) != 0) {
    perror("floor_rd: bind");
    return 1;
  }
  for (int j = 0; j < n; j++) {
    to[j] = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(udp_port + j)};
    inet_pton(AF_INET, addrs[j], &to[j].sin_addr);
  }
  sleep(1); /* every rank bound before the first datagram */
  double v = rank, t = 0;
  for (int rep = 0; rep < 2; rep++) {
    const int iters = rep == 0 ? 1000 : 5000;
    double t0 = now();
    for (int it = 0; it < iters; it++)
      for (int m = 1; m < n; m <<= 1) {
        double other;
        if (sendto(fd, &v, sizeof v, 0, (struct sockaddr*)&to[rank ^ m], sizeof to[0]) != sizeof v) return 1;
        udp_recv(fd, rank ^ m, &other, now() + 1.0);
        v = (v + other) * 0.5;
      }
    t = (now() - t0) / iters;
  }
  if (rank == 0) printf("floor-udp P=%d bytes=8 time_us=%.3f\n", n, t * 1e6);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  int rank = atoi(argv[1]), n = atoi(argv[2]);
  if (argc != 4 + n || n < 2 || n > 64 || (n & (n - 1))) return 2;
  int port = atoi(argv[3 + n]), one = 1, fd[64];
  const char* udp = getenv("FLOOR_UDP");
  if (udp && atoi(udp)) {
    udp_port = port;
    return udp_main(rank, n, argv + 3);
  }
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(port + rank), .sin_addr.s_addr = INADDR_ANY};
  if (bind(ls, (struct sockaddr*)&me, sizeof me) != 0 || listen(ls, 64) != 0) {
    perror("floor_rd: listen");
    return 1;
  }
  for (int j = 0; j < rank; j++) fd[j] = dial(argv[3 + j], port + j, rank);
  for (int j = rank + 1; j < n; j++) {
    int s = accept(ls, NULL, NULL), from = -1;
    if (s < 0 || read(s, &from, sizeof from) != sizeof from || from <= rank || from >= n) return 1;
    fd[from] = s;
  }
  for (int j = 0; j < n; j++)
    if (j != rank) setsockopt(fd[j], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  double v = rank, t = 0;
  for (int rep = 0; rep < 2; rep++) { /* a warm-up, then the timed run */
    const int iters = rep == 0 ? 1000 : 5000;
    double t0 = now();
    for (int it = 0; it < iters; it++)
      for (int m = 1; m < n; m <<= 1) {
        double other;
        if (send(fd[rank ^ m], &v, sizeof v, 0) != sizeof v) return 1;
        recv_all(fd[rank ^ m], &other, sizeof other);
        v = (v + other) * 0.5;
      }
    t = (now() - t0) / iters;
  }
  if (rank == 0) printf("floor-rd P=%d bytes=8 time_us=%.3f\n", n, t * 1e6);
  return 0;
}
