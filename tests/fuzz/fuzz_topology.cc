// Fuzz target for everything the topology reads from files: NCCL XML, coral JSON and hwloc XML
// (through hwloc, behind our pre-checks). Any input
// must either load or throw topology::Error; anything else (a crash, another exception) is a bug.
// Built two ways: with clang's libFuzzer by run.sh, and with a replay main (replay.cc) as a test
// that runs the kept corpus.
#include <cstddef>
#include <cstdint>
#include <string>

#include "topology/detect.h"
#include "topology/formats.h"
#include "topology/render.h"
#include "topology/rings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  namespace topo = coral::topology;
  for (int format = 0; format < 3; format++) {
    if (format == 2 && (!topo::have_hwloc() || text.find("<topology") == std::string::npos)) continue;
    try {
      topo::Topology t = format == 0   ? topo::from_nccl_xml(text, "fuzz")
                         : format == 1 ? topo::from_json(text, "fuzz")
                                       : topo::from_hwloc_xml(text, "fuzz");
      // Whatever loads must also render, classify paths, place ranks and survive both exports:
      // loading and export agree.
      (void)topo::render_matrix(t);
      (void)topo::render_tree(t);
      (void)topo::ring_order(t, topo::default_places(t, 3));
      if (!(topo::from_json(topo::to_json(t)) == t)) __builtin_trap();
      if (format == 0 && !(topo::from_nccl_xml(topo::to_nccl_xml(t)) == t)) __builtin_trap();
    } catch (const topo::Error&) {}
  }
  return 0;
}
