// Copies for the data path. Stores into a transport slot that another core reads next bypass
// this core's caches (non-temporal), so the reader streams from memory instead of probing our
// cache line by line; small copies use memcpy.
#pragma once
#include <cstddef>

namespace coral::kernels {

void copy_streaming(void* dst, const void* src, size_t bytes);

}  // namespace coral::kernels
