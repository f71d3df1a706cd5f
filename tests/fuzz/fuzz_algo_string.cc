// Fuzz target for CORAL_ALGO values: parse or throw coral::Error(coralInvalidArgument); rules that
// parse format back to a value that parses to the same rules.
#include <cstdint>
#include <string>

#include "base/error.h"
#include "collectives/tuner/override.h"

using namespace coral::collectives;

namespace {

bool same(const Overrides& a, const Overrides& b) {
  if (a.all != b.all || a.rules.size() != b.rules.size()) return false;
  for (size_t i = 0; i < a.rules.size(); ++i) {
    const SizeRule &x = a.rules[i], &y = b.rules[i];
    if (x.coll != y.coll || x.lo != y.lo || x.hi != y.hi || x.algo != y.algo) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Overrides o;
  try {
    o = parse_overrides(text);
  } catch (const coral::Error& e) {
    if (e.code() != coralInvalidArgument) __builtin_trap();
    return 0;
  }
  for (const SizeRule& r : o.rules)
    if (r.lo >= r.hi) __builtin_trap();
  Overrides back;
  try {
    back = parse_overrides(format_overrides(o));
  } catch (const coral::Error&) {
    __builtin_trap();
  }
  if (!same(o, back)) __builtin_trap();
  return 0;
}
