// Every SIMD table against the scalar reference, every dtype x op, odd lengths, misaligned
// pointers and aliasing; the scalar reference against closed forms.
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
        }
      }
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
