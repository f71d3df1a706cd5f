// The real machines' topology files of tests/fixtures/topology (see its README).
#pragma once
#include <fstream>
#include <iterator>
#include <string>

inline std::string fixture(const std::string& name) {
  return std::string(CORAL_SOURCE_ROOT) + "/tests/fixtures/topology/" + name;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
