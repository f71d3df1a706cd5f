// The avx2 reduction table (see reduce_impl.h; meson sets this file's instruction-set flags).
#define CORAL_KERNEL_NS avx2
#define CORAL_KERNEL_NAME "avx2"
#include "kernels/cpu/reduce_impl.h"
