// Reduction kernels: a dispatch table indexed by (dtype, op), one table per instruction set.
// The scalar table is the reference every SIMD table is tested against.
#pragma once
#include <coral/coral.h>

#include <cstddef>

namespace coral::kernels {

size_t dtype_size(coralDataType_t t);
const char* dtype_name(coralDataType_t t);
const char* op_name(coralRedOp_t op);
bool valid_dtype(int t);
bool valid_op(int op);
// Ops by table slot: the NCCL ops 0..coralNumOps-1, then the bitwise ones. -1 for no op.
constexpr int kOpSlots = coralNumOps + 3;
int op_slot(int op);
bool bitwise(coralRedOp_t op);
bool is_float(coralDataType_t t);
// Whether op reduces values of type t (bitwise ops take integer types only).
bool op_fits(coralDataType_t t, coralRedOp_t op);

// dst[i] = a[i] (op) b[i]; dst may be a or b. coralAvg reduces as a sum (scaled at the end).
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n);
// dst = srcs[0] (op) srcs[1] (op) ... (op) srcs[k-1], left to right (k >= 1): bit for bit the
// chain of ReduceFn calls, in one pass over dst. Any source may be dst itself.
using ReduceManyFn = void (*)(void* dst, const void* const* srcs, int k, size_t n);
// dst[i] = src[i] / divisor (integer types divide, truncating); dst may be src.
using ScaleFn = void (*)(void* dst, const void* src, size_t n, int divisor);

// dst[i] = src[i] * *scalar, with scalar one value of the type (PreMulSum's pre-scaling); dst may
// be src. 16-bit and fp8 types multiply in fp32 and round once.
using PremulFn = void (*)(void* dst, const void* src, size_t n, const void* scalar);

struct Table {
  const char* name;
  // Indexed by op_slot(op); null where the op does not take the type.
  ReduceFn reduce[coralNumTypes][kOpSlots];
  ReduceManyFn reduce_many[coralNumTypes][kOpSlots];
  ScaleFn scale[coralNumTypes];
  PremulFn premul[coralNumTypes];
};

enum class Isa { Scalar, Avx2, Avx512 };

// nullptr when the table was not compiled in or the CPU cannot run it.
const Table* table_for(Isa isa);
bool cpu_supports(Isa isa);
// The table used by collectives: CORAL_KERNEL, else the best the CPU supports.
const Table& active();

}  // namespace coral::kernels
