#include "transport/ucx/transport.h"

#include "transport/ucx/domain.h"

namespace coral::transport::ucx {

std::unique_ptr<Domain> UcxTransport::connect(const ConnectArgs& args) { return std::make_unique<UcxDomain>(args); }

}  // namespace coral::transport::ucx
