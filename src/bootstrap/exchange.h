// Peer records: what each rank publishes about itself through the store at connection time
// (host id, addresses, slot geometry, queue pair numbers) in one format with named fields, every
// length and number checked on reading, and one check for the fields every rank must agree on.
// The communicator and every transport's handshake use it.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/store.h"

namespace coral::bootstrap {

class Record {
 public:
  Record() = default;
  // what: the record's kind in errors ("tcp address record"); from: the rank that published it.
  Record(std::string what, int from) : what_(std::move(what)), from_(from) {}

  Record& add(const std::string& name, const std::string& value);  // text or raw bytes
  Record& add(const std::string& name, int64_t value);
  Record& add(const std::string& name, uint64_t value);
  Record& add(const std::string& name, int value) { return add(name, static_cast<int64_t>(value)); }
  Record& add(const std::string& name, const void* data, size_t bytes);

  bool has(const std::string& name) const;
  // A field's value; throws coralRemoteError naming the record, its rank and the field when it
  // is missing, not a number, outside [lo, hi], or (bytes) of another length.
  const std::string& text(const std::string& name) const;
  int64_t number(const std::string& name, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) const;
  uint64_t unsigned_number(const std::string& name, uint64_t hi = UINT64_MAX) const;
  void bytes(const std::string& name, void* out, size_t size) const;

  Bytes encode() const;
  // Throws coralRemoteError "<what> of rank <from>: <why>" for anything malformed.
  static Record decode(const Bytes& b, const std::string& what, int from);

  const std::string& what() const { return what_; }
  int from() const { return from_; }
  // Throws coralRemoteError "<what> of rank <from>: <why>".
  [[noreturn]] void bad(const std::string& why) const;

 private:
  std::string what_ = "record";
  int from_ = -1;
  std::vector<std::pair<std::string, std::string>> fields_;
};

// A field every rank must give the same value, and the name the user knows it by (a knob).
struct Agreed {
  std::string field;
  std::string label;
};
// Throws coralInvalidUsage "<label> must be the same on every rank: rank <theirs.from> has 'x',
// rank <me> has 'y'" for the first field that differs.
void check_agreed(const Record& mine, const Record& theirs, int me, const std::vector<Agreed>& fields);

// Publishing and reading records of one communicator (keys "<prefix>/<name>/<rank>").
class Exchange {
 public:
  Exchange(Store& store, std::string prefix, int rank, std::chrono::milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), rank_(rank), timeout_(timeout) {}

  void publish(const std::string& name, const Record& mine);
  // Waits for peer's record (coralTimeout after the timeout).
  Record read(const std::string& name, int peer, const std::string& what);
  // Publishes mine, then reads each peer's and checks the agreed fields against mine.
  std::map<int, Record> swap(const std::string& name, const Record& mine, const std::vector<int>& peers,
                             const std::vector<Agreed>& agreed = {});
  int rank() const { return rank_; }

 private:
  std::string key(const std::string& name, int rank) const { return prefix_ + "/" + name + "/" + std::to_string(rank); }
  Store& store_;
  std::string prefix_;
  int rank_;
  std::chrono::milliseconds timeout_;
};

}  // namespace coral::bootstrap
