// The C API's registered buffers: coralMemAlloc/Free (memfd-backed host memory, transport/shm/
// regions.h) and coralCommRegister/Deregister.
#include <fmt/format.h>

#include "base/error.h"
#include "core/api_checks.h"
#include "gpu/runtime.h"
#include "transport/shm/regions.h"

namespace coral {

Communicator::Registration::~Registration() {
  if (region) transport::shm::region_deregister(buff);
}

void Communicator::add_registration(Registration* r) {
  std::lock_guard<std::mutex> lock(state_mu_);
  registrations_.emplace_back(r);
}

std::unique_ptr<Communicator::Registration> Communicator::remove_registration(void* handle) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    bool mine = false;
    for (auto& r : registrations_) mine |= r.get() == handle;
    if (!mine) fail(coralInvalidArgument, fmt::format("handle {} is no registration of this communicator", handle));
  }
  // A queued or running operation may still have peers read the buffer: it ends first.
  wait_idle();
  std::lock_guard<std::mutex> lock(state_mu_);
  for (auto it = registrations_.begin(); it != registrations_.end(); ++it)
    if (it->get() == handle) {
      std::unique_ptr<Registration> r = std::move(*it);
      registrations_.erase(it);
      return r;
    }
  fail(coralInvalidArgument, fmt::format("handle {} was deregistered meanwhile", handle));
}

}  // namespace coral

using coral::fail;
using namespace coral::capi;
namespace shm = coral::transport::shm;

extern "C" {

coralResult_t coralMemAlloc(void** ptr, size_t size) {
  return guard(nullptr, "coralMemAlloc", [&] {
    if (!ptr) fail(coralInvalidArgument, "ptr is NULL");
    *ptr = nullptr;
    if (size == 0) fail(coralInvalidArgument, "size is 0");
    *ptr = shm::region_alloc(size);
  });
}

coralResult_t coralMemFree(void* ptr) {
  return guard(nullptr, "coralMemFree", [&] {
    if (!ptr) return;  // as free(NULL)
    shm::region_free(ptr);
  });
}

coralResult_t coralCommRegister(coralComm_t comm, void* buff, size_t size, void** handle) {
  return guard(comm, "coralCommRegister", [&] {
    if (!handle) fail(coralInvalidArgument, "handle is NULL");
    *handle = nullptr;
    coral::Communicator& c = need(comm);
    if (!buff) fail(coralInvalidArgument, "buff is NULL");
    if (size == 0) fail(coralInvalidArgument, "size is 0");
    if (reinterpret_cast<uintptr_t>(buff) > UINTPTR_MAX - size)
      fail(coralInvalidArgument, fmt::format("buff {} + size {} wraps around the address space", buff, size));
    auto r = std::make_unique<coral::Communicator::Registration>();
    r->buff = buff;
    r->size = size;
    r->region = shm::region_register(buff, size);
    // Device memory shares through IPC handles (cuda_ipc) and other host memory through
    // cross-memory attach: their registration only records them.
    *handle = r.get();
    c.add_registration(r.release());
  });
}

coralResult_t coralCommDeregister(coralComm_t comm, void* handle) {
  return guard(comm, "coralCommDeregister", [&] {
    coral::Communicator& c = need(comm);
    if (!handle) fail(coralInvalidArgument, "handle is NULL");
    c.remove_registration(handle);  // the registration's end counts it off its region
  });
}

}  // extern "C"
