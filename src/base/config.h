// Every CORAL_* knob is declared once in config.cc: name, type, default, range or allowed values,
// doc. Values are validated there, against the declaration, and nowhere else.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/bytes.h"  // parse_bytes

namespace coral::config {

// Choice: one word of `choices`; List: a comma list of them.
enum class Type { Int, Bytes, Double, String, Choice, List };
const char* type_name(Type t);

struct Knob {
  const char* name;
  Type type;
  const char* default_value;
  const char* doc;
  double min = -std::numeric_limits<double>::infinity();  // Int, Bytes, Double: inclusive range
  double max = std::numeric_limits<double>::infinity();
  uint64_t multiple = 1;          // Bytes: the value must be a multiple of this
  const char* choices = nullptr;  // Choice, List: the allowed words, comma separated
};

const std::vector<Knob>& knobs();
// The declaration of a knob; aborts the program (a bug) if the name was never declared.
const Knob& knob(const char* name);
// "1 to 64", "a multiple of 64 from 4K to 1G", "one of NONE, WARN, INFO, TRACE"; "" if any value goes.
std::string allowed(const Knob& k);

// Lookups throw coral::Error(coralInvalidArgument) naming the variable when a value is malformed
// or outside what the declaration allows.
int64_t get_int(const char* name);
uint64_t get_bytes(const char* name);  // accepts K/M/G suffixes (powers of 1024)
double get_double(const char* name);
std::string get_string(const char* name);  // also Choice and List knobs
bool is_set(const char* name);
// The value in effect (the environment's, else the default) and whether it is valid: "" or why not.
std::string current(const Knob& k);
std::string check(const Knob& k, const std::string& value);
// Throws for the first knob in the environment whose value is not valid.
void validate_all();

// "a,b,,c" -> {"a", "b", "", "c"}: the lists several knobs take.
std::vector<std::string> split(const std::string& s, char sep);

}  // namespace coral::config
