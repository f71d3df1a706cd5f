#include "bootstrap/store.h"

namespace coral::bootstrap {

Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string to_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

std::vector<Bytes> store_allgather(Store& store, const std::string& prefix, int rank, int nranks, const Bytes& mine,
                                   std::chrono::milliseconds timeout) {
  store.set(prefix + "/" + std::to_string(rank), mine);
  std::vector<Bytes> all(nranks);
  for (int r = 0; r < nranks; ++r) all[r] = r == rank ? mine : store.get(prefix + "/" + std::to_string(r), timeout);
  return all;
}

void store_barrier(Store& store, const std::string& prefix, int rank, int nranks, std::chrono::milliseconds timeout) {
  store_allgather(store, prefix, rank, nranks, Bytes{}, timeout);
}

}  // namespace coral::bootstrap
