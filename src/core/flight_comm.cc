// The communicator's side of the flight recorder (flight.h): where its board lives, how its
// monitors read the other ranks' boards, and what an operation's end records.
#include <fmt/format.h>

#include "base/error.h"
#include "core/communicator.h"

namespace coral {

void Communicator::start_flight() {
  flight_ = std::make_unique<FlightRecorder>(rank_, nranks_);
  flight_->set_dump_path(settings_.dump_on_timeout);
  static_assert(sizeof(FlightBoard) <= transport::Domain::kBoardBytes);
  for (auto& d : host_.domains)
    if (void* b = d->own_board()) {
      flight_->place_board(b);
      break;
    }
  flight_peers_.recorder = flight_.get();
  flight_peers_.read = [this](int r) { return rank_status(r); };
  flight_peers_.read_local = [this](int r) { return rank_status(r, true); };
  // Every rank of this host as seen from here, this one's included: a rank that is stopped or
  // idle publishes nothing itself, but its local peers see its board and the kernel's word.
  // Through the shared store, not this communicator's cancellable view: the records explain a
  // failure, a revoke's included.
  // The waiting thread publishes: a store that cannot be reached (a cut link) must not hold it
  // past its own timeout, so the writes share a short budget.
  if (tuner_.params().hosts > 1)
    flight_peers_.publish = [this] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      try {
        for (int r = 0; r < nranks_; ++r)
          if (host_index_[r] == host_index_[rank_] && (r == rank_ || host_.domain_of[r])) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            shared_store_->set_within(fmt::format("{}/flight/{}", prefix_, r),
                                      bootstrap::to_bytes(rank_status(r).to_bytes()), left);
          }
      } catch (const Error&) {  // the store is out of reach too: the error says what this rank knows
      }
    };
}

FlightStatus Communicator::rank_status(int r, bool local_only) {
  if (r == rank_) return FlightStatus::read(flight_->board());
  if (r < 0 || r >= nranks_) return {};
  if (transport::Domain* d = host_.domain_of[r])
    if (const void* b = d->peer_board(r)) return FlightStatus::read(*static_cast<const FlightBoard*>(b));
  if (local_only || !flight_peers_.publish || host_index_[r] == host_index_[rank_]) return {};
  try {
    return FlightStatus::from_bytes(bootstrap::to_string(
        shared_store_->get(fmt::format("{}/flight/{}", prefix_, r), std::chrono::milliseconds(200))));
  } catch (const Error&) {
    return {};
  }
}

void Communicator::end_flight(coralResult_t rc, bool published, const std::string& why) {
  flight_->finish(rc);
  // A status published in a long wait must not outlive it: the others would read it as current.
  if (published && flight_peers_.publish) flight_peers_.publish();
  if (rc == coralTimeout || rc == coralRemoteError) flight_->dump(why, false);
}

}  // namespace coral
