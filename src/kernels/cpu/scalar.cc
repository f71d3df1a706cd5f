// The scalar reduction table (see reduce_impl.h; meson sets this file's instruction-set flags).
#define CORAL_KERNEL_NS scalar
#define CORAL_KERNEL_NAME "scalar"
#include "kernels/cpu/reduce_impl.h"
