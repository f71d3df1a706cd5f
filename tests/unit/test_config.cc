#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

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

TEST_CASE("values outside a knob's declared range or choices are refused, naming the knob") {
  struct Bad {
    const char* name;
    const char* value;
    const char* says;
  };
  for (const Bad& b :
       {Bad{"CORAL_SHM_NSLOTS", "65", "1 to 64"}, Bad{"CORAL_SHM_SLOT_BYTES", "4100", "multiple of 64"},
        Bad{"CORAL_SOCKET_NSOCKS", "0", "1 to 16"}, Bad{"CORAL_TIMEOUT", "0", "0.001 to"},
        Bad{"CORAL_TIMEOUT", "inf", "0.001 to"}, Bad{"CORAL_DEBUG", "LOUD", "one of NONE,WARN,INFO,TRACE"},
        Bad{"CORAL_DEBUG_SUBSYS", "INIT,NETWORK", "'NETWORK'"}, Bad{"CORAL_KERNEL", "sse", "one of"}}) {
    INFO(b.name << "=" << b.value);
    setenv(b.name, b.value, 1);
    const config::Knob& k = config::knob(b.name);
    CHECK_THAT(config::check(k, b.value), Catch::Contains(b.says));
    try {
      config::validate_all();
      FAIL("validate_all accepted it");
    } catch (const Error& e) {
      CHECK(e.code() == coralInvalidArgument);
      CHECK_THAT(e.what(), Catch::Contains(std::string(b.name) + "='" + b.value + "'"));
    }
    unsetenv(b.name);
  }
  config::validate_all();  // the defaults are valid
  setenv("CORAL_DEBUG_SUBSYS", "INIT,TUNE", 1);
  CHECK(config::get_string("CORAL_DEBUG_SUBSYS") == "INIT,TUNE");
  unsetenv("CORAL_DEBUG_SUBSYS");
}

TEST_CASE("choices match regardless of case and come back as declared") {
  setenv("CORAL_DEBUG", "info", 1);
  CHECK(config::get_string("CORAL_DEBUG") == "INFO");
  setenv("CORAL_DEBUG_SUBSYS", "init,Net", 1);
  CHECK(config::get_string("CORAL_DEBUG_SUBSYS") == "INIT,NET");
  setenv("CORAL_MPI_ABI", "OMPI", 1);
  CHECK(config::get_string("CORAL_MPI_ABI") == "ompi");
  setenv("CORAL_DEBUG", "inform", 1);
  CHECK_THROWS_AS(config::get_string("CORAL_DEBUG"), Error);
  unsetenv("CORAL_DEBUG");
  unsetenv("CORAL_DEBUG_SUBSYS");
  unsetenv("CORAL_MPI_ABI");
}

TEST_CASE("every default is valid and every knob says what it does") {
  for (const config::Knob& k : config::knobs()) {
    INFO(k.name);
    CHECK(config::check(k, k.default_value).empty());
    CHECK(std::string(k.doc).size() > 10);
    CHECK(std::string(k.name).rfind("CORAL_", 0) == 0);
  }
}

TEST_CASE("the docs' knob table lists every knob with its type and default") {
  std::ifstream in(std::string(CORAL_SOURCE_ROOT) + "/docs/configuration.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  for (const config::Knob& k : config::knobs()) {
    INFO(k.name);
    CHECK(ss.str().find(std::string("| `") + k.name + "` | " + config::type_name(k.type) + " | " + k.default_value +
                        " |") != std::string::npos);
  }
}

TEST_CASE("the registry's subsystem words are the log's") {
  CHECK(std::string(config::knob("CORAL_DEBUG_SUBSYS").choices) == log::subsystem_names());
}
