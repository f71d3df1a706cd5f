// For Coral's own tools (coral-bench): the communicator behind a C handle, to report what the
// tuner chose. Not installed; not part of the C API.
#pragma once
#include <coral/coral.h>

#include "core/communicator.h"

namespace coral {
Communicator& unwrap(coralComm_t comm);
}  // namespace coral
