/* The floor under small all-reduces when ranks outnumber cores: two processes on one CPU,
 * each calling sched_yield in a loop, time one round trip of context switches (A runs, B runs,
 * A runs again). Every call of a collective needs each rank to run at least once after its
 * peers' data landed; a rank can finish its pending call and the next one in one turn on the
 * core, so with two ranks per core a blocking call costs at least half this round trip (one
 * switch per core). One-shot at P=4 on 2 cores takes 1.1 switches per core per call, the ring
 * several.
 * Usage: switch_floor [ROUNDS]   (prints "switch-floor round_trip_us=T") */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 200000;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    perror("switch_floor: sched_setaffinity");
    return 1;
  }
  pid_t child = fork();
  if (child < 0) return 1;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < rounds; i++) sched_yield();
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (child == 0) return 0;
  waitpid(child, NULL, 0);
  double us = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / rounds / 1e3;
  printf("switch-floor round_trip_us=%.3f\n", us);
  return 0;
}
