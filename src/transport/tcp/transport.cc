#include "transport/tcp/transport.h"

#include "transport/tcp/domain.h"

namespace coral::transport::tcp {

std::unique_ptr<Domain> TcpTransport::connect(const ConnectArgs& args) { return std::make_unique<TcpDomain>(args); }

}  // namespace coral::transport::tcp
