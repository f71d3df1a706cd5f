// The link probe at creation: rank 0 measures the links the cost model prices.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "core/communicator.h"

namespace coral {

// The probe's strict ping-pong runs on this thread, as a collective does: through the engine
// each round trip would also time two hand-offs to the progress thread.
void Communicator::p2p(bool send, void* buf, size_t bytes, int peer) {
  Call c =
      make_call(send ? collectives::Coll::Send : collectives::Coll::Recv, buf, buf, bytes, coralUint8, coralSum, peer);
  wait_idle();
  std::lock_guard<std::mutex> lock(exec_mu_);
  execute(c);
}

// The cost model's link classes, measured: rank 0 times round trips (latency) and a stream of
// large messages (bandwidth) to a rank on its own host and to one on another host, then tells
// everyone. Defaults describe a 100 Gb/s network; a 1 Gb/s one picks different algorithms.
void Communicator::probe_links() {
  int near = -1, far = -1;
  for (int q = 1; q < nranks_; ++q) {
    if (host_index_[q] == host_index_[0] && near < 0) near = q;
    if (host_index_[q] != host_index_[0] && far < 0) far = q;
  }
  collectives::TuneParams& tune = tuner_.params();
  double result[4] = {tune.intra.alpha, tune.intra.beta, tune.inter.alpha, tune.inter.beta};
  const size_t big = std::min<size_t>(chunk_bytes(), 1u << 20);
  std::vector<std::byte> buf(big);
  auto measure = [&](int peer, double* out) {
    using C = std::chrono::steady_clock;
    const int rounds = 16, streams = 8;
    if (rank_ == 0) {
      p2p(true, buf.data(), 8, peer);  // warm-up: connections and caches
      p2p(false, buf.data(), 8, peer);
      auto t0 = C::now();
      for (int i = 0; i < rounds; ++i) {
        p2p(true, buf.data(), 8, peer);
        p2p(false, buf.data(), 8, peer);
      }
      double alpha = std::chrono::duration<double>(C::now() - t0).count() / (2 * rounds);
      t0 = C::now();
      for (int i = 0; i < streams; ++i) p2p(true, buf.data(), big, peer);
      p2p(false, buf.data(), 1, peer);
      double t = std::chrono::duration<double>(C::now() - t0).count();
      out[0] = alpha;
      out[1] = std::max(t - 2 * alpha, 1e-9) / (static_cast<double>(streams) * big);
    } else if (rank_ == peer) {
      p2p(false, buf.data(), 8, 0);
      p2p(true, buf.data(), 8, 0);
      for (int i = 0; i < rounds; ++i) {
        p2p(false, buf.data(), 8, 0);
        p2p(true, buf.data(), 8, 0);
      }
      for (int i = 0; i < streams; ++i) p2p(false, buf.data(), big, 0);
      p2p(true, buf.data(), 1, 0);
    }
  };
  if (near > 0) measure(near, result);
  if (far > 0) measure(far, result + 2);
  run(make_call(collectives::Coll::Broadcast, result, result, 4, coralFloat64, coralSum, 0));
  tune.intra = {result[0], result[1]};
  tune.inter = {result[2], result[3]};
  log::info(log::Tune, "probed links: inside a host {:.1f} us, {:.2f} GB/s; between hosts {:.1f} us, {:.2f} GB/s",
            result[0] * 1e6, 1e-9 / result[1], result[2] * 1e6, 1e-9 / result[3]);
}

}  // namespace coral
