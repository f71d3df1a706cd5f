/* The floor under an 8-byte all-reduce between emulated hosts: recursive doubling with bare TCP
 * sockets (TCP_NODELAY, one per peer, a non-blocking read and sched_yield while waiting), no
 * library at all. What Coral's small-message path is measured against: it cannot beat the
 * kernel's cost per message on this machine.
 * Usage: floor_rd RANK NRANKS ADDR_0 ... ADDR_{N-1} PORT   (rank r listens on PORT + r; N a
 * power of two). Prints "floor-rd P=N bytes=8 time_us=T" on rank 0. */
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

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  int rank = atoi(argv[1]), n = atoi(argv[2]);
  if (argc != 4 + n || n < 2 || n > 64 || (n & (n - 1))) return 2;
  int port = atoi(argv[3 + n]), one = 1, fd[64];
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
  for (int rep = 0; rep < 2; rep++) {  /* a warm-up, then the timed run */
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
