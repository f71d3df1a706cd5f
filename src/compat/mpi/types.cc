// MPI datatypes and ops as Coral's, where the mapping is exact.
#include <cstdint>
#include <cstring>

#include "interpose.h"

namespace coral_mpi {

namespace {

enum class Kind : uint8_t { Signed, Unsigned, Float, Complex, Logical, Byte, Other };

struct Named {
  MPI_Datatype type;
  Kind kind;
  int size;
};

// The predefined types by what their bits are, the common ones first (the scan stops early).
// Sizes come from the compiler, so MPI_LONG is 8 bytes here and 4 on ILP32 without a change.
const std::vector<Named>& named() {
  static const std::vector<Named> table = [] {
    std::vector<Named> t = {
        {MPI_DOUBLE, Kind::Float, sizeof(double)},
        {MPI_FLOAT, Kind::Float, sizeof(float)},
        {MPI_INT, Kind::Signed, sizeof(int)},
        {MPI_LONG, Kind::Signed, sizeof(long)},
        {MPI_INT64_T, Kind::Signed, 8},
        {MPI_UNSIGNED_LONG, Kind::Unsigned, sizeof(unsigned long)},
        {MPI_UINT64_T, Kind::Unsigned, 8},
        {MPI_UNSIGNED, Kind::Unsigned, sizeof(unsigned)},
        {MPI_INT32_T, Kind::Signed, 4},
        {MPI_UINT32_T, Kind::Unsigned, 4},
        {MPI_LONG_LONG, Kind::Signed, sizeof(long long)},
        {MPI_UNSIGNED_LONG_LONG, Kind::Unsigned, sizeof(unsigned long long)},
        {MPI_BYTE, Kind::Byte, 1},
        {MPI_CHAR, Kind::Other, 1},  // text: MPI gives it no reductions
        {MPI_SIGNED_CHAR, Kind::Signed, 1},
        {MPI_UNSIGNED_CHAR, Kind::Unsigned, 1},
        {MPI_INT8_T, Kind::Signed, 1},
        {MPI_UINT8_T, Kind::Unsigned, 1},
        {MPI_C_BOOL, Kind::Logical, sizeof(bool)},
        {MPI_SHORT, Kind::Signed, sizeof(short)},
        {MPI_UNSIGNED_SHORT, Kind::Unsigned, sizeof(unsigned short)},
        {MPI_INT16_T, Kind::Signed, 2},
        {MPI_UINT16_T, Kind::Unsigned, 2},
        {MPI_AINT, Kind::Signed, sizeof(MPI_Aint)},
        {MPI_OFFSET, Kind::Signed, sizeof(MPI_Offset)},
        {MPI_COUNT, Kind::Signed, sizeof(MPI_Count)},
        {MPI_C_FLOAT_COMPLEX, Kind::Complex, 2 * sizeof(float)},
        {MPI_C_DOUBLE_COMPLEX, Kind::Complex, 2 * sizeof(double)},
        {MPI_WCHAR, Kind::Other, sizeof(wchar_t)},
        {MPI_LONG_DOUBLE, Kind::Other, sizeof(long double)},
        // Fortran's, for programs that pass them from C or through the Fortran bindings.
        {MPI_INTEGER, Kind::Signed, 4},
        {MPI_REAL, Kind::Float, 4},
        {MPI_DOUBLE_PRECISION, Kind::Float, 8},
        {MPI_LOGICAL, Kind::Logical, 4},
        {MPI_CHARACTER, Kind::Other, 1},
        {MPI_COMPLEX, Kind::Complex, 8},
        {MPI_DOUBLE_COMPLEX, Kind::Complex, 16},
        {MPI_INTEGER1, Kind::Signed, 1},
        {MPI_INTEGER2, Kind::Signed, 2},
        {MPI_INTEGER4, Kind::Signed, 4},
        {MPI_INTEGER8, Kind::Signed, 8},
        {MPI_REAL4, Kind::Float, 4},
        {MPI_REAL8, Kind::Float, 8},
    };
    // An MPI built without Fortran leaves some of these null: never match them.
    std::vector<Named> valid;
    for (const Named& n : t)
      if (n.type != MPI_DATATYPE_NULL) valid.push_back(n);
    return valid;
  }();
  return table;
}

const Named* find(MPI_Datatype t) {
  for (const Named& n : named())
    if (n.type == t) return &n;
  return nullptr;
}

bool integer_type(int size, bool is_signed, coralDataType_t* out) {
  switch (size) {
    case 1:
      return *out = is_signed ? coralInt8 : coralUint8, true;
    case 4:
      return *out = is_signed ? coralInt32 : coralUint32, true;
    case 8:
      return *out = is_signed ? coralInt64 : coralUint64, true;
    default:  // Coral has no 16-bit integers
      return false;
  }
}

bool float_type(int size, coralDataType_t* out) {
  if (size == 4) return *out = coralFloat32, true;
  if (size == 8) return *out = coralFloat64, true;
  return false;
}

// A type's size, extent and bounds; false if it is not a valid datatype.
bool bounds(MPI_Datatype type, Layout* out) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  if (PMPI_Type_size(type, &size) != MPI_SUCCESS) return false;
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &tlb, &textent);
  out->size = size;
  out->extent = extent;
  out->lb = tlb;
  // Data fills the extent, no gaps or overlap: what byte spans alone can tell.
  out->contiguous = size == textent && textent == extent && tlb == lb;
  return true;
}

// Whether a derived type lists its elements in the order they lie in memory, each block where
// the previous one ends. A type can fill its extent exactly and still list them out of order (an
// indexed type with displacements {1, 0}); its bytes are then not its packed form. Types this
// does not walk (subarray, darray...) count as out of order: they are packed, always right.
bool in_order(MPI_Datatype type, int depth = 0) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  if (depth > 64 || PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
  if (combiner == MPI_COMBINER_NAMED) return true;
  std::vector<int> ints(static_cast<size_t>(ni));
  std::vector<MPI_Aint> addrs(static_cast<size_t>(na));
  std::vector<MPI_Datatype> types(static_cast<size_t>(nd));
  PMPI_Type_get_contents(type, ni, na, nd, ints.data(), addrs.data(), types.data());
  // Each inner type in order and gapless (so that copies of it follow each other), and their
  // extents for the byte displacements below.
  bool ok = true;
  std::vector<MPI_Aint> extent(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    Layout l;
    ok = ok && bounds(types[i], &l) && l.contiguous && in_order(types[i], depth + 1);
    extent[i] = l.extent;
  }
  for (MPI_Datatype& t : types) {
    int a = 0, b = 0, c = 0, named = 0;
    PMPI_Type_get_envelope(t, &a, &b, &c, &named);
    if (named != MPI_COMBINER_NAMED) PMPI_Type_free(&t);  // MPI hands back new handles of derived types
  }
  if (!ok) return false;
  // Blocks of `len` inner elements at byte offsets `at`, in order, each where the last ended.
  MPI_Aint next = 0;
  bool first = true;
  auto block = [&](MPI_Aint at, MPI_Aint len, MPI_Aint ext) {
    if (len == 0) return true;
    const bool follows = first || at == next;
    first = false;
    next = at + len * ext;
    return follows;
  };
  switch (combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_RESIZED:  // the bounds test sees what resizing did
      return true;
    case MPI_COMBINER_VECTOR:  // count, blocklength, stride (in inner extents)
      return ints[0] <= 1 || ints[2] == ints[1];
    case MPI_COMBINER_HVECTOR:  // count, blocklength; stride in bytes
      return ints[0] <= 1 || addrs[0] == ints[1] * extent[0];
    case MPI_COMBINER_INDEXED:  // count, blocklengths[count], displacements[count] (in extents)
      for (int i = 0; i < ints[0]; ++i)
        if (!block(ints[1 + ints[0] + i] * extent[0], ints[1 + i], extent[0])) return false;
      return true;
    case MPI_COMBINER_HINDEXED:  // count, blocklengths[count]; displacements in bytes
      for (int i = 0; i < ints[0]; ++i)
        if (!block(addrs[i], ints[1 + i], extent[0])) return false;
      return true;
    case MPI_COMBINER_INDEXED_BLOCK:  // count, blocklength, displacements[count]
      for (int i = 0; i < ints[0]; ++i)
        if (!block(ints[2 + i] * extent[0], ints[1], extent[0])) return false;
      return true;
    case MPI_COMBINER_HINDEXED_BLOCK:  // count, blocklength; displacements in bytes
      for (int i = 0; i < ints[0]; ++i)
        if (!block(addrs[i], ints[1], extent[0])) return false;
      return true;
    case MPI_COMBINER_STRUCT:  // count, blocklengths[count]; displacements in bytes; types[count]
      for (int i = 0; i < ints[0]; ++i)
        if (!block(addrs[i], ints[1 + i], extent[i])) return false;
      return true;
    default:
      return false;
  }
}

}  // namespace

Reason map_reduction(MPI_Datatype type, MPI_Op op, int count, Reduction* r) {
  if (count < 0 || type == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return kArgs;
  const Named* n = find(type);
  if (!n) return kType;  // derived: MPI reduces it
  r->elem = n->size;
  r->count = static_cast<size_t>(count);
  r->bytes = r->count * static_cast<size_t>(n->size);
  const bool integer = n->kind == Kind::Signed || n->kind == Kind::Unsigned;
  if (op == MPI_SUM || op == MPI_PROD || op == MPI_MIN || op == MPI_MAX) {
    r->op = op == MPI_SUM ? coralSum : op == MPI_PROD ? coralProd : op == MPI_MIN ? coralMin : coralMax;
    if (integer) return integer_type(n->size, n->kind == Kind::Signed, &r->dtype) ? kHandled : kType;
    if (n->kind == Kind::Float) return float_type(n->size, &r->dtype) ? kHandled : kType;
    // A complex sum is the sum of its parts; products and orderings are not.
    if (n->kind == Kind::Complex && op == MPI_SUM && float_type(n->size / 2, &r->dtype)) {
      r->count *= 2;
      return kHandled;
    }
    return n->kind == Kind::Complex || n->kind == Kind::Other ? kType : kOp;
  }
  const bool bitwise = op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR;
  const bool logical = op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
  // Bits are bits whatever the width, so every integer (16-bit too) goes as bytes. Logical ops
  // see 0/1 after normalize(), where AND/OR/XOR of the bytes are exactly MPI's.
  if ((bitwise && (integer || n->kind == Kind::Byte)) || (logical && (integer || n->kind == Kind::Logical))) {
    r->dtype = coralUint8;
    r->count = r->bytes;
    r->op = (op == MPI_BAND || op == MPI_LAND) ? coralBand : (op == MPI_BOR || op == MPI_LOR) ? coralBor : coralBxor;
    r->normalize = logical;
    return kHandled;
  }
  return kOp;
}

void normalize(const void* in, void* out, size_t elems, int elem) {
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  const size_t w = static_cast<size_t>(elem);
  for (size_t i = 0; i < elems; ++i) {
    unsigned char any = 0;
    for (size_t b = 0; b < w; ++b) any |= src[i * w + b];
    std::memset(dst + i * w, 0, w);
    dst[i * w] = any != 0;  // little-endian: the low byte holds the 1
  }
}

bool layout_of(MPI_Datatype type, Layout* out) {
  if (type == MPI_DATATYPE_NULL) return false;
  if (const Named* n = find(type)) {
    out->size = out->extent = n->size;
    out->lb = 0;
    out->contiguous = true;
    return true;
  }
  if (!bounds(type, out)) return false;
  // Used where it lies only if its bytes are its packed form: no gaps, and in order.
  out->contiguous = out->contiguous && in_order(type);
  return true;
}

}  // namespace coral_mpi
