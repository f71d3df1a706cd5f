// Communicators from a unique id every process makes alone from one address (coralGetUniqueIdAt,
// NCCL_COMM_ID's scheme). As NCCL's root, rank 0 listens on the agreed port only while that
// communicator's ranks arrive: it hands each the id of a fresh store of its own (where the
// communicator then lives, as with coralGetUniqueId) and lets the port go once all have taken
// it. So communicators made one after another from the same address never share keys, any
// process may be rank 0 of the next, and the port is free between them.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "bootstrap/store.h"
#include "bootstrap/unique_id.h"

namespace coral::bootstrap {

// A store served by a thread of this process until it is idle, and the id that names it
// (coralGetUniqueId): at `host` (as written in an address, [v6] bracketed), or where the
// default route leaves when it is "".
UniqueId fresh_store(std::chrono::milliseconds idle_timeout, const std::string& host = "", bool v6 = false);

// The id of the communicator this rank joins, met at `at` (an id with rank0_serves). Rank 0
// serves the meeting and returns the id of its fresh store; the others wait (up to timeout) for
// a rank 0 of a communicator of nranks ranks there that has not seen their rank yet.
UniqueId meet_at(const UniqueId& at, int nranks, int rank, std::chrono::milliseconds timeout,
                 std::shared_ptr<CancelToken> cancel);

}  // namespace coral::bootstrap
