#include "bootstrap/exchange.h"

#include <fmt/format.h>

#include <cstring>

#include "base/error.h"

namespace coral::bootstrap {

namespace {

constexpr char kMagic[4] = {'C', 'R', 'R', '1'};
// Bounds a record's reader trusts: a corrupted length is refused before anything is allocated.
constexpr uint32_t kMaxFields = 256;
constexpr uint32_t kMaxName = 64;
constexpr uint32_t kMaxValue = 1 << 20;

void put32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

void Record::bad(const std::string& why) const {
  fail(coralRemoteError, fmt::format("{} of rank {}: {}", what_, from_, why));
}

Record& Record::add(const std::string& name, const std::string& value) {
  fields_.emplace_back(name, value);
  return *this;
}
Record& Record::add(const std::string& name, int64_t value) { return add(name, std::to_string(value)); }
Record& Record::add(const std::string& name, uint64_t value) { return add(name, std::to_string(value)); }
Record& Record::add(const std::string& name, const void* data, size_t bytes) {
  return add(name, std::string(static_cast<const char*>(data), bytes));
}

bool Record::has(const std::string& name) const {
  for (const auto& f : fields_)
    if (f.first == name) return true;
  return false;
}

const std::string& Record::text(const std::string& name) const {
  for (const auto& f : fields_)
    if (f.first == name) return f.second;
  bad(fmt::format("no field '{}'", name));
}

int64_t Record::number(const std::string& name, int64_t lo, int64_t hi) const {
  const std::string& s = text(name);
  int64_t v = 0;
  size_t pos = 0;
  try {
    v = std::stoll(s, &pos, 10);
  } catch (const std::exception&) {
    pos = std::string::npos;
  }
  if (pos != s.size() || s.empty()) bad(fmt::format("field '{}' is '{}', not a number", name, s));
  if (v < lo || v > hi) bad(fmt::format("field '{}' is {}, outside {} to {}", name, v, lo, hi));
  return v;
}

uint64_t Record::unsigned_number(const std::string& name, uint64_t hi) const {
  const std::string& s = text(name);
  uint64_t v = 0;
  size_t pos = 0;
  try {
    if (!s.empty() && s[0] != '-') v = std::stoull(s, &pos, 10);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != s.size() || s.empty()) bad(fmt::format("field '{}' is '{}', not a number", name, s));
  if (v > hi) bad(fmt::format("field '{}' is {}, more than {}", name, v, hi));
  return v;
}

void Record::bytes(const std::string& name, void* out, size_t size) const {
  const std::string& s = text(name);
  if (s.size() != size) bad(fmt::format("field '{}' has {} bytes, expected {}", name, s.size(), size));
  std::memcpy(out, s.data(), size);
}

Bytes Record::encode() const {
  Bytes b(kMagic, kMagic + 4);
  put32(b, static_cast<uint32_t>(fields_.size()));
  for (const auto& [name, value] : fields_) {
    put32(b, static_cast<uint32_t>(name.size()));
    b.insert(b.end(), name.begin(), name.end());
    put32(b, static_cast<uint32_t>(value.size()));
    b.insert(b.end(), value.begin(), value.end());
  }
  return b;
}

Record Record::decode(const Bytes& b, const std::string& what, int from) {
  Record r(what, from);
  size_t at = 0;
  auto need = [&](size_t n) {
    if (b.size() - at < n) r.bad(fmt::format("truncated: {} bytes, more expected at byte {}", b.size(), at));
  };
  auto get32 = [&] {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b[at + i]) << (8 * i);
    at += 4;
    return v;
  };
  auto get_string = [&](uint32_t max, const std::string& of) {
    const uint32_t n = get32();
    if (n > max) r.bad(fmt::format("{} of {} bytes (at most {})", of, n, max));
    need(n);
    std::string s(reinterpret_cast<const char*>(b.data() + at), n);
    at += n;
    return s;
  };
  need(4);
  if (std::memcmp(b.data(), kMagic, 4) != 0) r.bad("bad magic (not a Coral record, or another version's)");
  at = 4;
  const uint32_t n = get32();
  if (n > kMaxFields) r.bad(fmt::format("{} fields (at most {})", n, kMaxFields));
  for (uint32_t i = 0; i < n; ++i) {
    std::string name = get_string(kMaxName, "a field name");
    std::string value = get_string(kMaxValue, "field '" + name + "'");
    if (r.has(name)) r.bad(fmt::format("field '{}' twice", name));
    r.fields_.emplace_back(std::move(name), std::move(value));
  }
  if (at != b.size()) r.bad(fmt::format("{} bytes, of which {} trail the last field", b.size(), b.size() - at));
  return r;
}

void check_agreed(const Record& mine, const Record& theirs, int me, const std::vector<Agreed>& fields) {
  for (const Agreed& f : fields) {
    const std::string& a = theirs.text(f.field);
    const std::string& b = mine.text(f.field);
    if (a != b)
      fail(coralInvalidUsage, fmt::format("{} must be the same on every rank: rank {} has '{}', rank {} has '{}'",
                                          f.label, theirs.from(), a, me, b));
  }
}

void Exchange::publish(const std::string& name, const Record& mine) { store_.set(key(name, rank_), mine.encode()); }

Record Exchange::read(const std::string& name, int peer, const std::string& what) {
  Bytes b;
  try {
    b = store_.get(key(name, peer), timeout_);
  } catch (const Error& e) {
    // Say who never came, not which store key: the rank is what a user can look for.
    if (e.code() != coralTimeout) throw;
    fail(coralTimeout, fmt::format("rank {} waited {} s for the {} of rank {}, which never published it (is rank {} "
                                   "running, in this job?): {}",
                                   rank_, timeout_.count() / 1000.0, what, peer, peer, e.what()));
  }
  return Record::decode(b, what, peer);
}

std::map<int, Record> Exchange::swap(const std::string& name, const Record& mine, const std::vector<int>& peers,
                                     const std::vector<Agreed>& agreed) {
  publish(name, mine);
  std::map<int, Record> out;
  for (int q : peers) {
    Record r = read(name, q, mine.what());
    check_agreed(mine, r, rank_, agreed);
    out.emplace(q, std::move(r));
  }
  return out;
}

}  // namespace coral::bootstrap
