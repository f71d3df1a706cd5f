#include "kernels/copy.h"

#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace coral::kernels {

void copy_streaming(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;  // empty messages carry no buffer (src may be null)
#if defined(__x86_64__)
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  // Below 64 KiB the reader is about to use the data while it is still in the shared cache: plain
  // stores measured 1.3-2.5x faster than streaming ones for 4-32 KiB one-shot/two-shot messages.
  if (bytes < 65536) {
    std::memcpy(d, s, bytes);
    return;
  }
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();  // order the streaming stores before the slot is published
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace coral::kernels
