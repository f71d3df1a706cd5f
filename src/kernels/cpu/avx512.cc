// The avx512 reduction table (see reduce_impl.h; meson sets this file's instruction-set flags).
#define CORAL_KERNEL_NS avx512
#define CORAL_KERNEL_NAME "avx512"
#include "kernels/cpu/reduce_impl.h"
