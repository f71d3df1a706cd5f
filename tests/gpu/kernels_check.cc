// The CUDA kernels against the scalar CPU reference, bit for bit: every dtype x op, 1 to 8
// sources, 1 or 2 destinations, sizes around the vector width, and pointers aligned, offset
// alike, offset differently and not element-aligned. Inputs are small integers (and powers of
// two for products) so every partial result is exact in every type, and the fp32 accumulation
// of half and fp8 types rounds to the same bits as the CPU's pairwise folds. fp8 also runs every
// pair of codes through one step, and every code through scale and premul (rounding, saturation,
// NaN, subnormals: the device's conversions against the CPU's). Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/half.h"
#include "kernels/cuda/kernels.h"
#include "kernels/reduce.h"

namespace {

using namespace coral::kernels;

int failures = 0;
int cases = 0;

#define CUDA_OK(call)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

bool is_fp8(coralDataType_t t) { return t == coralFloat8e4m3 || t == coralFloat8e5m2; }

// Value of source k, element i, as a double that every dtype holds exactly.
double value(coralRedOp_t op, coralDataType_t t, int k, size_t i) {
  const bool is_unsigned = t == coralUint8 || t == coralUint32 || t == coralUint64;
  if (op == coralProd) {
    // Each element's sources alternate between two of these: products of 8 stay within 2^+-4.
    static const double signed_v[] = {1, 2, -1, 0.5, 1, -2};
    static const double unsigned_v[] = {1, 2, 1, 1, 2, 1};
    double v = (is_unsigned ? unsigned_v : signed_v)[(i * 7 + k * 3) % 6];
    return !is_float(t) && v == 0.5 ? 1 : v;
  }
  // fp8 holds every integer only up to 16 (e4m3) or 8 (e5m2): sums of 8 values in -1..1 stay exact.
  if (is_fp8(t) && (op == coralSum || op == coralAvg)) return static_cast<int>((i * 13 + k * 29) % 3) - 1;
  int v = static_cast<int>((i * 13 + k * 29) % 17);
  return is_unsigned ? v : v - 8;
}

void store(coralDataType_t t, void* p, size_t i, double v) {
  auto* b = static_cast<char*>(p);
  switch (t) {
    case coralInt8: {
      int8_t x = static_cast<int8_t>(v);
      std::memcpy(b + i, &x, 1);
      break;
    }
    case coralUint8: {
      uint8_t x = static_cast<uint8_t>(v);
      std::memcpy(b + i, &x, 1);
      break;
    }
    case coralInt32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(b + 4 * i, &x, 4);
      break;
    }
    case coralUint32: {
      uint32_t x = static_cast<uint32_t>(v);
      std::memcpy(b + 4 * i, &x, 4);
      break;
    }
    case coralInt64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(b + 8 * i, &x, 8);
      break;
    }
    case coralUint64: {
      uint64_t x = static_cast<uint64_t>(v);
      std::memcpy(b + 8 * i, &x, 8);
      break;
    }
    case coralFloat16: {
      uint16_t x = float_to_half(static_cast<float>(v));
      std::memcpy(b + 2 * i, &x, 2);
      break;
    }
    case coralFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(b + 4 * i, &x, 4);
      break;
    }
    case coralFloat64:
      std::memcpy(b + 8 * i, &v, 8);
      break;
    case coralBfloat16: {
      uint16_t x = float_to_bf16(static_cast<float>(v));
      std::memcpy(b + 2 * i, &x, 2);
      break;
    }
    case coralFloat8e4m3:
      b[i] = static_cast<char>(float_to_fp8e4m3(static_cast<float>(v)));
      break;
    case coralFloat8e5m2:
      b[i] = static_cast<char>(float_to_fp8e5m2(static_cast<float>(v)));
      break;
    default:
      break;
  }
}

// A device block with the pointer `off` bytes past a 256-byte boundary.
struct DevBuf {
  char* base = nullptr;
  char* p = nullptr;
  DevBuf(size_t bytes, size_t off) {
    CUDA_OK(cudaMalloc(&base, bytes + 256));
    p = base + off;
  }
  ~DevBuf() { cudaFree(base); }
};

void check_reduce(const Table& ref, coralDataType_t t, coralRedOp_t op, int nsrc, int ndst, size_t n,
                  const size_t* offs) {
  const size_t es = dtype_size(t), bytes = n * es;
  std::vector<std::vector<char>> host(nsrc, std::vector<char>(bytes + 1));
  std::vector<DevBuf*> dev;
  cuda::ReduceArgs a;
  a.nsrc = nsrc;
  a.ndst = ndst;
  a.n = n;
  for (int k = 0; k < nsrc; ++k) {
    for (size_t i = 0; i < n; ++i) store(t, host[k].data(), i, value(op, t, k, i));
    dev.push_back(new DevBuf(bytes, offs[k]));
    CUDA_OK(cudaMemcpy(dev.back()->p, host[k].data(), bytes, cudaMemcpyHostToDevice));
    a.src[k] = dev.back()->p;
  }
  for (int d = 0; d < ndst; ++d) {
    dev.push_back(new DevBuf(bytes + 1, offs[nsrc + d]));
    CUDA_OK(cudaMemset(dev.back()->p, 0x5a, bytes + 1));
    a.dst[d] = dev.back()->p;
  }
  std::vector<char> expect(host[0]);
  for (int k = 1; k < nsrc; ++k) ref.reduce[t][op_slot(op)](expect.data(), expect.data(), host[k].data(), n);
  CUDA_OK(static_cast<cudaError_t>(cuda::reduce(t, op, a, nullptr)));
  CUDA_OK(cudaDeviceSynchronize());
  ++cases;
  for (int d = 0; d < ndst; ++d) {
    std::vector<char> got(bytes + 1);
    CUDA_OK(cudaMemcpy(got.data(), a.dst[d], bytes + 1, cudaMemcpyDeviceToHost));
    if (std::memcmp(got.data(), expect.data(), bytes) != 0 || static_cast<unsigned char>(got[bytes]) != 0x5a) {
      if (++failures <= 20)
        std::fprintf(stderr, "FAIL reduce %s %s nsrc=%d dst %d/%d n=%zu offsets %zu,%zu\n", dtype_name(t), op_name(op),
                     nsrc, d, ndst, n, offs[0], offs[1]);
    }
  }
  for (DevBuf* b : dev) delete b;
}

void check_scale(const Table& ref, coralDataType_t t, size_t n, int divisor, size_t off) {
  const size_t es = dtype_size(t), bytes = n * es;
  std::vector<char> in(bytes + 1), expect(bytes + 1), got(bytes + 1);
  for (size_t i = 0; i < n; ++i) {
    if (is_fp8(t))
      in[i] = static_cast<char>(i * 37);  // every code, NaNs and (e5m2) infinities included
    else
      store(t, in.data(), i, value(coralSum, t, 1, i) * 3);
  }
  ref.scale[t](expect.data(), in.data(), n, divisor);
  DevBuf d(bytes, off);
  CUDA_OK(cudaMemcpy(d.p, in.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(static_cast<cudaError_t>(cuda::scale(t, d.p, d.p, n, divisor, nullptr)));
  CUDA_OK(cudaMemcpy(got.data(), d.p, bytes, cudaMemcpyDeviceToHost));
  ++cases;
  if (std::memcmp(got.data(), expect.data(), bytes) != 0 && ++failures <= 20) {
    size_t i = 0;
    while (std::memcmp(got.data() + i * es, expect.data() + i * es, es) == 0) ++i;
    auto hex = [&](const std::vector<char>& v) {
      uint64_t x = 0;
      std::memcpy(&x, v.data() + i * es, es);
      return static_cast<unsigned long long>(x);
    };
    std::fprintf(stderr, "FAIL scale %s n=%zu /%d offset %zu: element %zu in %llx expected %llx got %llx\n",
                 dtype_name(t), n, divisor, off, i, hex(in), hex(expect), hex(got));
  }
}

// The element where got and expect first differ, for the message.
size_t first_diff(const char* got, const char* expect, size_t n, size_t es) {
  size_t i = 0;
  while (i < n && std::memcmp(got + i * es, expect + i * es, es) == 0) ++i;
  return i;
}

uint64_t element(const char* p, size_t i, size_t es) {
  uint64_t x = 0;
  std::memcpy(&x, p + i * es, es);
  return x;
}

// dst = src * scalar, the scalar in device memory or passed from the host; in place or not.
void check_premul(const Table& ref, coralDataType_t t, size_t n, const char* scalar, bool device_scalar, bool in_place,
                  size_t off) {
  const size_t es = dtype_size(t), bytes = n * es;
  std::vector<char> in(bytes + 1), expect(bytes + 1), got(bytes + 1);
  for (size_t i = 0; i < n; ++i) {
    if (is_fp8(t))
      in[i] = static_cast<char>(i * 37);
    else
      store(t, in.data(), i, value(coralSum, t, 1, i) * 3);
  }
  ref.premul[t](expect.data(), in.data(), n, scalar);
  DevBuf s(bytes, off), d(bytes + 1, off), sc(es, 1);  // the device scalar is not even aligned
  CUDA_OK(cudaMemcpy(s.p, in.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d.p, 0x5a, bytes + 1));
  CUDA_OK(cudaMemcpy(sc.p, scalar, es, cudaMemcpyHostToDevice));
  char* dst = in_place ? s.p : d.p;
  CUDA_OK(
      static_cast<cudaError_t>(cuda::premul(t, dst, s.p, n, device_scalar ? sc.p : scalar, device_scalar, nullptr)));
  CUDA_OK(cudaMemcpy(got.data(), dst, in_place ? bytes : bytes + 1, cudaMemcpyDeviceToHost));
  ++cases;
  const bool guard_ok = in_place || static_cast<unsigned char>(got[bytes]) == 0x5a;
  if ((std::memcmp(got.data(), expect.data(), bytes) != 0 || !guard_ok) && ++failures <= 20) {
    const size_t i = std::min(first_diff(got.data(), expect.data(), n, es), n - 1);  // n - 1: the guard
    std::fprintf(
        stderr, "FAIL premul %s n=%zu scalar %llx (%s)%s offset %zu: element %zu in %llx expected %llx got %llx%s\n",
        dtype_name(t), n, static_cast<unsigned long long>(element(scalar, 0, es)), device_scalar ? "device" : "host",
        in_place ? " in place" : "", off, i, static_cast<unsigned long long>(element(in.data(), i, es)),
        static_cast<unsigned long long>(element(expect.data(), i, es)),
        static_cast<unsigned long long>(element(got.data(), i, es)), guard_ok ? "" : " (wrote past the end)");
  }
}

// One step over every pair of fp8 codes: with two sources the device rounds exactly once, as
// the CPU does, whatever the values (NaN, infinities, saturation, subnormals).
void check_fp8_pairs(const Table& ref, coralDataType_t t, coralRedOp_t op) {
  const size_t n = 65536;
  std::vector<char> a(n), b(n), expect(n), got(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<char>(i & 0xff);
    b[i] = static_cast<char>(i >> 8);
  }
  ref.reduce[t][op_slot(op)](expect.data(), a.data(), b.data(), n);
  DevBuf da(n, 0), db(n, 0), dd(n, 0);
  CUDA_OK(cudaMemcpy(da.p, a.data(), n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db.p, b.data(), n, cudaMemcpyHostToDevice));
  cuda::ReduceArgs r;
  r.src[0] = da.p;
  r.src[1] = db.p;
  r.nsrc = 2;
  r.dst[0] = dd.p;
  r.ndst = 1;
  r.n = n;
  CUDA_OK(static_cast<cudaError_t>(cuda::reduce(t, op, r, nullptr)));
  CUDA_OK(cudaMemcpy(got.data(), dd.p, n, cudaMemcpyDeviceToHost));
  ++cases;
  for (size_t i = 0; i < n; ++i)
    if (got[i] != expect[i] && ++failures <= 20)
      std::fprintf(stderr, "FAIL fp8 pair %s %s: %02x op %02x expected %02x got %02x\n", dtype_name(t), op_name(op),
                   static_cast<unsigned char>(a[i]), static_cast<unsigned char>(b[i]),
                   static_cast<unsigned char>(expect[i]), static_cast<unsigned char>(got[i]));
}

void check_copy(size_t bytes, size_t off_src, size_t off_dst) {
  std::vector<char> in(bytes), got(bytes + 1);
  for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<char>(i * 31 + 7);
  DevBuf s(bytes, off_src), d0(bytes + 1, off_dst), d1(bytes + 1, off_dst + 3);
  CUDA_OK(cudaMemcpy(s.p, in.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d0.p, 0x5a, bytes + 1));
  CUDA_OK(cudaMemset(d1.p, 0x5a, bytes + 1));
  cuda::ReduceArgs a;
  a.src[0] = s.p;
  a.nsrc = 1;
  a.dst[0] = d0.p;
  a.dst[1] = d1.p;
  a.ndst = 2;
  CUDA_OK(static_cast<cudaError_t>(cuda::copy(a, bytes, nullptr)));
  for (char* p : {d0.p, d1.p}) {
    CUDA_OK(cudaMemcpy(got.data(), p, bytes + 1, cudaMemcpyDeviceToHost));
    ++cases;
    if ((std::memcmp(got.data(), in.data(), bytes) != 0 || static_cast<unsigned char>(got[bytes]) != 0x5a) &&
        ++failures <= 20)
      std::fprintf(stderr, "FAIL copy %zu bytes offsets %zu -> %zu\n", bytes, off_src, off_dst);
  }
}

}  // namespace

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "SKIP: no usable GPU\n");
    return 77;
  }
  const Table& ref = *table_for(Isa::Scalar);
  const coralRedOp_t all_ops[] = {coralSum, coralProd, coralMax, coralMin, coralAvg, coralBand, coralBor, coralBxor};
  for (int ti = 0; ti < coralNumTypes; ++ti) {
    auto t = static_cast<coralDataType_t>(ti);
    std::vector<coralRedOp_t> ops;  // bitwise ops for integer types only
    for (coralRedOp_t op : all_ops)
      if (op_fits(t, op)) ops.push_back(op);
    const size_t es = dtype_size(t);
    // Offsets (bytes) of up to 8 sources then 2 destinations.
    const size_t aligned[10] = {}, same[10] = {es, es, es, es, es, es, es, es, es, es};
    const size_t mixed[10] = {0, es, 2 * es, 0, 3 * es, es, 0, 2 * es, es, 0};
    const size_t odd[10] = {1, 1, 3, 1, 5, 1, 1, 7, 3, 1};  // not element-aligned (es > 1)
    for (coralRedOp_t op : ops)
      for (int nsrc : {1, 2, 3, 8})
        for (int ndst : {1, 2})
          for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(1000)})
            for (const size_t* offs : {aligned, same, mixed, odd}) check_reduce(ref, t, op, nsrc, ndst, n, offs);
    for (coralRedOp_t op : ops) {  // large: the vector loop with every thread busy
      check_reduce(ref, t, op, 2, 1, (size_t{1} << 22) + 13, aligned);
      check_reduce(ref, t, op, 8, 2, (size_t{1} << 20) + 5, same);
    }
    for (int divisor : {1, 3, 8})
      for (size_t n : {size_t(1), size_t(1001), size_t(1) << 20})
        for (size_t off : {es, size_t(1)}) check_scale(ref, t, n, divisor, off);  // aligned, and not (es > 1)
    // premul: integers by 100 (wrapping in the narrow types), floats by a few values; fp8 by
    // every code (each against every code as input).
    std::vector<std::vector<char>> scalars;
    if (is_fp8(t)) {
      for (int c = 0; c < 256; ++c) scalars.push_back({static_cast<char>(c)});
      for (coralRedOp_t op : {coralSum, coralProd, coralMax, coralMin}) check_fp8_pairs(ref, t, op);
    } else {
      for (double v : is_float(t) ? std::vector<double>{3, -0.5, 1.0 / 3} : std::vector<double>{100, 3}) {
        scalars.emplace_back(es);
        store(t, scalars.back().data(), 0, v);
      }
    }
    for (size_t si = 0; si < scalars.size(); ++si)
      for (size_t n : {size_t(1), size_t(1001), size_t(1) << 20})
        for (size_t off : {es, size_t(1)})
          for (bool device_scalar : {true, false}) {
            if (is_fp8(t) && n == (size_t(1) << 20) && si % 16) continue;  // keep 256 scalars quick
            check_premul(ref, t, n, scalars[si].data(), device_scalar, (n + off + si) % 2 == 0, off);
          }
  }
  for (size_t bytes : {1, 15, 16, 17, 4096, 1000003})
    for (size_t off : {0, 1, 8}) check_copy(bytes, off, (off * 5) % 16);
  std::printf("%d kernel cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
