// Reading and writing the model: our JSON (dump/load, exact round trip), NCCL topology XML
// (NCCL_TOPO_FILE; import and export) and hwloc XML (import, through hwloc itself).
// Every loader throws topology::Error naming the input and the line or element at fault.
#pragma once
#include <string>

#include "topology/model.h"

namespace coral::topology {

std::string to_json(const Topology& t);
Topology from_json(const std::string& text, const std::string& origin = "JSON");

Topology from_nccl_xml(const std::string& text, const std::string& origin = "XML", const std::string& host = "host0");
std::string to_nccl_xml(const Topology& t);

// hwloc XML: needs the hwloc feature; throws Error when Coral was built without it.
Topology from_hwloc_xml(const std::string& text, const std::string& origin = "hwloc XML");

// A file of any of these formats, recognised by its content (after a UTF-8 byte-order mark),
// at most kMaxFileBytes long. Trees deeper than kMaxDepth (model.h) are refused, not recursed.
constexpr size_t kMaxFileBytes = size_t{64} << 20;
Topology load_file(const std::string& path);

}  // namespace coral::topology
