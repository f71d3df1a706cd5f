// Output: nccl-tests' table (same header, rows and footer, extra columns after theirs), CSV,
// JSON and a gnuplot PNG.
#pragma once
#include <string>
#include <vector>

#include "bench/coral-bench/options.h"

namespace bench {

struct Timing {
  double time_us = 0, algbw = 0, busbw = 0;
  size_t wrong = 0;
};

struct Row {
  size_t bytes, count;
  std::string type, op;
  int root;  // -1 where the collective has none (nccl-tests prints -1)
  Timing oop, ip;
  std::string algo;
  size_t chunk_bytes;
  double bound_pct;  // busbw (out of place) / measured link bandwidth; negative: none measured
  double model_us;   // the cost model's time (coralQueryEstimateUs); negative: not asked (v-forms)
};

struct Bound {
  std::string what;  // e.g. "shm point-to-point, rank 0 -> rank 1"
  double gbps = 0;
};

void print_header(const Options& o, int nranks, const std::vector<std::string>& rank_lines, const Bound& b);
void print_row(const Options& o, const Row& r);
void print_footer(const Options& o, const std::vector<Row>& rows);
// Each returns "" or why the file could not be written.
std::string write_json(const Options& o, int nranks, const Bound& b, const std::vector<Row>& rows);
std::string write_plot(const Options& o, int nranks, const Bound& b, const std::vector<Row>& rows);
double avg_busbw(const std::vector<Row>& rows);
size_t total_wrong(const std::vector<Row>& rows);
std::string human_bytes(size_t b);

}  // namespace bench
