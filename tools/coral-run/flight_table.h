// The one table coral-run prints when a job times out or gets stuck: each rank's flight
// recorder dump (CORAL_DUMP_ON_TIMEOUT) reduced to what it last did and what it waits for.
#pragma once
#include <string>

namespace coral::run {

// path: the dump directory (one file per rank) or a file ranks append to. "" when no rank has
// dumped; ranks first..first+nranks-1 (this node's, by global rank) that did not dump are listed
// as such.
std::string flight_table(const std::string& path, int first, int nranks);

}  // namespace coral::run
