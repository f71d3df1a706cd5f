// Coral failures through MPI's error handling, MPI_Error_string, MPI_Finalize and MPI_Abort.
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "interpose.h"

namespace coral_mpi {

namespace {

std::mutex g_mu;
int g_last_class = MPI_SUCCESS;  // the class the last Coral failure returned, and its message
std::string g_last_message;

int class_of(coralResult_t r) {
  switch (r) {
    case coralInvalidArgument:
      return MPI_ERR_ARG;
    case coralInternalError:
      return MPI_ERR_INTERN;
    default:  // usage, timeout, a peer's failure, the OS: MPI has no closer class
      return MPI_ERR_OTHER;
  }
}

bool fatal(MPI_Comm comm) {
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS) return true;
  const bool is_fatal = eh == MPI_ERRORS_ARE_FATAL
#ifdef MPI_ERRORS_ABORT
                        || eh == MPI_ERRORS_ABORT
#endif
      ;
  PMPI_Errhandler_free(&eh);
  return is_fatal;
}

}  // namespace

int fail(MPI_Comm comm, const char* call, coralResult_t result, const std::string& message) {
  const int cls = class_of(result);
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string text = std::string(call) + " on Coral failed: " + coralGetErrorString(result) +
                           (message.empty() ? std::string() : ": " + message);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_last_class = cls;
    g_last_message = text;
  }
  if (fatal(comm)) {
    std::fprintf(stderr, "coral-mpi: rank %d: %s\n", rank, text.c_str());
    std::fflush(stderr);
    report(true);  // the job ends here, not in MPI_Finalize: this rank's counts are the last word
    PMPI_Abort(comm, cls);
  }
  PMPI_Comm_call_errhandler(comm, cls);
  return cls;
}

}  // namespace coral_mpi

using namespace coral_mpi;

extern "C" int MPI_Error_string(int code, char* string, int* resultlen) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (code != MPI_SUCCESS && code == g_last_class && !g_last_message.empty() && string && resultlen) {
      const size_t n = std::min(g_last_message.size(), static_cast<size_t>(MPI_MAX_ERROR_STRING - 1));
      std::memcpy(string, g_last_message.data(), n);
      string[n] = '\0';
      *resultlen = static_cast<int>(n);
      return MPI_SUCCESS;
    }
  }
  return PMPI_Error_string(code, string, resultlen);
}

extern "C" int MPI_Finalize(void) {
  shutdown();
  return PMPI_Finalize();
}

extern "C" int MPI_Abort(MPI_Comm comm, int errorcode) {
  report(true);
  return PMPI_Abort(comm, errorcode);
}
