// coral-schedule: what an algorithm does, without running it. Prints one rank's schedule step by
// step (and whether the verifier proves it), or predicts times and bus bandwidth on a described
// cluster with the alpha-beta simulator, for rank counts we cannot run.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "base/config.h"
#include "base/error.h"
#include "collectives/registry.h"
#include "collectives/simulate.h"
#include "collectives/verify.h"

using namespace coral::collectives;

namespace {

Coll parse_coll(const std::string& s) {
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast, Coll::Reduce, Coll::Barrier,
                 Coll::AllToAll, Coll::Gather, Coll::Scatter})
    if (s == coll_name(c)) return c;
  throw std::invalid_argument("unknown collective '" + s +
                              "' (allreduce, reducescatter, allgather, broadcast, reduce, barrier, alltoall, gather, "
                              "scatter)");
}

size_t parse_bytes(const std::string& s) {
  try {
    return coral::config::parse_bytes(s);
  } catch (const std::exception&) {
    throw std::invalid_argument("bad size '" + s + "' (bytes, with K, M or G)");
  }
}

std::vector<Algo> algos_of(Coll c) {
  std::vector<Algo> out;
  for (Algo a : {Algo::Ring, Algo::Tree, Algo::Rhd, Algo::RecursiveDoubling, Algo::OneShot, Algo::TwoShot, Algo::Hier,
                 Algo::Chain, Algo::Dissemination, Algo::Pairwise, Algo::Bruck, Algo::Direct})
    if (supports(c, a)) out.push_back(a);
  return out;
}

struct Predict {
  int per_host = 8;
  double intra_us = 1, inter_us = 5, intra_gbs = 200, inter_gbs = 25, msg_us = 0.2;
  std::string min = "8", max = "1G";
  int factor = 8;
  size_t max_steps = 40'000'000;  // simulate only what fits in memory
};

int predict(Coll coll, const std::vector<Algo>& algos, int p, size_t chunk, const Predict& o) {
  Cluster c = Cluster::uniform(p, o.per_host, {o.intra_us * 1e-6, 1 / (o.intra_gbs * 1e9), o.msg_us * 1e-6},
                               {o.inter_us * 1e-6, 1 / (o.inter_gbs * 1e9), o.msg_us * 1e-6});
  std::printf(
      "# %s on %d ranks, %d per host; inside a host %g us + %g GB/s, between hosts %g us + %g GB/s "
      "per rank; %g us per message sent\n# predicted busbw GB/s (time us) by the alpha-beta simulator\n",
      coll_name(coll), p, o.per_host, o.intra_us, o.intra_gbs, o.inter_us, o.inter_gbs, o.msg_us);
  std::printf("%12s", "bytes");
  for (Algo a : algos) std::printf(" %22s", algo_name(a));
  std::printf("  best\n");
  for (size_t bytes = parse_bytes(o.min); bytes <= parse_bytes(o.max); bytes *= static_cast<size_t>(o.factor)) {
    CollArgs args;
    args.coll = coll;
    args.nranks = p;
    args.dtype = coralFloat32;
    const bool per_rank = coll == Coll::ReduceScatter || coll == Coll::AllGather || coll == Coll::AllToAll ||
                          coll == Coll::Gather || coll == Coll::Scatter;
    size_t per = per_rank ? bytes / p : bytes;
    args.count = std::max<size_t>(1, per / 4);
    args.chunk = chunk;
    args.hosts = &c.host;
    std::printf("%12zu", bytes);
    double best = 0;
    std::string best_name = "-";
    for (Algo a : algos) {
      args.rank = 0;
      size_t steps = build(args, a).steps.size() * static_cast<size_t>(p);
      if (steps > o.max_steps) {
        std::printf(" %22s", "(too big to simulate)");
        continue;
      }
      SimResult r = simulate(args, a, c);
      if (!r.error.empty()) throw std::runtime_error(r.error);
      double busbw = 4.0 * args.count * (per_rank ? p : 1) / r.seconds * bus_factor(coll, p) / 1e9;
      std::printf(" %10.2f (%9.1f)", busbw, r.seconds * 1e6);
      if (busbw > best) best = busbw, best_name = algo_name(a);
    }
    std::printf("  %s\n", best_name.c_str());
    if (o.factor <= 1) break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string coll_s = "allreduce", algo_s = "all";
  int p = 4, rank = 0;
  size_t count = 16, chunk = 1 << 16;
  bool do_predict = false, quiet = false;
  Predict o;
  CLI::App app{"coral-schedule: print or time a collective's schedule without running it"};
  app.add_option("-c,--collective", coll_s,
                 "allreduce, reducescatter, allgather, broadcast, reduce, barrier, alltoall, gather, scatter")
      ->capture_default_str();
  app.add_option("-a,--algo", algo_s,
                 "algorithm (ring, tree, rhd, rd, oneshot, twoshot, chain, pairwise, bruck, direct), or all")
      ->capture_default_str();
  app.add_option("-n,--nranks", p, "ranks")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("-r,--rank", rank, "rank whose steps to print")->capture_default_str();
  app.add_option("--count", count, "elements (per rank for reducescatter, allgather, alltoall, gather, scatter)")
      ->capture_default_str();
  app.add_option("--chunk", chunk, "largest message, elements")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("-q,--quiet", quiet, "only the verification line");
  app.add_flag("--predict", do_predict, "predict time and busbw over sizes on a described cluster");
  app.add_option("--per-host", o.per_host, "ranks per host (--predict)")->capture_default_str();
  app.add_option("--intra-us", o.intra_us, "latency inside a host, us")->capture_default_str();
  app.add_option("--intra-gbs", o.intra_gbs, "bandwidth per rank inside a host, GB/s")->capture_default_str();
  app.add_option("--inter-us", o.inter_us, "latency between hosts, us")->capture_default_str();
  app.add_option("--inter-gbs", o.inter_gbs, "bandwidth per rank between hosts, GB/s")->capture_default_str();
  app.add_option("--msg-us", o.msg_us, "sender time per message, us (message rate)")->capture_default_str();
  app.add_option("-b,--minbytes", o.min, "smallest size (--predict)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.max, "largest size (--predict)")->capture_default_str();
  app.add_option("-f,--stepfactor", o.factor, "size multiplier (--predict)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    Coll coll = parse_coll(coll_s);
    std::vector<Algo> algos = algo_s == "all" ? algos_of(coll) : std::vector<Algo>{parse_algo(algo_s)};
    for (Algo a : algos)
      if (!supports(coll, a))
        throw std::invalid_argument(fmt::format("{} has no algorithm '{}'", coll_name(coll), algo_name(a)));
    if (do_predict) return predict(coll, algos, p, chunk, o);
    if (rank < 0 || rank >= p) throw std::invalid_argument(fmt::format("--rank {} is not in 0..{}", rank, p - 1));
    for (Algo a : algos) {
      CollArgs args;
      args.coll = coll;
      args.nranks = p;
      args.rank = rank;
      args.count = count;
      args.chunk = chunk;
      if (!quiet) std::fputs(dump(build(args, a)).c_str(), stdout);
      VerifyResult v = verify(args, a, false);
      std::printf("verify %s %s P=%d count=%zu: %s\n", coll_name(coll), algo_name(a), p, count,
                  v.ok ? "postcondition holds, no deadlock" : ("FAILS: " + v.error).c_str());
      if (!v.ok) return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coral-schedule: %s\n", e.what());
    return 2;
  }
  return 0;
}
