// Fuzz target for CORAL_ALGO values: parse or throw coral::Error(coralInvalidArgument); rules that
// parse format back to a value that parses to the same rules.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "collectives/tuner/override.h"

using namespace coral::collectives;

namespace {

// The same rules in any order: format groups a collective's rules into one part, and rules never
// overlap, so their order carries no meaning.
bool same(const Overrides& a, const Overrides& b) {
  if (a.all != b.all || a.rules.size() != b.rules.size()) return false;
  auto key = [](const SizeRule& r) {
    return std::make_tuple(static_cast<int>(r.coll), r.lo, r.hi, static_cast<int>(r.algo));
  };
  std::vector<decltype(key(a.rules[0]))> x, y;
  for (const SizeRule& r : a.rules) x.push_back(key(r));
  for (const SizeRule& r : b.rules) y.push_back(key(r));
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
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
