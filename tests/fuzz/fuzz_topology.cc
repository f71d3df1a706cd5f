// Fuzz target for everything the topology reads from files: NCCL XML and coral JSON. Any input
// must either load or throw topology::Error; anything else (a crash, another exception) is a bug.
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
      coral::topology::Topology t =
          format == 0 ? coral::topology::from_nccl_xml(text, "fuzz") : coral::topology::from_json(text, "fuzz");
      // Whatever loads must also render, classify paths and survive a round trip.
      (void)coral::topology::render_matrix(t);
      (void)coral::topology::render_tree(t);
      if (!(coral::topology::from_json(coral::topology::to_json(t)) == t)) __builtin_trap();
    } catch (const coral::topology::Error&) {}
  }
  return 0;
}
