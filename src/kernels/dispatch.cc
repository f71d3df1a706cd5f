#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <iterator>
#include <mutex>
#include <string>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "kernels/reduce.h"

namespace coral::kernels {

namespace scalar {
const Table* table();
}
#ifdef CORAL_HAVE_AVX2_KERNELS
namespace avx2 {
const Table* table();
}
#endif
#ifdef CORAL_HAVE_AVX512_KERNELS
namespace avx512 {
const Table* table();
}
#endif

size_t dtype_size(coralDataType_t t) {
  switch (t) {
    case coralInt8:
    case coralUint8:
    case coralFloat8e4m3:
    case coralFloat8e5m2:
      return 1;
    case coralFloat16:
    case coralBfloat16:
      return 2;
    case coralInt32:
    case coralUint32:
    case coralFloat32:
      return 4;
    case coralInt64:
    case coralUint64:
    case coralFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* dtype_name(coralDataType_t t) {
  static const char* names[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                                "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  static_assert(std::size(names) == coralNumTypes);
  return valid_dtype(t) ? names[t] : "invalid";
}

const char* op_name(coralRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg", "band", "bor", "bxor"};
  static_assert(std::size(names) == kOpSlots);
  return valid_op(op) ? names[op_slot(op)] : "invalid";
}

bool valid_dtype(int t) { return t >= 0 && t < coralNumTypes; }
int op_slot(int op) {
  if (op >= 0 && op < coralNumOps) return op;
  if (op >= coralBand && op <= coralBxor) return coralNumOps + (op - coralBand);
  return -1;
}
bool valid_op(int op) { return op_slot(op) >= 0; }
bool bitwise(coralRedOp_t op) { return op >= coralBand && op <= coralBxor; }
bool is_float(coralDataType_t t) {
  return t == coralFloat16 || t == coralBfloat16 || t == coralFloat32 || t == coralFloat64 || t == coralFloat8e4m3 ||
         t == coralFloat8e5m2;
}
bool op_fits(coralDataType_t t, coralRedOp_t op) {
  return valid_dtype(t) && valid_op(op) && !(bitwise(op) && is_float(t));
}

const Table* table_for(Isa isa) {
  // The SIMD files are compiled with their -m flags throughout, so even building their table
  // may use those instructions: never touch one the CPU lacks.
  if (!cpu_supports(isa)) return nullptr;
  switch (isa) {
    case Isa::Scalar:
      return scalar::table();
#ifdef CORAL_HAVE_AVX2_KERNELS
    case Isa::Avx2:
      return avx2::table();
#endif
#ifdef CORAL_HAVE_AVX512_KERNELS
    case Isa::Avx512:
      return avx512::table();
#endif
    default:
      return nullptr;
  }
}

#if defined(__x86_64__) || defined(__i386__)
// CPUID leaf 1, ECX bit 29: read directly because clang's __builtin_cpu_supports has no "f16c".
bool has_f16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

bool cpu_supports(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Scalar:
      return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && has_f16c() && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && has_f16c();
  }
  return false;
#else
  return isa == Isa::Scalar;
#endif
}

static const Table* choose() {
  std::string want = config::get_string("CORAL_KERNEL");
  struct Choice {
    const char* name;
    Isa isa;
  };
  const Choice order[] = {{"avx512", Isa::Avx512}, {"avx2", Isa::Avx2}, {"scalar", Isa::Scalar}};
  for (const Choice& c : order) {
    if (want != "auto" && want != c.name) continue;
    const Table* t = table_for(c.isa);
    if (t) return t;
    if (want != "auto") fail(coralInvalidArgument, "CORAL_KERNEL=" + want + " is not available on this CPU/build");
  }
  if (want != "auto") fail(coralInvalidArgument, "CORAL_KERNEL='" + want + "' (expected auto, scalar, avx2, avx512)");
  return scalar::table();
}

const Table& active() {
  static const Table* t = [] {
    const Table* c = choose();
    log::info(log::Init, "reduction kernels: {}", c->name);
    return c;
  }();
  return *t;
}

}  // namespace coral::kernels
