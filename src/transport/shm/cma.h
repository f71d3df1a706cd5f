// Whether cross-memory attach pays on this machine. A by-reference message costs the receiver
// one process_vm_readv; through the slots it costs two copies, one on each side. Where the kernel
// pins pages slowly (a guest whose page tables the hypervisor manages, as on the development VM),
// process_vm_readv ran 3-8x slower than memcpy and a 1 MiB all-reduce through it 3x slower than
// through the slots (bench/coral-bench/results.txt), so by default each process measures once.
#pragma once
#include <cstddef>

namespace coral::transport::shm {

struct CmaProbe {
  double cma_us = 0, copy_us = 0;  // best of a few: one process_vm_readv, one memcpy, of kCmaProbeBytes
  bool works = false;              // process_vm_readv on this process succeeded
  bool pays = false;               // works, and the read is under 1.5x the copy (cma.cc says why)
};
constexpr size_t kCmaProbeBytes = size_t(1) << 20;

// Measured on the first call, then cached for the process.
const CmaProbe& cma_probe();
// CORAL_CMA: on, off, or auto (cma_probe().pays).
bool cma_wanted();

}  // namespace coral::transport::shm
