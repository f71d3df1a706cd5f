#include "transport/shm/memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"

namespace coral::transport::shm {

static std::byte* map_fd(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) fail_errno("mmap shared segment " + name, errno);
  return static_cast<std::byte*>(p);
}

Segment Segment::create(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {  // left by a crashed job with the same secret: replace it
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  }
  if (fd < 0) fail_errno("shm_open " + name, errno);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    fail_errno("ftruncate " + name + " (is /dev/shm large enough?)", e);
  }
  Segment s;
  s.base_ = map_fd(fd, bytes, name);
  close(fd);
  s.bytes_ = bytes;
  s.name_ = name;
  s.owner_ = true;
  return s;
}

Segment Segment::open(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fail_errno("shm_open " + name + " (peer's segment)", errno);
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    close(fd);
    fail(coralInvalidUsage, "shared segment " + name +
                                " is smaller than expected: ranks disagree on "
                                "CORAL_SHM_SLOT_BYTES/CORAL_SHM_NSLOTS");
  }
  Segment s;
  s.base_ = map_fd(fd, bytes, name);
  close(fd);
  s.bytes_ = bytes;
  s.name_ = name;
  return s;
}

Segment& Segment::operator=(Segment&& o) noexcept {
  std::swap(base_, o.base_);
  std::swap(bytes_, o.bytes_);
  std::swap(name_, o.name_);
  std::swap(owner_, o.owner_);
  return *this;
}

void Segment::unlink() {
  if (owner_) shm_unlink(name_.c_str());
  owner_ = false;
}

Segment::~Segment() {
  unlink();
  if (base_) munmap(base_, bytes_);
}

}  // namespace coral::transport::shm
