#include "data.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "rng.h"

namespace trainer {
namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", file, what));
}

// Asks for transparent huge pages on the untouched capacity of a large buffer (where the kernel
// grants them on request): Fashion-MNIST is 235 MB as floats, and taking it 4 KiB page by 4 KiB
// page cost most of the trainer's start on a VM, where each fault is expensive.
void want_huge_pages(const void* p, size_t bytes) {
  constexpr uintptr_t kHuge = 2u << 20;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (e > b) (void)madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);  // a hint: failure is fine
}

// A gzip file's last 4 bytes hold its uncompressed size modulo 2^32 (0 when unknown).
size_t gzip_size_hint(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < 18) return 0;
  unsigned char b[4];
  in.seekg(-4, std::ios::end);
  if (!in.read(reinterpret_cast<char*>(b), 4)) return 0;
  return static_cast<size_t>(b[0]) | static_cast<size_t>(b[1]) << 8 | static_cast<size_t>(b[2]) << 16 |
         static_cast<size_t>(b[3]) << 24;
}

// Whole (gzip or plain) file contents; zlib reads both.
std::string read_gz(const std::string& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), gzclose);
  if (!f) fail(path, "cannot open (does it exist and is it readable?)");
  std::string out;
  // Grown once instead of by doubling (each doubling copies and faults in fresh pages). The hint
  // may be wrong (a plain file, several members): then the string just grows as it would.
  if (const size_t hint = gzip_size_hint(path); hint > 0 && hint < (size_t{1} << 31)) {
    out.reserve(hint);
    want_huge_pages(out.data(), hint);
  }
  char buf[1 << 16];
  for (;;) {
    int n = gzread(f.get(), buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      fail(path, fmt::format("corrupt or truncated compressed data ({})", gzerror(f.get(), &err)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

uint32_t be32(const std::string& s, size_t at) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

// IDX: magic 0x0000 08 <ndims>, ndims big-endian sizes, then unsigned bytes (from *data_at).
std::string read_idx(const std::string& path, int ndims, std::vector<uint32_t>* shape, size_t* data_at) {
  std::string s = read_gz(path);
  size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (s.size() < header) fail(path, "too short for an IDX header");
  uint32_t magic = be32(s, 0);
  if (magic != (0x800u | static_cast<uint32_t>(ndims)))
    fail(path, fmt::format("not an IDX file of unsigned bytes with {} dimensions (magic {:#010x})", ndims, magic));
  size_t total = 1;
  for (int d = 0; d < ndims; d++) {
    shape->push_back(be32(s, 4 + 4 * static_cast<size_t>(d)));
    total *= shape->back();
  }
  if (s.size() - header != total)
    fail(path, fmt::format("header promises {} bytes of data, file has {}", total, s.size() - header));
  *data_at = header;
  return s;
}

Dataset idx_pair(const std::string& dir, const std::string& prefix) {
  std::string ipath = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  std::string lpath = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  std::vector<uint32_t> ishape, lshape;
  size_t iat = 0, lat = 0;
  const std::string img = read_idx(ipath, 3, &ishape, &iat), lab = read_idx(lpath, 1, &lshape, &lat);
  if (ishape[0] != lshape[0]) fail(lpath, fmt::format("{} labels for {} images in {}", lshape[0], ishape[0], ipath));
  if (ishape[1] == 0 || ishape[2] == 0 || ishape[1] * ishape[2] > (1u << 20))
    fail(ipath, fmt::format("implausible image size {}x{}", ishape[1], ishape[2]));
  Dataset d;
  d.dim = static_cast<int>(ishape[1] * ishape[2]);
  d.classes = 10;
  const size_t npix = img.size() - iat, nlab = lab.size() - lat;
  d.x.reserve(npix);
  want_huge_pages(d.x.data(), npix * sizeof(float));
  d.x.resize(npix);
  for (size_t i = 0; i < npix; i++) d.x[i] = static_cast<unsigned char>(img[iat + i]) / 255.0f;
  d.y.resize(nlab);
  for (size_t i = 0; i < nlab; i++) {
    d.y[i] = static_cast<unsigned char>(lab[lat + i]);
    if (d.y[i] >= d.classes) fail(lpath, fmt::format("label {} of sample {} is not 0-9", d.y[i], i));
  }
  return d;
}

}  // namespace

Data load_fashion_mnist(const std::string& dir) {
  Data data{"fashion-mnist", idx_pair(dir, "train"), idx_pair(dir, "t10k")};
  if (data.train.dim != data.test.dim) fail(dir, "training and test images differ in size");
  return data;
}

Data load_digits(const std::string& path) {
  std::string s = read_gz(path);
  Data data{"digits", {}, {}};
  for (Dataset* d : {&data.train, &data.test}) d->dim = 64, d->classes = 10;
  size_t line = 0, pos = 0;
  while (pos < s.size()) {
    size_t end = s.find('\n', pos);
    if (end == std::string::npos) end = s.size();
    std::string row = s.substr(pos, end - pos);
    pos = end + 1;
    if (row.empty() || row == "\r") continue;
    Dataset& d = line % 5 == 4 ? data.test : data.train;
    int field = 0;
    const char* p = row.c_str();
    for (;; field++) {
      char* stop;
      long v = std::strtol(p, &stop, 10);
      if (stop == p || v < 0 || v > (field < 64 ? 16 : 9))
        fail(path, fmt::format("line {}, field {}: expected {}", line + 1, field + 1,
                               field < 64 ? "a pixel 0-16" : "a label 0-9"));
      if (field < 64)
        d.x.push_back(static_cast<float>(v) / 16.0f);
      else
        d.y.push_back(static_cast<int32_t>(v));
      p = stop;
      if (*p == ',' && field < 64) {
        p++;
        continue;
      }
      if (field == 64 && (*p == 0 || *p == '\r')) break;
      fail(path, fmt::format("line {}: expected 65 comma-separated integers", line + 1));
    }
    line++;
  }
  if (line == 0) fail(path, "no samples");
  return data;
}

Data make_synthetic(int dim, int classes, size_t train, size_t test, uint64_t seed) {
  Data data{"synthetic", {}, {}};
  Rng rng(seed);
  for (auto [d, n] : {std::pair{&data.train, train}, std::pair{&data.test, test}}) {
    d->dim = dim;
    d->classes = classes;
    d->x.resize(n * dim);
    for (float& v : d->x) v = static_cast<float>(rng.uniform());
    d->y.resize(n);
    for (int32_t& v : d->y) v = static_cast<int32_t>(rng.below(classes));
  }
  return data;
}

std::string default_digits_path() {
  for (const char* p : {CORAL_TRAINER_DATA_INSTALLED, CORAL_TRAINER_DATA_SOURCE})
    if (access(p, R_OK) == 0) return p;
  return CORAL_TRAINER_DATA_SOURCE;
}

}  // namespace trainer
