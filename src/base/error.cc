#include "base/error.h"

#include <cstring>

namespace coral {

void fail_errno(const std::string& what, int err) { fail(coralSystemError, what + ": " + std::strerror(err)); }

}  // namespace coral
