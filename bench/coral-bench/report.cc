#include "bench/coral-bench/report.h"

#include <fmt/format.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace bench {

namespace {

std::string time_str(double us) {
  char buf[32];
  if (us >= 10000.0)
    std::snprintf(buf, sizeof buf, "%7.0f", us);
  else if (us >= 100.0)
    std::snprintf(buf, sizeof buf, "%7.1f", us);
  else
    std::snprintf(buf, sizeof buf, "%7.2f", us);
  return buf;
}

}  // namespace

std::string human_bytes(size_t b) {
  const char* units[] = {"", "K", "M", "G"};
  int u = 0;
  while (u < 3 && b >= 1024 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + units[u];
}

double avg_busbw(const std::vector<Row>& rows) {
  double sum = 0;
  for (const Row& r : rows) sum += r.oop.busbw + r.ip.busbw;
  return rows.empty() ? 0 : sum / (2.0 * rows.size());
}

size_t total_wrong(const std::vector<Row>& rows) {
  size_t w = 0;
  for (const Row& r : rows) w += r.oop.wrong + r.ip.wrong;
  return w;
}

void print_header(const Options& o, int nranks, const std::vector<std::string>& rank_lines, const Bound& b) {
  if (o.csv) {
    std::printf(
        "size,count,type,redop,root,oop_time_us,oop_algbw,oop_busbw,oop_wrong,ip_time_us,ip_algbw,"
        "ip_busbw,ip_wrong,algo,chunk_bytes,bound_pct\n");
    return;
  }
  std::printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: ", o.min_bytes, o.max_bytes);
  if (o.factor > 1)
    std::printf("%g(factor)", o.factor);
  else
    std::printf("%zu(bytes)", o.step_bytes);
  std::printf(" warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0\n", o.warmup, o.iters, o.check);
  std::printf("#\n# Using devices\n");
  for (const std::string& l : rank_lines) std::printf("%s\n", l.c_str());
  std::printf("#\n# Collective: %s  Ranks: %d  Algorithm: %s  Buffers: %s\n", o.coll_name.c_str(), nranks,
              o.algo.c_str(),
              o.device           ? "GPU (stream-ordered)"
              : o.local_register ? "host, registered (-R 1)"
                                 : "host");
  if (b.gbps > 0) std::printf("# Bound: %.3f GB/s (%s); %%bound = busbw / bound\n", b.gbps, b.what.c_str());
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
              "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  std::printf("  %7s  %6s  %6s %6s", "time", "algbw", "busbw", "#wrong");
  std::printf("  %7s  %6s  %6s %6s", "time", "algbw", "busbw", "#wrong");
  std::printf("  %9s  %6s  %6s\n", "algo", "chunk", "%bound");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  std::printf("  %7s  %6s  %6s %6s", "(us)", "(GB/s)", "(GB/s)", "");
  std::printf("  %7s  %6s  %6s %6s\n", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

void print_row(const Options& o, const Row& r) {
  if (o.csv) {
    std::printf("%zu,%zu,%s,%s,%d,%.3f,%.4f,%.4f,%zu,%.3f,%.4f,%.4f,%zu,%s,%zu,%s\n", r.bytes, r.count, r.type.c_str(),
                r.op.c_str(), r.root, r.oop.time_us, r.oop.algbw, r.oop.busbw, r.oop.wrong, r.ip.time_us, r.ip.algbw,
                r.ip.busbw, r.ip.wrong, r.algo.c_str(), r.chunk_bytes,
                r.bound_pct < 0 ? "" : fmt::format("{:.1f}", r.bound_pct).c_str());
  } else {
    std::printf("%12zu  %12zu  %8s  %6s  %6d", r.bytes, r.count, r.type.c_str(), r.op.c_str(), r.root);
    // nccl-tests' #wrong: N/A when nothing was checked (-c 0).
    for (const Timing* t : {&r.oop, &r.ip})
      std::printf("  %7s  %6.2f  %6.2f  %6s", time_str(t->time_us).c_str(), t->algbw, t->busbw,
                  o.check ? std::to_string(t->wrong).c_str() : "N/A");
    std::printf("  %9s  %6s  %6s\n", r.algo.c_str(), human_bytes(r.chunk_bytes).c_str(),
                r.bound_pct < 0 ? "n/a" : fmt::format("{:.1f}%", r.bound_pct).c_str());
  }
  std::fflush(stdout);
}

void print_footer(const Options& o, const std::vector<Row>& rows) {
  if (o.csv) return;
  size_t w = total_wrong(rows);
  std::printf("# Out of bounds values : %zu %s\n", w, w ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g \n", avg_busbw(rows));
  std::printf("#\n");
  std::fflush(stdout);
}

std::string write_json(const Options& o, int nranks, const Bound& b, const std::vector<Row>& rows) {
  using nlohmann::json;
  json j;
  j["collective"] = o.coll_name;
  j["nranks"] = nranks;
  j["algo_requested"] = o.algo;
  j["iters"] = o.iters;
  j["warmup"] = o.warmup;
  j["bound"] = {{"gbps", b.gbps}, {"what", b.what}};
  for (const Row& r : rows) {
    auto t = [](const Timing& x) {
      return json{{"time_us", x.time_us}, {"algbw", x.algbw}, {"busbw", x.busbw}, {"wrong", x.wrong}};
    };
    j["results"].push_back({{"size", r.bytes},
                            {"count", r.count},
                            {"type", r.type},
                            {"redop", r.op},
                            {"root", r.root},
                            {"out_of_place", t(r.oop)},
                            {"in_place", t(r.ip)},
                            {"algo", r.algo},
                            {"chunk_bytes", r.chunk_bytes},
                            {"bound_pct", r.bound_pct < 0 ? json(nullptr) : json(r.bound_pct)},
                            {"model_us", r.model_us < 0 ? json(nullptr) : json(r.model_us)}});
  }
  j["out_of_bounds"] = total_wrong(rows);
  j["avg_busbw"] = avg_busbw(rows);
  std::ofstream out(o.json);
  out << j.dump(2) << "\n";
  out.close();
  return out ? "" : "cannot write '" + o.json + "': " + std::strerror(errno);
}

std::string write_plot(const Options& o, int nranks, const Bound& b, const std::vector<Row>& rows) {
  std::string data = o.plot + ".dat";
  {
    std::ofstream d(data);
    for (const Row& r : rows) d << r.bytes << " " << r.oop.busbw << " " << r.ip.busbw << "\n";
  }
  std::string script = o.plot + ".gp";
  {
    std::ofstream g(script);
    g << "set terminal pngcairo size 900,560 noenhanced font 'sans,11'\n"
      << "set output '" << o.plot << "'\n"
      << "set title 'coral-bench " << o.coll_name << ", " << nranks << " ranks'\n"
      << "set logscale x 2\nset format x '%.0b%B'\nset xlabel 'message size (bytes)'\n"
      << "set ylabel 'bus bandwidth (GB/s)'\nset grid\nset key top left\nset yrange [0:*]\n";
    g << "plot '" << data << "' using 1:2 with linespoints lw 2 title 'out-of-place', '" << data
      << "' using 1:3 with linespoints lw 2 title 'in-place'";
    if (b.gbps > 0) g << ", " << b.gbps << " with lines dashtype 2 lw 2 title 'bound (" << b.what << ")'";
    g << "\n";
  }
  const bool written = std::ifstream(script).good() && std::ifstream(data).good();
  const bool have = written && std::system("command -v gnuplot >/dev/null 2>&1") == 0;
  int rc = have ? std::system(("gnuplot '" + script + "' 2>&1").c_str()) : -1;
  std::remove(script.c_str());
  std::remove(data.c_str());
  if (!written) return "cannot write next to '" + o.plot + "' (its data and script go there first)";
  if (!have) return "gnuplot is not installed";
  return rc == 0 ? "" : "gnuplot could not make '" + o.plot + "' (exit status " + std::to_string(rc) + ")";
}

}  // namespace bench
