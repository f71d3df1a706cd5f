// The one guard of the C API (api.cc, api_device.cc): runs an entry point's body and turns any
// exception into a coralResult_t plus the message coralGetLastError returns.
#pragma once
#include <coral/coral.h>

#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/tcp_store.h"
#include "core/communicator.h"

// The handle behind coralComm_t (the guard records a failure on it too).
struct coralComm {
  explicit coralComm(std::unique_ptr<coral::Communicator> i = nullptr) : impl(std::move(i)) {}
  std::unique_ptr<coral::Communicator> impl;
  // Non-blocking creation (coralConfig_t::blocking = 0): the thread building impl, and its
  // outcome. impl and init_* are written before ready is set, read only after it is seen set.
  std::thread init;
  std::atomic<bool> ready{true};
  coralResult_t init_result = coralSuccess;
  std::string init_error;
  // Made with coralConfig_t::blocking = 0: so are the communicators split or shrunk from it.
  bool nonblocking = false;
  // Gives up the background creation (coralCommAbort before it is done): its waits on the
  // store end at once.
  std::shared_ptr<coral::bootstrap::CancelToken> cancel_init;
  // Expires with the handle: a request outliving coralCommDestroy must not record its failure
  // on a communicator that is gone.
  std::shared_ptr<const bool> alive = std::make_shared<const bool>(true);
  ~coralComm() {
    if (init.joinable()) init.join();
  }
};

namespace coral::capi {

// The last failure of a call on this thread (coralGetLastError(NULL)).
inline thread_local std::string t_last_error;

// f's failures become its result code and "fn: what", kept for this thread and on comm if any.
template <class F>
coralResult_t guard(coralComm* comm, const char* fn, F&& f) {
  std::string msg;
  coralResult_t rc;
  try {
    f();
    return coralSuccess;
  } catch (const coral::Error& e) {
    rc = e.code();
    msg = e.what();
  } catch (const std::bad_alloc&) {
    rc = coralSystemError;
    msg = "out of memory";
  } catch (const std::exception& e) {
    rc = coralInternalError;
    msg = e.what();
  }
  msg = std::string(fn) + ": " + msg;
  t_last_error = msg;
  if (comm && comm->ready.load(std::memory_order_acquire) && comm->impl) comm->impl->set_last_error(msg);
  coral::log::warn(coral::log::Coll, "{}", msg);
  return rc;
}

}  // namespace coral::capi
