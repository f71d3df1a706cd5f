// Every SIMD table against the scalar reference, every dtype x op, odd lengths, misaligned
// pointers and aliasing; the scalar reference against closed forms.
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/half.h"
#include "kernels/reduce.h"

using namespace coral::kernels;

namespace {

// Random values of type t, placed `offset` bytes into the buffer (to misalign them). Floating
// types get specials (inf, NaN, signed zero, subnormals, overflowing products) now and then.
std::vector<uint8_t> random_input(coralDataType_t t, size_t n, std::mt19937& rng, size_t offset) {
  std::vector<uint8_t> b(n * dtype_size(t) + 64);
  std::uniform_real_distribution<float> f(-8.0f, 8.0f);
  const float specials[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e-6f, -3e-8f, 60000.0f, 3e38f};
  for (size_t i = 0; i < n; ++i) {
    uint8_t* p = b.data() + offset + i * dtype_size(t);
    float x = i % 17 == 5 ? specials[rng() % 9] : f(rng);
    switch (t) {
      case coralFloat16: {
        uint16_t h = float_to_half(x);
        std::memcpy(p, &h, 2);
        break;
      }
      case coralBfloat16: {
        uint16_t h = float_to_bf16(x);
        std::memcpy(p, &h, 2);
        break;
      }
      case coralFloat32: {
        std::memcpy(p, &x, 4);
        break;
      }
      case coralFloat64: {
        double v = x * 1.000001;
        std::memcpy(p, &v, 8);
        break;
      }
      default:
        for (size_t k = 0; k < dtype_size(t); ++k) p[k] = static_cast<uint8_t>(rng());
    }
  }
  return b;
}

std::vector<Isa> simd_isas() {
  std::vector<Isa> out;
  for (Isa i : {Isa::Avx2, Isa::Avx512})
    if (table_for(i)) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("half conversions round to nearest even and round-trip every binary16 value") {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t v = static_cast<uint16_t>(h);
    if ((v & 0x7c00) == 0x7c00 && (v & 0x3ff)) continue;  // NaNs
    REQUIRE(float_to_half(half_to_float(v)) == v);
  }
  CHECK(half_to_float(0x3c00) == 1.0f);
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3c00);      // tie -> even (down)
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3c02);      // tie -> even (up)
  CHECK(float_to_half(65520.0f) == 0x7c00);                // rounds to infinity
  CHECK(float_to_half(5.9604644775390625e-8f) == 0x0001);  // smallest subnormal
  CHECK(bf16_to_float(float_to_bf16(3.0f)) == 3.0f);
  CHECK(float_to_bf16(1.0f + 1.0f / 256) == 0x3f80);  // tie -> even
  CHECK(float_to_bf16(1.0f + 3.0f / 256) == 0x3f82);
}

namespace {

// The correctly rounded fp8 value by brute force over every finite code: the nearest to |x|
// (past the largest finite value: that value), ties to the even code; then x's sign. NaN: 0x7f.
template <class F>
uint8_t nearest_fp8(float x) {
  if (std::isnan(x)) return 0x7f;
  const double ax = std::fabs(static_cast<double>(x));
  int best = 0;
  double best_d = INFINITY;
  for (int c = 0; c < 0x80; ++c) {
    const double v = F::decode(static_cast<uint8_t>(c));
    if (!std::isfinite(v)) continue;
    const double d = std::fabs(v - std::min(ax, static_cast<double>(std::bit_cast<float>(F::kMaxBits))));
    if (d < best_d || (d == best_d && c % 2 == 0)) best = c, best_d = d;
  }
  return static_cast<uint8_t>(best | (std::signbit(x) ? 0x80 : 0));
}

template <class F>
void check_fp8_format(uint32_t inf_code, int max_code) {
  for (int c = 0; c < 256; ++c) {
    INFO("code " << c);
    const float v = F::decode(static_cast<uint8_t>(c));
    if ((c & 0x7f) >= static_cast<int>(F::kNanFrom)) {
      CHECK(std::isnan(v));
      CHECK(F::encode(v) == 0x7f);
    } else if ((c & 0x7f) == static_cast<int>(inf_code)) {
      CHECK(std::isinf(v));
      CHECK(F::encode(v) == (max_code | (c & 0x80)));  // saturates
    } else {
      CHECK(std::isfinite(v));
      CHECK(std::signbit(v) == (c >= 0x80));
      CHECK(F::encode(v) == c);  // every finite code round-trips through fp32
    }
  }
  // Every float neighbourhood of an fp8 value or midpoint, and a sweep over all exponents.
  std::vector<float> xs;
  for (int c = 0; c < 0x80; ++c) {
    const float v = F::decode(static_cast<uint8_t>(c)), w = F::decode(static_cast<uint8_t>(c + 1));
    if (!std::isfinite(v)) continue;
    for (float m : {v, std::isfinite(w) ? (v + w) / 2 : v * 1.0625f}) {
      xs.push_back(m);
      xs.push_back(std::nextafter(m, 0.0f));
      xs.push_back(std::nextafter(m, INFINITY));
    }
  }
  for (uint64_t u = 0; u < 0x80000000u; u += 40961) xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  for (float x : {INFINITY, NAN, 1e30f, 3e38f, 1e-30f, 1e-45f}) xs.push_back(x);
  for (float x : xs) {
    for (float y : {x, -x}) {
      INFO("x = " << y << " (" << std::hex << std::bit_cast<uint32_t>(y) << ")");
      REQUIRE(F::encode(y) == nearest_fp8<F>(y));
    }
  }
}

}  // namespace

TEST_CASE("fp8 conversions round to nearest even and saturate; every code round-trips") {
  check_fp8_format<Fp8E4M3>(0x100, 0x7e);
  check_fp8_format<Fp8E5M2>(0x7c, 0x7b);
  // e4m3 (FN): max 448, no infinities, NaN 0x7f/0xff.
  CHECK(fp8e4m3_to_float(0x38) == 1.0f);
  CHECK(fp8e4m3_to_float(0x7e) == 448.0f);
  CHECK(fp8e4m3_to_float(0x08) == 0.015625f);     // smallest normal, 2^-6
  CHECK(fp8e4m3_to_float(0x01) == 0.001953125f);  // smallest subnormal, 2^-9
  CHECK(std::isnan(fp8e4m3_to_float(0xff)));
  CHECK(float_to_fp8e4m3(1.0f + 1.0f / 16) == 0x38);  // tie -> even (down)
  CHECK(float_to_fp8e4m3(std::nextafter(1.0f + 1.0f / 16, 2.0f)) == 0x39);
  CHECK(float_to_fp8e4m3(1.0f + 3.0f / 16) == 0x3a);  // tie -> even (up)
  CHECK(float_to_fp8e4m3(464.0f) == 0x7e);            // tie between 448 and 480 (NaN's slot)
  CHECK(float_to_fp8e4m3(500.0f) == 0x7e);            // saturates
  CHECK(float_to_fp8e4m3(INFINITY) == 0x7e);
  CHECK(float_to_fp8e4m3(-INFINITY) == 0xfe);
  CHECK(float_to_fp8e4m3(NAN) == 0x7f);
  CHECK(float_to_fp8e4m3(-NAN) == 0x7f);           // NaNs lose their sign, as in cuda_fp8.h
  CHECK(float_to_fp8e4m3(0.0009765625f) == 0x00);  // half the smallest subnormal: tie -> 0
  CHECK(float_to_fp8e4m3(0.0029296875f) == 0x02);  // 1.5 subnormal steps: tie -> even
  CHECK(float_to_fp8e4m3(-0.001953125f) == 0x81);
  CHECK(float_to_fp8e4m3(0.015625f - 0.0009765625f) == 0x08);  // 7.5 steps: up to the smallest normal
  CHECK(float_to_fp8e4m3(-0.0f) == 0x80);
  CHECK(float_to_fp8e4m3(-1e-30f) == 0x80);
  // e5m2: IEEE-like, max 57344, infinities 0x7c/0xfc, which saturate like any overflow.
  CHECK(fp8e5m2_to_float(0x3c) == 1.0f);
  CHECK(fp8e5m2_to_float(0x7b) == 57344.0f);
  CHECK(fp8e5m2_to_float(0x01) == 1.52587890625e-05f);  // 2^-16
  CHECK(fp8e5m2_to_float(0xfc) == -INFINITY);
  CHECK(std::isnan(fp8e5m2_to_float(0x7d)));
  CHECK(float_to_fp8e5m2(1.125f) == 0x3c);  // tie -> even (down)
  CHECK(float_to_fp8e5m2(1.375f) == 0x3e);  // tie -> even (up)
  CHECK(float_to_fp8e5m2(61440.0f) == 0x7b);
  CHECK(float_to_fp8e5m2(INFINITY) == 0x7b);
  CHECK(float_to_fp8e5m2(-INFINITY) == 0xfb);
  CHECK(float_to_fp8e5m2(-NAN) == 0x7f);
  CHECK(float_to_fp8e5m2(7.62939453125e-06f) == 0x00);   // 2^-17: tie -> 0
  CHECK(float_to_fp8e5m2(2.288818359375e-05f) == 0x02);  // 1.5 steps: tie -> even
  CHECK(float_to_fp8e5m2(-0.0f) == 0x80);
}

TEST_CASE("scalar reference matches closed forms") {
  const Table* s = table_for(Isa::Scalar);
  int8_t a[3] = {100, -128, 7}, b[3] = {100, -1, -8}, d[3];
  s->reduce[coralInt8][coralSum](d, a, b, 3);
  CHECK(d[0] == static_cast<int8_t>(200 - 256));
  CHECK(d[1] == 127);
  CHECK(d[2] == -1);
  s->reduce[coralInt8][coralMax](d, a, b, 3);
  CHECK((d[0] == 100 && d[1] == -1 && d[2] == 7));
  uint16_t x = float_to_half(1.5f), y = float_to_half(2.25f), z;
  s->reduce[coralFloat16][coralProd](&z, &x, &y, 1);
  CHECK(half_to_float(z) == 3.375f);
  uint16_t bx = float_to_bf16(-2.0f), by = float_to_bf16(5.0f), bz;
  s->reduce[coralBfloat16][coralMin](&bz, &bx, &by, 1);
  CHECK(bf16_to_float(bz) == -2.0f);
  double da = 10, dd;
  s->scale[coralFloat64](&dd, &da, 1, 4);
  CHECK(dd == 2.5);
  int32_t ia = -7, id;
  s->scale[coralInt32](&id, &ia, 1, 2);
  CHECK(id == -3);
  // Integer averages over 128+ ranks: the rank count does not fit the element type.
  int8_t i8[3] = {-128, 127, -128}, o8[3];
  s->scale[coralInt8](o8, i8, 2, 128);
  s->scale[coralInt8](o8 + 2, i8 + 2, 1, 3);
  CHECK((o8[0] == -1 && o8[1] == 0 && o8[2] == -42));
  uint8_t u8[2] = {255, 255}, p8[2];
  s->scale[coralUint8](p8, u8, 1, 256);  // was a division by zero
  s->scale[coralUint8](p8 + 1, u8 + 1, 1, 100);
  CHECK((p8[0] == 0 && p8[1] == 2));
  // fp8: each step in fp32, rounded once, saturating.
  uint8_t ea[3] = {float_to_fp8e4m3(300.0f), float_to_fp8e4m3(1.0f), float_to_fp8e4m3(-2.0f)};
  uint8_t eb[3] = {float_to_fp8e4m3(300.0f), float_to_fp8e4m3(0.125f), float_to_fp8e4m3(NAN)};
  uint8_t ed[3];
  s->reduce[coralFloat8e4m3][coralSum](ed, ea, eb, 3);
  CHECK((ed[0] == 0x7e && fp8e4m3_to_float(ed[1]) == 1.125f && ed[2] == 0x7f));
  s->reduce[coralFloat8e4m3][coralMax](ed, ea, eb, 2);
  CHECK((fp8e4m3_to_float(ed[0]) == 288.0f && fp8e4m3_to_float(ed[1]) == 1.0f));  // 300 rounds to 288
  uint8_t fa = float_to_fp8e5m2(1.25f), fb = float_to_fp8e5m2(1.25f), fd;
  s->reduce[coralFloat8e5m2][coralProd](&fd, &fa, &fb, 1);
  CHECK(fp8e5m2_to_float(fd) == 1.5f);  // 1.5625 rounds to the nearer 1.5
  uint8_t fs = float_to_fp8e5m2(12.0f);
  s->scale[coralFloat8e5m2](&fd, &fs, 1, 8);
  CHECK(fp8e5m2_to_float(fd) == 1.5f);
  s->scale[coralFloat8e5m2](&fd, &fs, 1, 5);
  CHECK(fp8e5m2_to_float(fd) == 2.5f);  // 2.4 to nearest
}

TEST_CASE("premul multiplies in the type (integers wrap) or in fp32 rounded once") {
  const Table* s = table_for(Isa::Scalar);
  int8_t ia[2] = {100, -3}, im = 3;
  s->premul[coralInt8](ia, ia, 2, &im);  // in place
  CHECK((ia[0] == static_cast<int8_t>(300 - 256) && ia[1] == -9));
  uint64_t ua = ~uint64_t{0}, um = 2, ud;
  s->premul[coralUint64](&ud, &ua, 1, &um);
  CHECK(ud == ~uint64_t{1});
  double da[2] = {1.5, -4}, dm = 0.25, dd[2];
  s->premul[coralFloat64](dd, da, 2, &dm);
  CHECK((dd[0] == 0.375 && dd[1] == -1));
  uint16_t ha = float_to_half(1.5f), hm = float_to_half(3.0f), hd;
  s->premul[coralFloat16](&hd, &ha, 1, &hm);
  CHECK(half_to_float(hd) == 4.5f);
  uint16_t ba = float_to_bf16(3.0f), bm = float_to_bf16(1.0f / 3), bd;
  s->premul[coralBfloat16](&bd, &ba, 1, &bm);
  CHECK(bd == float_to_bf16(3.0f * bf16_to_float(bm)));
  uint8_t ea[3] = {float_to_fp8e4m3(3.0f), float_to_fp8e4m3(-0.5f), 0x7f}, em = float_to_fp8e4m3(200.0f), ed[3];
  s->premul[coralFloat8e4m3](ed, ea, 3, &em);
  CHECK((ed[0] == 0x7e && fp8e4m3_to_float(ed[1]) == -96.0f && ed[2] == 0x7f));  // 600 saturates
  uint8_t fa[2] = {float_to_fp8e5m2(1.25f), 0xfc}, fm = float_to_fp8e5m2(1.25f), fnan = 0xff;
  s->premul[coralFloat8e5m2](fa, fa, 2, &fm);
  CHECK((fp8e5m2_to_float(fa[0]) == 1.5f && fa[1] == 0xfb));  // -inf saturates
  s->premul[coralFloat8e5m2](fa, fa, 2, &fnan);
  CHECK((fa[0] == 0x7f && fa[1] == 0x7f));
  for (const Table* t : {table_for(Isa::Scalar), &active()})
    for (int dt = 0; dt < coralNumTypes; ++dt) CHECK(t->premul[dt] != nullptr);
}

TEST_CASE("SIMD kernels equal the scalar reference bit for bit") {
  auto isas = simd_isas();
  if (isas.empty()) SUCCEED("no SIMD table runs on this CPU");
  std::mt19937 rng(42);
  const Table* ref = table_for(Isa::Scalar);
  for (Isa isa : isas) {
    const Table* t = table_for(isa);
    for (int dt = 0; dt < coralNumTypes; ++dt) {
      auto type = static_cast<coralDataType_t>(dt);
      const size_t es = dtype_size(type);
      for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(31), size_t(33), size_t(1000), size_t(4099)}) {
        for (size_t misalign : {size_t(0), size_t(1), size_t(3)}) {
          auto a = random_input(type, n, rng, misalign), b = random_input(type, n, rng, misalign);
          for (int op = 0; op < kOpSlots; ++op) {
            if (!ref->reduce[dt][op]) continue;  // a bitwise op of a float type
            INFO(t->name << " " << dtype_name(type) << " op slot " << op << " n=" << n << " misalign=" << misalign);
            std::vector<uint8_t> want(n * es + 64), got(n * es + 64);
            const uint8_t* pa = a.data() + misalign;
            const uint8_t* pb = b.data() + misalign;
            ref->reduce[dt][op](want.data() + misalign, pa, pb, n);
            t->reduce[dt][op](got.data() + misalign, pa, pb, n);
            REQUIRE(std::memcmp(want.data() + misalign, got.data() + misalign, n * es) == 0);
            // In place: dst aliases the first input.
            std::vector<uint8_t> inplace(a);
            t->reduce[dt][op](inplace.data() + misalign, inplace.data() + misalign, pb, n);
            ref->reduce[dt][op](want.data(), a.data() + misalign, pb, n);
            REQUIRE(std::memcmp(want.data(), inplace.data() + misalign, n * es) == 0);
          }
          std::vector<uint8_t> ws(n * es + 1), gs(n * es + 1);
          ref->scale[dt](ws.data(), a.data() + misalign, n, 3);
          t->scale[dt](gs.data(), a.data() + misalign, n, 3);
          REQUIRE(std::memcmp(ws.data(), gs.data(), n * es) == 0);
          // Pre-multiplied by a few of b's values (specials too), out of place and in place.
          for (size_t j = 0; j < std::min<size_t>(n, 3); ++j) {
            INFO(t->name << " " << dtype_name(type) << " premul n=" << n << " misalign=" << misalign << " j=" << j);
            const uint8_t* scalar = b.data() + misalign + j * es;
            ref->premul[dt](ws.data(), a.data() + misalign, n, scalar);
            t->premul[dt](gs.data(), a.data() + misalign, n, scalar);
            REQUIRE(std::memcmp(ws.data(), gs.data(), n * es) == 0);
            std::vector<uint8_t> inplace(a);
            t->premul[dt](inplace.data() + misalign, inplace.data() + misalign, n, scalar);
            REQUIRE(std::memcmp(ws.data(), inplace.data() + misalign, n * es) == 0);
          }
        }
      }
    }
  }
}

// The SIMD fp8 reductions round through fp16 (kernels/cpu/fp8_half.h), which is exact only for
// one op on two fp8 values: every pair of codes, in both orders, under every op, in place too.
TEST_CASE("SIMD fp8 reductions equal the scalar reference for every pair of codes") {
  auto isas = simd_isas();
  if (isas.empty()) SUCCEED("no SIMD table runs on this CPU");
  const Table* ref = table_for(Isa::Scalar);
  std::vector<uint8_t> a(65536), b(65536);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<uint8_t>(i);
    b[i] = static_cast<uint8_t>(i >> 8);
  }
  for (Isa isa : isas)
    for (coralDataType_t type : {coralFloat8e4m3, coralFloat8e5m2})
      for (coralRedOp_t op : {coralSum, coralProd, coralMax, coralMin}) {
        const Table* t = table_for(isa);
        const int slot = op_slot(op);
        std::vector<uint8_t> want(a.size()), got(a.size()), inplace(a);
        ref->reduce[type][slot](want.data(), a.data(), b.data(), a.size());
        t->reduce[type][slot](got.data(), a.data(), b.data(), a.size());
        t->reduce[type][slot](inplace.data(), inplace.data(), b.data(), a.size());
        for (size_t i = 0; i < a.size(); ++i) {
          INFO(t->name << " " << dtype_name(type) << " op " << op_name(op) << " codes " << int(a[i]) << ", "
                       << int(b[i]));
          REQUIRE(int(got[i]) == int(want[i]));
          REQUIRE(int(inplace[i]) == int(want[i]));
        }
      }
}

// reduce_many against the chain of pairwise reductions it replaces, in every table: any number of
// sources, lengths across its 4 KiB blocks, and dst standing in for a source at each position
// (an in-place fold's own input: its old value is what counts).
TEST_CASE("multi-source reduction equals the pairwise chain bit for bit") {
  std::mt19937 rng(7);
  std::vector<const Table*> tables{table_for(Isa::Scalar)};
  for (Isa isa : simd_isas()) tables.push_back(table_for(isa));
  for (const Table* t : tables) {
    for (int dt = 0; dt < coralNumTypes; ++dt) {
      auto type = static_cast<coralDataType_t>(dt);
      const size_t es = dtype_size(type);
      for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(4099)}) {
        for (int k : {1, 2, 3, 8, 17}) {
          std::vector<std::vector<uint8_t>> in;
          for (int j = 0; j < k; ++j) in.push_back(random_input(type, n, rng, 1));
          for (int op = 0; op < kOpSlots; ++op) {
            if (!t->reduce_many[dt][op]) continue;      // a bitwise op of a float type
            for (int alias = -1; alias < k; ++alias) {  // -1: dst is no source
              INFO(t->name << " " << dtype_name(type) << " op slot " << op << " n=" << n << " k=" << k << " dst=source "
                           << alias);
              std::vector<uint8_t> want(n * es + 1);
              // GCC 12 cannot bound n * es on one inlined path and warns falsely (-Wstringop-overflow, -Wrestrict).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wrestrict"
              std::memcpy(want.data(), in[0].data() + 1, n * es);
#pragma GCC diagnostic pop
              for (int j = 1; j < k; ++j) t->reduce[dt][op](want.data(), want.data(), in[j].data() + 1, n);
              std::vector<uint8_t> got(n * es + 1, 0xab);
              std::vector<const void*> srcs;
              for (int j = 0; j < k; ++j) srcs.push_back(in[j].data() + 1);
              if (alias >= 0) {
                std::memcpy(got.data() + 1, in[alias].data() + 1, n * es);
                srcs[alias] = got.data() + 1;
              }
              t->reduce_many[dt][op](got.data() + 1, srcs.data(), k, n);
              REQUIRE(std::memcmp(want.data(), got.data() + 1, n * es) == 0);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("the active table is one the CPU supports") {
  const Table& t = active();
  bool found = false;
  for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (table_for(i) == &t) found = cpu_supports(i);
  CHECK(found);
}

TEST_CASE("bitwise ops reduce every integer type and no float type") {
  for (const Table* t : {table_for(Isa::Scalar), &active()}) {
    for (int dt = 0; dt < coralNumTypes; ++dt) {
      auto type = static_cast<coralDataType_t>(dt);
      INFO(t->name << " " << dtype_name(type));
      for (coralRedOp_t op : {coralBand, coralBor, coralBxor}) {
        CHECK(op_fits(type, op) == !is_float(type));
        CHECK((t->reduce[dt][op_slot(op)] != nullptr) == !is_float(type));
        CHECK((t->reduce_many[dt][op_slot(op)] != nullptr) == !is_float(type));
      }
    }
    const uint8_t a[3] = {0xc3, 0x0f, 0xff}, b[3] = {0x5a, 0xf0, 0x00};
    uint8_t d[3];
    t->reduce[coralUint8][op_slot(coralBand)](d, a, b, 3);
    CHECK((d[0] == 0x42 && d[1] == 0x00 && d[2] == 0x00));
    t->reduce[coralUint8][op_slot(coralBor)](d, a, b, 3);
    CHECK((d[0] == 0xdb && d[1] == 0xff && d[2] == 0xff));
    t->reduce[coralUint8][op_slot(coralBxor)](d, a, b, 3);
    CHECK((d[0] == 0x99 && d[1] == 0xff && d[2] == 0xff));
    const int64_t x[2] = {-1, INT64_MIN}, y[2] = {0x1234, -1};
    int64_t z[2];
    t->reduce[coralInt64][op_slot(coralBxor)](z, x, y, 2);
    CHECK((z[0] == ~int64_t{0x1234} && z[1] == INT64_MAX));
  }
  CHECK(op_slot(coralSum) == 0);
  CHECK(op_slot(coralBxor) == kOpSlots - 1);
  CHECK(op_slot(coralNumOps) == -1);
  CHECK(op_slot(coralBand - 1) == -1);
  CHECK(std::string(op_name(coralBor)) == "bor");
}
