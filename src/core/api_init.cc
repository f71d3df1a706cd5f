// The C API's communicator creation: unique ids, coralCommInitRank(Config) and coralCommInitEnv.
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "base/config.h"
#include "base/error.h"
#include "base/socket.h"
#include "bootstrap/launcher_env.h"
#include "bootstrap/meet_at.h"
#include "bootstrap/tcp_store.h"
#include "bootstrap/unique_id.h"
#include "core/api_checks.h"
#include "core/communicator.h"
#include "core/guard.h"

namespace {

using coral::fail;
using coral::capi::guard;

double timeout_s() { return coral::config::get_double("CORAL_TIMEOUT"); }

// Communicators created by one rank under one job key are numbered in creation order, which
// every rank follows (as in MPI), so they agree on each communicator's store prefix.
std::string next_prefix(const std::string& job_key, int rank) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, int> count;
  std::lock_guard<std::mutex> lock(mu);
  return job_key + "/c" + std::to_string(count[{job_key, rank}]++);
}

// coralConfig_t, checked: NULL or CORAL_CONFIG_UNDEF_INT fields take the defaults.
struct Options {
  bool blocking = true;
  double timeout_s = 0;  // 0: CORAL_TIMEOUT
};
Options options_of(const coralConfig_t* c) {
  Options o;
  if (!c) return o;
  if (c->size != sizeof(coralConfig_t) || c->magic != CORAL_CONFIG_MAGIC)
    fail(coralInvalidArgument, "config was not set up from CORAL_CONFIG_INITIALIZER (its size or magic is wrong)");
  if (c->version > CORAL_VERSION_CODE)
    fail(coralInvalidArgument,
         fmt::format("config->version {} is newer than this library ({})", c->version, CORAL_VERSION_CODE));
  if (c->blocking != CORAL_CONFIG_UNDEF_INT) {
    if (c->blocking != 0 && c->blocking != 1)
      fail(coralInvalidArgument, fmt::format("config->blocking is {}, not 0 or 1", c->blocking));
    o.blocking = c->blocking == 1;
  }
  if (c->timeoutSeconds != CORAL_CONFIG_UNDEF_INT) {
    if (c->timeoutSeconds <= 0)
      fail(coralInvalidArgument,
           fmt::format("config->timeoutSeconds is {}, not a positive number of seconds", c->timeoutSeconds));
    o.timeout_s = c->timeoutSeconds;
  }
  return o;
}

}  // namespace

extern "C" {

coralResult_t coralGetUniqueId(coralUniqueId* id) {
  return guard(nullptr, "coralGetUniqueId", [&] {
    if (!id) fail(coralInvalidArgument, "uniqueId is NULL");
    auto ms = std::chrono::milliseconds(static_cast<long long>(timeout_s() * 1000));
    coral::bootstrap::encode_unique_id(coral::bootstrap::fresh_store(ms), id->internal);
  });
}

coralResult_t coralGetUniqueIdAt(const char* address, coralUniqueId* id) {
  return guard(nullptr, "coralGetUniqueIdAt", [&] {
    if (!id) fail(coralInvalidArgument, "uniqueId is NULL");
    if (!address) fail(coralInvalidArgument, "address is NULL");
    const std::string addr = address;
    // From the port alone: localhost:P and 127.0.0.1:P are one meeting place. (Encoding checks
    // the address.)
    const auto secret = coral::bootstrap::wire::derived_secret("coral-id-at|" + addr.substr(addr.rfind(':') + 1));
    coral::bootstrap::encode_unique_id({addr, secret, true}, id->internal);
  });
}

coralResult_t coralCommInitRank(coralComm_t* comm, int nranks, coralUniqueId commId, int rank) {
  return coralCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

coralResult_t coralCommInitRankConfig(coralComm_t* comm, int nranks, coralUniqueId commId, int rank,
                                      const coralConfig_t* config) {
  bool background = false;
  coralResult_t rc = guard(nullptr, "coralCommInitRankConfig", [&] {
    if (!comm) fail(coralInvalidArgument, "comm is NULL");
    *comm = nullptr;
    if (nranks < 1) fail(coralInvalidArgument, "nranks " + std::to_string(nranks) + " must be >= 1");
    if (rank < 0 || rank >= nranks)
      fail(coralInvalidArgument,
           "rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(nranks) + ")");
    const coral::bootstrap::UniqueId uid = coral::bootstrap::decode_unique_id(commId.internal);
    const Options opt = options_of(config);
    background = !opt.blocking;
    // Communicators are numbered in creation order on this rank (next_prefix): a background
    // creation takes its number now, so that one created after it cannot take the same. One met
    // at an address has a fresh store of its own: the first there.
    const std::string prefix =
        uid.rank0_serves ? "" : next_prefix(coral::bootstrap::wire::job_key_of(uid.secret), rank);
    auto cancel = opt.blocking ? nullptr : std::make_shared<coral::bootstrap::CancelToken>();
    auto create = [uid, prefix, opt, nranks, rank, cancel] {
      coral::Communicator::check_settings();
      const double timeout = opt.timeout_s > 0 ? opt.timeout_s : timeout_s();
      auto ms = std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
      const coral::bootstrap::UniqueId id =
          uid.rank0_serves ? coral::bootstrap::meet_at(uid, nranks, rank, ms, cancel) : uid;
      const std::string name =
          uid.rank0_serves ? next_prefix(coral::bootstrap::wire::job_key_of(id.secret), rank) : prefix;
      auto store = std::make_shared<coral::bootstrap::TcpStore>(coral::net::resolve(id.addr), id.secret, ms, cancel);
      return std::make_unique<coral::Communicator>(store, name, rank, nranks, opt.timeout_s);
    };
    if (opt.blocking) {
      *comm = new coralComm(create());
      return;
    }
    // The handle's creation goes on in the background (coralCommGetAsyncError says when done).
    *comm = coral::capi::create_in_background("coralCommInitRankConfig", create);
    (*comm)->cancel_init = cancel;
  });
  return rc == coralSuccess && background ? coralInProgress : rc;
}

coralResult_t coralCommInitEnv(coralComm_t* comm) {
  return guard(nullptr, "coralCommInitEnv", [&] {
    if (!comm) fail(coralInvalidArgument, "comm is NULL");
    *comm = nullptr;
    coral::bootstrap::LaunchEnv env = coral::bootstrap::read_launch_env();
    coral::Communicator::check_settings();
    coral::bootstrap::Rendezvous rdv = coral::bootstrap::rendezvous_from_env(env, timeout_s());
    // The rendezvous file goes whether or not the communicator comes up: a failed start must not
    // leave it in /dev/shm.
    struct Unlink {
      const std::string& path;
      ~Unlink() {
        if (!path.empty()) unlink(path.c_str());
      }
    } unlink_file{rdv.cleanup_file};
    auto impl =
        std::make_unique<coral::Communicator>(rdv.store, next_prefix(rdv.job_key, env.rank), env.rank, env.size);
    *comm = new coralComm(std::move(impl));
  });
}

}  // extern "C"
