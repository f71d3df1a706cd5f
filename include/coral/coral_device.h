/* Coral: device-buffer utilities for tools and tests (coral-bench --device, NCCL-style tests).
 * They work with a real GPU and with Coral's stand-in GPU (CORAL_GPU_EMULATE=1), whose "device
 * memory" is host memory that only Coral can make and recognise, so a program needs no CUDA
 * headers or libraries of its own to hand device buffers and streams to coral.h's calls.
 * Streams are cudaStream_t passed as void*, as in coral.h. A bad argument gives
 * coralInvalidArgument and a CUDA failure (or no usable GPU) coralUnhandledCudaError, with the
 * detail in coralGetLastError(NULL). */
#ifndef CORAL_CORAL_DEVICE_H
#define CORAL_CORAL_DEVICE_H

#include <stddef.h>

#include "coral.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *count = the number of GPUs Coral can use (1 for the stand-in), 0 and coralSuccess when none. */
CORAL_API coralResult_t coralDeviceCount(int* count);
/* *available = 1 if a GPU is usable, else 0 and why (if not NULL) gets the reason, at most size
 * bytes with its NUL ("" when usable); a why too small gives coralInvalidArgument. */
CORAL_API coralResult_t coralDeviceAvailable(int* available, char* why, size_t size);
/* Makes device (0 <= device < coralDeviceCount) this thread's current GPU (cudaSetDevice). */
CORAL_API coralResult_t coralDeviceSet(int device);
/* *device = this thread's current GPU (cudaGetDevice). */
CORAL_API coralResult_t coralDeviceGet(int* device);
/* *ptr = size bytes of memory on the current GPU (cudaMalloc), to pass as coral.h's buffers. */
CORAL_API coralResult_t coralDeviceMalloc(void** ptr, size_t size);
/* Frees memory from coralDeviceMalloc (cudaFree); NULL does nothing, host memory is refused. */
CORAL_API coralResult_t coralDeviceFree(void* ptr);
/* *stream = a new non-blocking stream on the current GPU, to pass as coral.h's stream. */
CORAL_API coralResult_t coralStreamCreate(void** stream);
/* Destroys a stream from coralStreamCreate (any other is refused); its queued work still runs. */
CORAL_API coralResult_t coralStreamDestroy(void* stream);
/* Waits until the stream's work (Coral's stream-ordered calls included) is done. stream: NULL
 * (the default stream), one from coralStreamCreate, or, on a real GPU, any cudaStream_t. */
CORAL_API coralResult_t coralStreamSynchronize(void* stream);
/* Copies bytes from src to dst, host or device memory in any direction (cudaMemcpyDefault),
 * ordered on stream (as for coralStreamSynchronize); the copy is done once the stream is. */
CORAL_API coralResult_t coralMemcpyAsync(void* dst, const void* src, size_t bytes, void* stream);

#ifdef __cplusplus
}
#endif
#endif /* CORAL_CORAL_DEVICE_H */
