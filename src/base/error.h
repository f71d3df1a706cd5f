// One exception type inside the library; api.cc turns it into a coralResult_t plus a message.
#pragma once
#include <coral/coral.h>

#include <stdexcept>
#include <string>

namespace coral {

class Error : public std::runtime_error {
 public:
  Error(coralResult_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  coralResult_t code() const { return code_; }

 private:
  coralResult_t code_;
};

[[noreturn]] inline void fail(coralResult_t code, const std::string& what) { throw Error(code, what); }
// errno-carrying system failure: "<what>: <strerror>".
[[noreturn]] void fail_errno(const std::string& what, int err);

}  // namespace coral
