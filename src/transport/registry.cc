#include "transport/shm/transport.h"
#include "transport/transport.h"

namespace coral::transport {

std::vector<Transport*> registry() {
  static shm::ShmTransport shm;
  return {&shm};
}

}  // namespace coral::transport
