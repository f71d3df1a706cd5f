// Fuzz target for everything the topology reads from files: NCCL XML and coral JSON. Any input
// must either load or throw topo::Error; anything else (a crash, another exception) is a bug.
// Built two ways: with clang's libFuzzer by run.sh, and with a replay main (replay.cc) as a test
// that runs the kept corpus.
#include <cstddef>
#include <cstdint>
#include <string>

#include "topology/formats.h"
#include "topology/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  for (int format = 0; format < 2; format++) {
    try {
      coral::topo::Topology t = format == 0 ? coral::topo::from_nccl_xml(text, "fuzz")
                                            : coral::topo::from_json(text, "fuzz");
      // Whatever loads must also render, classify paths and survive a round trip.
      (void)coral::topo::render_matrix(t);
      (void)coral::topo::render_tree(t);
      if (!(coral::topo::from_json(coral::topo::to_json(t)) == t)) __builtin_trap();
    } catch (const coral::topo::Error&) {
    }
  }
  return 0;
}
