#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/config.h"
#include "base/error.h"

using namespace coral;

TEST_CASE("byte sizes parse with K/M/G suffixes and reject garbage") {
  CHECK(config::parse_bytes("0") == 0);
  CHECK(config::parse_bytes("64K") == 65536);
  CHECK(config::parse_bytes("1M") == 1048576);
  CHECK(config::parse_bytes("2G") == 2ull << 30);
  CHECK_THROWS(config::parse_bytes("12Q"));
  CHECK_THROWS(config::parse_bytes("-5"));
  CHECK_THROWS(config::parse_bytes("x"));
}

TEST_CASE("knobs read the environment and name the variable on bad values") {
  setenv("CORAL_SHM_NSLOTS", "7", 1);
  CHECK(config::get_int("CORAL_SHM_NSLOTS") == 7);
  setenv("CORAL_SHM_NSLOTS", "seven", 1);
  try {
    config::get_int("CORAL_SHM_NSLOTS");
    FAIL("accepted a bad value");
  } catch (const Error& e) {
    CHECK(e.code() == coralInvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("CORAL_SHM_NSLOTS"));
  }
  unsetenv("CORAL_SHM_NSLOTS");
  CHECK(config::get_int("CORAL_SHM_NSLOTS") == 4);
}

TEST_CASE("every knob is documented in the README") {
  std::ifstream in(std::string(CORAL_SOURCE_ROOT) + "/README.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  for (const config::Knob& k : config::knobs()) {
    INFO(k.name);
    CHECK(ss.str().find(std::string("`") + k.name + "`") != std::string::npos);
    CHECK(std::string(k.doc).size() > 10);
  }
}
