// Sizes as the CORAL_* knobs and the tools' flags take them: "64K", "1M", "2GiB", "123".
// Header-only, so tools on the public API (coral-bench) parse sizes the way the library does.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace coral::config {

// K/M/G are powers of 1024; throws std::invalid_argument on garbage.
inline uint64_t parse_bytes(const std::string& text) {
  size_t pos = 0;
  unsigned long long v = std::stoull(text, &pos, 10);
  std::string suffix = text.substr(pos);
  uint64_t mult = 1;
  if (suffix == "" || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KB" || suffix == "KiB")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MB" || suffix == "MiB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GB" || suffix == "GiB")
    mult = 1ull << 30;
  else
    throw std::invalid_argument("bad size suffix '" + suffix + "'");
  if (text.empty() || text[0] == '-') throw std::invalid_argument("negative size");
  if (v > UINT64_MAX / mult) throw std::invalid_argument("size overflows");
  return v * mult;
}

}  // namespace coral::config
