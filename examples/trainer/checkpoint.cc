#include "checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace trainer {
namespace {

constexpr char kMagic[8] = {'C', 'O', 'R', 'A', 'L', 'C', 'K', 'P'};
constexpr uint32_t kVersion = 1;

class Writer {
 public:
  template <class V>
  void put(const V& v) {
    raw(&v, sizeof v);
  }
  template <class V>
  void vec(const std::vector<V>& v) {
    put<uint64_t>(v.size());
    raw(v.data(), v.size() * sizeof(V));
  }
  void raw(const void* p, size_t n) { buf.append(static_cast<const char*>(p), n); }
  std::string buf;
};

class Reader {
 public:
  Reader(const std::string& b, const std::string& path) : buf_(b), path_(path) {}
  template <class V>
  V get() {
    V v;
    raw(&v, sizeof v);
    return v;
  }
  template <class V>
  std::vector<V> vec(uint64_t limit) {
    uint64_t n = get<uint64_t>();
    if (n > limit) fail(fmt::format("array of {} elements where at most {} fit", n, limit));
    std::vector<V> v(n);
    raw(v.data(), n * sizeof(V));
    return v;
  }
  void raw(void* p, size_t n) {
    if (buf_.size() - at_ < n) fail("truncated");
    std::memcpy(p, buf_.data() + at_, n);
    at_ += n;
  }
  size_t left() const { return buf_.size() - at_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("checkpoint {}: {}", path_, what));
  }

 private:
  const std::string& buf_;
  const std::string& path_;
  size_t at_ = 0;
};

void write_all(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(fmt::format("writing {}: {}", path, std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
}

}  // namespace

template <class T>
void save_checkpoint(const std::string& path, const Checkpoint<T>& c) {
  Writer w;
  w.raw(kMagic, sizeof kMagic);
  w.put(kVersion);
  w.put<uint32_t>(sizeof(T));
  w.put(c.optimizer);
  w.vec(c.dims);
  w.put(c.global_step);
  w.put(c.optimizer_steps);
  w.put(c.global_batch);
  w.put(c.seed);
  w.vec(c.params);
  w.vec(c.m);
  w.vec(c.v);
  w.put<uint32_t>(
      static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(w.buf.data()), static_cast<uInt>(w.buf.size()))));

  std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("creating {}: {}", tmp, std::strerror(errno)));
  try {
    write_all(fd, w.buf, tmp);
    if (::fsync(fd) != 0) throw std::runtime_error(fmt::format("fsync {}: {}", tmp, std::strerror(errno)));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("renaming {} to {}: {}", tmp, path, std::strerror(e)));
  }
  // Make the rename itself durable.
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/') + 1);
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

template <class T>
Checkpoint<T> load_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("checkpoint {}: cannot open", path));
  std::string buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Reader r(buf, path);
  if (buf.size() < sizeof kMagic + 4 || std::memcmp(buf.data(), kMagic, sizeof kMagic) != 0)
    r.fail("not a coral-train checkpoint");
  uint32_t stored_crc;
  std::memcpy(&stored_crc, buf.data() + buf.size() - 4, 4);
  uLong crc = crc32(0, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(buf.size() - 4));
  if (crc != stored_crc) r.fail("CRC mismatch: the file is corrupt or was cut short");
  char magic[8];
  r.raw(magic, sizeof magic);
  if (uint32_t v = r.get<uint32_t>(); v != kVersion) r.fail(fmt::format("format version {}, expected {}", v, kVersion));
  if (uint32_t e = r.get<uint32_t>(); e != sizeof(T))
    r.fail(fmt::format("holds {}-byte parameters; this run uses {}-byte ones (--dtype)", e, sizeof(T)));
  Checkpoint<T> c;
  uint64_t limit = (buf.size() / sizeof(T)) + 1;
  c.optimizer = r.get<uint32_t>();
  c.dims = r.vec<int>(limit);
  c.global_step = r.get<int64_t>();
  c.optimizer_steps = r.get<int64_t>();
  c.global_batch = r.get<int64_t>();
  c.seed = r.get<uint64_t>();
  c.params = r.vec<T>(limit);
  c.m = r.vec<T>(limit);
  c.v = r.vec<T>(limit);
  if (r.left() != 4) r.fail("unexpected bytes after the optimizer state");
  if (c.m.size() != c.params.size() || (!c.v.empty() && c.v.size() != c.params.size()))
    r.fail("optimizer state does not match the parameter count");
  return c;
}

template void save_checkpoint(const std::string&, const Checkpoint<float>&);
template void save_checkpoint(const std::string&, const Checkpoint<double>&);
template Checkpoint<float> load_checkpoint(const std::string&);
template Checkpoint<double> load_checkpoint(const std::string&);

}  // namespace trainer
