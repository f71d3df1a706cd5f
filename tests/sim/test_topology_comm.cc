// Topology drives the communicator: 8 thread ranks pose as a fixture machine's GPUs
// (CORAL_TOPO_FILE + CORAL_TOPO_DEVICES) and must get the ring and NICs coral-topo predicts,
// which the fixture's own facts confirm (cheapest ring by brute force, each GPU's closest NIC),
// and their collectives must still be exact over the permuted ring.
#include <coral/coral.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "common/thread_ranks.h"
#include "core/guard.h"
#include "topology/formats.h"
#include "topology/rings.h"

using namespace coral::topology;

namespace {

// What coral-topo prints for n ranks on the file: the ring (rank numbers in order) and each
// rank's NIC port ("none" without one).
struct Prediction {
  std::vector<int> ring;
  std::vector<std::string> nic;
};

Prediction predict(const std::string& file, int n) {
  const char* tool = std::getenv("CORAL_TOPO_TOOL");
  REQUIRE(tool != nullptr);
  const std::string cmd = fmt::format("'{}' -l '{}' -f summary -r {} 2>/dev/null", tool, file, n);
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[4096];
  for (size_t got; (got = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, got);
  REQUIRE(pclose(f) == 0);
  Prediction p;
  p.nic.resize(static_cast<size_t>(n));
  const std::regex ring_line(R"(^ring:(.*)$)"), hop(R"((\d+) -)"),
      rank_line(R"(^\s+rank\s+(\d+) on \S+ \(\w+\), NIC (\S+))");
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, ring_line)) {
      const std::string hops = m[1];
      for (std::sregex_iterator it(hops.begin(), hops.end(), hop), end; it != end; ++it)
        p.ring.push_back(std::stoi((*it)[1]));
    } else if (std::regex_search(line, m, rank_line)) {
      p.nic.at(std::stoul(m[1])) = m[2] == "none" ? "" : std::string(m[2]);
    }
  }
  INFO(out);
  REQUIRE(p.ring.size() == static_cast<size_t>(n));
  return p;
}

int cycle_cost(const Topology& t, const std::vector<RankPlace>& places, const std::vector<int>& ring) {
  int sum = 0;
  for (size_t i = 0; i < ring.size() && ring.size() > 1; i++) {
    const int a = places[static_cast<size_t>(ring[i])].device,
              b = places[static_cast<size_t>(ring[(i + 1) % ring.size()])].device;
    sum += a == b ? 0 : static_cast<int>(t.path(a, b).type);
  }
  return sum;
}

// The cheapest cycle's summed path classes, by trying every cycle through rank 0.
int cheapest_cycle(const Topology& t, const std::vector<RankPlace>& places) {
  std::vector<int> ring(places.size());
  std::iota(ring.begin(), ring.end(), 0);
  int best = cycle_cost(t, places, ring);
  while (std::next_permutation(ring.begin() + 1, ring.end())) best = std::min(best, cycle_cost(t, places, ring));
  return best;
}

}  // namespace

TEST_CASE("every fixture: the communicator takes coral-topo's ring and NICs, and they are the machine's best") {
  for (const char* name :
       {"oci-hpc_H100-topology.xml", "azure-azhpc-images_ndv4-topo.xml", "nccl-issue2397_2xA100-PCIe_RoCE_nonvlink.xml",
        "aws-ofi-nccl_p4d-24xl-topo.xml", "hwloc-2.14.0_nvidiaDGX2.xml", "hwloc-2.14.0_96em64t-4n4d3ca2co-pci.xml"}) {
    INFO(name);
    const std::string file = fixture(name);
    const Topology t = load_file(file);
    const int gpus = static_cast<int>(t.of_kind(Kind::Gpu).size());
    const int n = gpus > 0 ? std::min(8, gpus) : 8;
    const std::vector<RankPlace> places = default_places(t, n);
    std::string devices;
    for (const RankPlace& p : places) devices += (devices.empty() ? "" : ",") + t.devices[p.device].id;
    setenv("CORAL_TOPO_FILE", file.c_str(), 1);
    setenv("CORAL_TOPO_DEVICES", devices.c_str(), 1);

    std::vector<coral::Placement> seen(static_cast<size_t>(n));
    // Exact over the topology's ring, with every algorithm that rides it forced.
    for (const char* algo : {"ring", "hier"}) {
      INFO(algo);
      setenv("CORAL_ALGO", algo, 1);
      const std::string error = on_ranks(n, [&](int rank, coralComm_t comm) -> std::string {
        seen[static_cast<size_t>(rank)] = comm->impl->placement();
        std::vector<int64_t> mine(1000), got(1000);
        for (size_t i = 0; i < mine.size(); i++) mine[i] = static_cast<int64_t>((rank + 1) * 100000 + i);
        CALL(coralAllReduce(mine.data(), got.data(), mine.size(), coralInt64, coralSum, comm, nullptr));
        for (size_t i = 0; i < got.size(); i++) {
          const int64_t want = static_cast<int64_t>(n * (n + 1) / 2) * 100000 + static_cast<int64_t>(n * i);
          if (got[i] != want) return fmt::format("rank {}: element {} is {}, expected {}", rank, i, got[i], want);
        }
        std::vector<int64_t> gathered(mine.size() * static_cast<size_t>(n));
        CALL(coralAllGather(mine.data(), gathered.data(), mine.size(), coralInt64, comm, nullptr));
        for (int q = 0; q < n; q++)
          if (gathered[static_cast<size_t>(q) * mine.size()] != (q + 1) * 100000)
            return fmt::format("rank {}: all-gather block {} misplaced", rank, q);
        return "";
      });
      REQUIRE(error == "");
    }
    unsetenv("CORAL_ALGO");
    unsetenv("CORAL_TOPO_FILE");
    unsetenv("CORAL_TOPO_DEVICES");

    const Prediction want = predict(file, n);
    for (int r = 0; r < n; r++) {
      INFO("rank " << r);
      // Every rank holds the same plan, and it is coral-topo's.
      CHECK(seen[static_cast<size_t>(r)].ring == want.ring);
      CHECK(seen[0].port[static_cast<size_t>(r)] == want.nic[static_cast<size_t>(r)]);
      CHECK(seen[0].device[static_cast<size_t>(r)] == t.devices[places[static_cast<size_t>(r)].device].id);
    }
    // The machine's facts: no ring through these devices is cheaper (path classes summed)...
    CHECK(cycle_cost(t, places, seen[0].ring) == cheapest_cycle(t, places));
    // ...and each GPU uses a NIC as close as any.
    const std::vector<int> ports = t.nic_endpoints();
    for (int r = 0; r < n && gpus > 0 && !ports.empty(); r++) {
      const int dev = places[static_cast<size_t>(r)].device, chosen = t.find(seen[0].port[static_cast<size_t>(r)]);
      REQUIRE(chosen >= 0);
      Path best = Path::NET;
      for (int p : ports) best = std::min(best, t.path(dev, p).type);
      INFO("rank " << r << " NIC " << seen[0].port[static_cast<size_t>(r)]);
      CHECK(t.path(dev, chosen).type == best);
    }
  }
}

TEST_CASE("a bad CORAL_TOPO_FILE or CORAL_TOPO_DEVICES fails init on every rank, naming it") {
  setenv("CORAL_TOPO_FILE", fixture("rccl_topo_8p_pcie.xml").c_str(), 1);
  std::string error = on_ranks(2, [](int, coralComm_t) { return std::string(); });
  CHECK_THAT(error, Catch::Contains("CORAL_TOPO_FILE"));
  setenv("CORAL_TOPO_FILE", fixture("oci-hpc_H100-topology.xml").c_str(), 1);
  setenv("CORAL_TOPO_DEVICES", "0000:99:00.0", 1);
  error = on_ranks(2, [](int, coralComm_t) { return std::string(); });
  CHECK_THAT(error, Catch::Contains("CORAL_TOPO_DEVICES: '0000:99:00.0' is no device"));
  setenv("CORAL_TOPO_DEVICES", "mlx5_0,mlx5_1", 1);  // a NIC's port is no place for a rank
  error = on_ranks(2, [](int, coralComm_t) { return std::string(); });
  CHECK_THAT(error, Catch::Contains("CORAL_TOPO_DEVICES: 'mlx5_0' is a port, not a GPU or a CPU"));
  unsetenv("CORAL_TOPO_FILE");
  unsetenv("CORAL_TOPO_DEVICES");
}

TEST_CASE("CORAL_TOPO_DUMP_FILE: rank 0 writes the model it used, JSON or NCCL XML by name") {
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  const std::string file = fixture("nccl-issue2397_2xA100-PCIe_RoCE_nonvlink.xml");
  const Topology t = load_file(file);
  setenv("CORAL_TOPO_FILE", file.c_str(), 1);
  for (const char* ext : {".json", ".xml"}) {
    const std::string out = fmt::format("{}/coral-topo-dump-{}{}", dir, getpid(), ext);
    std::remove(out.c_str());
    setenv("CORAL_TOPO_DUMP_FILE", out.c_str(), 1);
    REQUIRE(on_ranks(2, [](int, coralComm_t) { return std::string(); }) == "");
    std::ifstream in(out);
    REQUIRE(in.good());
    std::string head;
    std::getline(in, head);
    CHECK(head.find(ext[1] == 'x' ? "<" : "{") != std::string::npos);
    const Topology back = load_file(out);
    CHECK(back.of_kind(Kind::Gpu).size() == t.of_kind(Kind::Gpu).size());
    CHECK(back.nic_endpoints().size() == t.nic_endpoints().size());
    std::remove(out.c_str());
  }
  unsetenv("CORAL_TOPO_DUMP_FILE");
  unsetenv("CORAL_TOPO_FILE");
}
