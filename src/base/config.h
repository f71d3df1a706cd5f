// Every CORAL_* knob is declared once in config.cc: name, type, default, doc.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace coral::config {

enum class Type { Int, Bytes, Double, String };

struct Knob {
  const char* name;
  Type type;
  const char* default_value;
  const char* doc;
};

const std::vector<Knob>& knobs();

// Lookups throw coral::Error(coralInvalidArgument) naming the variable when a value is malformed,
// and abort the program (a bug) if the name was never declared.
int64_t get_int(const char* name);
uint64_t get_bytes(const char* name);  // accepts K/M/G suffixes (powers of 1024)
double get_double(const char* name);
std::string get_string(const char* name);
bool is_set(const char* name);

// Parses "64K", "1M", "3G", "123" -> bytes; throws std::invalid_argument on garbage.
uint64_t parse_bytes(const std::string& text);
// "a,b,,c" -> {"a", "b", "", "c"}: the lists several knobs take.
std::vector<std::string> split(const std::string& s, char sep);

}  // namespace coral::config
