// Host functions of NCCL releases newer than the header this library is built against: 2.29's
// grow, one-sided signals and device pointers, 2.29.7's suspend, resume and memory statistics,
// 2.30's parameter API. A program built against such a release references them whether it calls
// them or not (torch 2.12 and later are built with 2.29): without them it fails to load under
// this library. So they are exported, each saying it is not supported. Their arguments are never
// read, so one variadic signature serves. Against a header that declares them they are left out
// here, and the exports test names the ones that header then needs.
#include "shim.h"

namespace {

ncclResult_t newer(const char* fn) {
  return coral_nccl::fail(ncclInvalidUsage, std::string(fn) + ": not supported (a function of a newer NCCL than " +
                                                std::to_string(NCCL_VERSION_CODE) + ", whose ABI this library has)");
}

}  // namespace

#define CORAL_NCCL_NEWER(name)                                                                      \
  extern "C" __attribute__((visibility("default"))) ncclResult_t name(...) { return newer(#name); } \
  extern "C" __attribute__((alias(#name), visibility("default"))) ncclResult_t p##name(...);

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 29, 2)
CORAL_NCCL_NEWER(ncclCommGetUniqueId)
CORAL_NCCL_NEWER(ncclCommGrow)
CORAL_NCCL_NEWER(ncclPutSignal)
CORAL_NCCL_NEWER(ncclSignal)
CORAL_NCCL_NEWER(ncclWaitSignal)
CORAL_NCCL_NEWER(ncclWinGetUserPtr)
CORAL_NCCL_NEWER(ncclCommQueryProperties)
CORAL_NCCL_NEWER(ncclGetLsaDevicePointer)
CORAL_NCCL_NEWER(ncclGetPeerDevicePointer)
CORAL_NCCL_NEWER(ncclGetMultimemDevicePointer)
CORAL_NCCL_NEWER(ncclGetLsaMultimemDevicePointer)
#endif
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 29, 7)
CORAL_NCCL_NEWER(ncclCommSuspend)
CORAL_NCCL_NEWER(ncclCommResume)
CORAL_NCCL_NEWER(ncclCommMemStats)
#endif
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 30, 0)
CORAL_NCCL_NEWER(ncclGinInboxA2ACreateRequirement)
CORAL_NCCL_NEWER(ncclGinOutboxCreateRequirement)
CORAL_NCCL_NEWER(ncclParamBind)
CORAL_NCCL_NEWER(ncclParamGet)
CORAL_NCCL_NEWER(ncclParamGetI8)
CORAL_NCCL_NEWER(ncclParamGetI16)
CORAL_NCCL_NEWER(ncclParamGetI32)
CORAL_NCCL_NEWER(ncclParamGetI64)
CORAL_NCCL_NEWER(ncclParamGetU8)
CORAL_NCCL_NEWER(ncclParamGetU16)
CORAL_NCCL_NEWER(ncclParamGetU32)
CORAL_NCCL_NEWER(ncclParamGetU64)
CORAL_NCCL_NEWER(ncclParamGetStr)
CORAL_NCCL_NEWER(ncclParamGetParameter)
CORAL_NCCL_NEWER(ncclParamGetAllParameterKeys)
// The one that returns nothing: nothing to dump.
extern "C" __attribute__((visibility("default"))) void ncclParamDumpAll(void) {}
extern "C" __attribute__((alias("ncclParamDumpAll"), visibility("default"))) void pncclParamDumpAll(void);
#endif
