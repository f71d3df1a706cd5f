// Topology on real machines' files (tests/fixtures/topology, see its README) and on this machine:
// counts, path classes, ring properties, NIC choice, round trips, and damaged input.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "common/fixtures.h"
#include "topology/detect.h"
#include "topology/formats.h"
#include "topology/render.h"
#include "topology/rings.h"

using namespace coral::topology;
namespace fs = std::filesystem;

namespace {

int dev(const Topology& t, const std::string& id) {
  int d = t.find(id);
  INFO("device " << id);
  REQUIRE(d >= 0);
  return d;
}

Path path(const Topology& t, const std::string& a, const std::string& b) { return t.path(dev(t, a), dev(t, b)).type; }

int nvlink_lanes(const Topology& t) {
  int n = 0;
  for (const Link& l : t.links) n += l.type == LinkType::NvLink ? l.lanes : 0;
  return n;
}

// Hops of a ring by path class.
std::map<Path, int> ring_hops(const Topology& t, const std::vector<RankPlace>& places) {
  std::vector<int> ring = ring_order(t, places);
  std::set<int> seen(ring.begin(), ring.end());
  REQUIRE(ring.size() == places.size());
  REQUIRE(seen.size() == places.size());  // a permutation
  std::map<Path, int> hops;
  for (size_t i = 0; i < ring.size(); i++)
    hops[link_class(t, places[ring[i]], places[ring[(i + 1) % ring.size()]]).path]++;
  return hops;
}

}  // namespace

TEST_CASE("OCI H100 (full NCCL dump): NVSwitch box with 8 dual-port RoCE NICs") {
  Topology t = load_file(fixture("oci-hpc_H100-topology.xml"));
  auto gpus = t.of_kind(Kind::Gpu);
  CHECK(gpus.size() == 8);
  CHECK(t.of_kind(Kind::Nic).size() == 8);
  CHECK(t.of_kind(Kind::Port).size() == 16);
  CHECK(t.of_kind(Kind::Cpu).size() == 2);
  CHECK(t.of_kind(Kind::NvSwitch).size() == 4);  // seen only as NVLink targets
  CHECK(nvlink_lanes(t) == 8 * 18);
  for (int a : gpus)
    for (int b : gpus)
      if (a != b) {
        PathInfo p = t.path(a, b);
        CHECK(p.type == Path::NVB);
        CHECK(p.lanes == 18);
        CHECK(p.bw == Approx(18 * 20.6));
      }
  CHECK(path(t, "0000:0f:00.0", "mlx5_0") == Path::PXB);  // GPU0 and its NIC share a switch tree
  CHECK(path(t, "0000:0f:00.0", "mlx5_3") == Path::PHB);
  CHECK(path(t, "0000:0f:00.0", "mlx5_16") == Path::SYS);  // other socket
  CHECK(path(t, "mlx5_0", "mlx5_1") == Path::LOC);         // two ports of one NIC
  CHECK(t.up_bw(dev(t, "mlx5_0")) == Approx(180000 / 8000.0));

  auto places = default_places(t, 8);
  auto hops = ring_hops(t, places);
  CHECK(hops[Path::NVB] == 8);
  // Each GPU gets a NIC behind its own switch, and no port serves two ranks.
  auto nics = assign_nics(t, places);
  std::set<int> used;
  for (size_t r = 0; r < places.size(); r++) {
    REQUIRE(nics[r] >= 0);
    CHECK(t.path(places[r].device, nics[r]).type == Path::PXB);
    used.insert(nics[r]);
  }
  CHECK(used.size() == 8);
}

TEST_CASE("Azure NDv4 (partial PCI-only file): fake bridges pair each GPU with a NIC") {
  Topology t = load_file(fixture("azure-azhpc-images_ndv4-topo.xml"));
  CHECK(t.of_kind(Kind::Gpu).size() == 8);
  CHECK(t.of_kind(Kind::Nic).size() == 8);
  CHECK(t.of_kind(Kind::Cpu).size() == 4);
  CHECK(nvlink_lanes(t) == 0);
  CHECK(t.find("ffff:ff:01.0") >= 0);
  CHECK(path(t, "0003:00:00.0", "0103:00:00.0") == Path::PIX);
  CHECK(path(t, "0003:00:00.0", "0004:00:00.0") == Path::PIX);
  CHECK(path(t, "0003:00:00.0", "0001:00:00.0") == Path::SYS);
  CHECK(t.up_bw(dev(t, "0003:00:00.0")) == Approx(16 * 16 * 128.0 / 130 / 8));  // "16 GT/s" x16
  auto hops = ring_hops(t, default_places(t, 8));
  CHECK(hops[Path::PIX] == 4);  // both GPUs of every bridge are neighbours
  CHECK(hops[Path::SYS] == 4);
  // Two such hosts: the ring crosses the network exactly twice (once each way).
  Topology two = combine({t, t}, {"a", "b"});
  auto hops2 = ring_hops(two, default_places(two, 8));
  CHECK(hops2[Path::NET] == 2);
  CHECK(hops2[Path::PIX] == 8);
  HostTree tree = host_tree(two, default_places(two, 8));
  REQUIRE(tree.leaders.size() == 2);
  CHECK(tree.parent[tree.leaders[1]] == tree.leaders[0]);
  CHECK(tree.parent[tree.leaders[0]] == -1);
}

TEST_CASE("2x A100 PCIe with RoCE, no NVLink: GPUs meet across the host bridges") {
  Topology t = load_file(fixture("nccl-issue2397_2xA100-PCIe_RoCE_nonvlink.xml"));
  CHECK(t.of_kind(Kind::Gpu).size() == 2);
  CHECK(t.of_kind(Kind::Nic).size() == 1);
  CHECK(t.of_kind(Kind::Port).size() == 2);
  CHECK(nvlink_lanes(t) == 0);
  CHECK(path(t, "0000:69:00.0", "0000:b1:00.0") == Path::SYS);
  CHECK(path(t, "0000:69:00.0", "mlx5_0") == Path::PHB);
  CHECK(path(t, "0000:b1:00.0", "mlx5_0") == Path::SYS);
  std::string m = render_matrix(t);
  CHECK(m.find("SYS") != std::string::npos);
  CHECK(m.find("NV") == m.find("NV#"));  // no NVLink cell, only the legend
}

TEST_CASE("AWS p4d (partial): GPUs and EFA NICs behind PCIe switches") {
  Topology t = load_file(fixture("aws-ofi-nccl_p4d-24xl-topo.xml"));
  CHECK(t.of_kind(Kind::Gpu).size() == 8);
  CHECK(t.of_kind(Kind::Nic).size() == 4);
  CHECK(t.of_kind(Kind::PciSwitch).size() == 4);
  CHECK(path(t, "0000:10:1c.0", "0000:10:1b.0") == Path::PIX);
  auto places = default_places(t, 8);
  auto nics = assign_nics(t, places);
  std::map<int, int> load;
  for (size_t r = 0; r < places.size(); r++) {
    CHECK(t.path(places[r].device, nics[r]).type == Path::PIX);
    load[nics[r]]++;
  }
  for (auto& [nic, n] : load) CHECK(n == 2);
}

TEST_CASE("RCCL's version 2 files are refused with a clear message") {
  CHECK_THROWS_WITH(load_file(fixture("rccl_topo_8p_pcie.xml")),
                    Catch::Contains("version=\"2\"") && Catch::Contains("RCCL") && Catch::Contains("line 5"));
}

TEST_CASE("hwloc XML: DGX-2 NVSwitch fabric from NVLink bandwidth distances") {
  if (!have_hwloc()) {
    WARN("built without hwloc: skipped");
    return;
  }
  Topology t = load_file(fixture("hwloc-2.14.0_nvidiaDGX2.xml"));
  auto gpus = t.of_kind(Kind::Gpu);
  CHECK(gpus.size() == 16);
  CHECK(t.of_kind(Kind::NvSwitch).size() == 12);
  CHECK(t.of_kind(Kind::Cpu).size() == 2);
  CHECK(nvlink_lanes(t) == 16 * 6);
  for (int b : gpus)
    if (b != gpus[0]) CHECK(t.path(gpus[0], b).type == Path::NVB);
  CHECK(ring_hops(t, default_places(t, 16))[Path::NVB] == 16);
}

TEST_CASE("hwloc XML: 96-core 4-node server with a PCI tree") {
  if (!have_hwloc()) return;
  Topology t = load_file(fixture("hwloc-2.14.0_96em64t-4n4d3ca2co-pci.xml"));
  int cores = 0;
  for (int c : t.of_kind(Kind::Cpu)) cores += std::stoi(t.devices[c].attr("cores"));
  CHECK(cores == 96);
  CHECK(t.of_kind(Kind::Cpu).size() == 4);
  CHECK(t.of_kind(Kind::Gpu).empty());  // the onboard VGA is not a GPU
  CHECK(t.of_kind(Kind::Port).size() == 8);
}

TEST_CASE("round trips: JSON exactly; NCCL XML export re-imports to the same model") {
  for (const char* f : {"oci-hpc_H100-topology.xml", "azure-azhpc-images_ndv4-topo.xml",
                        "nccl-issue2397_2xA100-PCIe_RoCE_nonvlink.xml", "aws-ofi-nccl_p4d-24xl-topo.xml"}) {
    INFO(f);
    Topology t = load_file(fixture(f));
    CHECK(from_json(to_json(t)) == t);
    Topology x = from_nccl_xml(to_nccl_xml(t));
    CHECK(x == t);
  }
  if (have_hwloc()) {
    Topology t = load_file(fixture("hwloc-2.14.0_nvidiaDGX2.xml"));
    CHECK(from_json(to_json(t)) == t);
  }
  Topology mine = detect();
  CHECK(from_json(to_json(mine)) == mine);
}

TEST_CASE("damaged input gives a located error, never a crash") {
  std::string good = slurp(fixture("nccl-issue2397_2xA100-PCIe_RoCE_nonvlink.xml"));
  CHECK_THROWS_WITH(from_nccl_xml(good.substr(0, good.size() / 2), "cut.xml"),
                    Catch::StartsWith("cut.xml: line") && Catch::Contains("malformed XML"));
  CHECK_THROWS_WITH(
      from_nccl_xml("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci class=\"0x030200\"/>\n</cpu></system>", "x"),
      Catch::Contains("line 3, <pci>: missing busid"));
  CHECK_THROWS_WITH(from_nccl_xml("<system version=\"1\"></system>", "x"), Catch::Contains("no <cpu>"));
  CHECK_THROWS_WITH(from_nccl_xml("<other/>", "x"), Catch::Contains("no <system>"));
  CHECK_THROWS_WITH(from_nccl_xml("<system version=\"1\"><cpu><pci busid=\"0000:01:00.0\" class=\"0x030200\">"
                                  "<gpu sm=\"80\"><nvlink target=\"0000:99:00.0\" count=\"2\" tclass=\"0x030200\"/>"
                                  "</gpu></pci></cpu></system>",
                                  "x"),
                    Catch::Contains("target 0000:99:00.0 is not in the file"));
  CHECK_THROWS_WITH(
      from_nccl_xml("<system version=\"1\"><cpu><pci busid=\"0000:01:00.0\" class=\"0x030200\">"
                    "<gpu sm=\"80\"><nvlink target=\"ffffffff:ff:ff.0\" count=\"lots\" tclass=\"0x068000\"/>"
                    "</gpu></pci></cpu></system>",
                    "x"),
      Catch::Contains("count=\"lots\""));
  CHECK_THROWS_WITH(
      from_nccl_xml(
          "<system version=\"1\"><cpu><pci busid=\"0000:01:00.0\"/><pci busid=\"0000:01:00.0\"/></cpu></system>", "x"),
      Catch::Contains("duplicate busid"));
  CHECK_THROWS_WITH(
      from_json(
          "{\"format\": \"coral-topology\", \"version\": 1, \"devices\": [{\"kind\": \"toaster\", \"id\": \"a\"}]}",
          "j"),
      Catch::Contains("devices[0]") && Catch::Contains("toaster"));
  CHECK_THROWS_WITH(from_json("{\"format\": \"coral-topology\", \"version\": 1, \"devices\": [{\"kind\": \"gpu\", "
                              "\"id\": \"a\", \"parent\": \"b\"}]}",
                              "j"),
                    Catch::Contains("parent 'b'"));
  CHECK_THROWS_WITH(from_json("{\"format\": \"coral-topology\", \"version\": 1, \"devices\": [{\"kind\": \"host\", "
                              "\"id\": \"h\"}], \"links\": [{\"a\": \"x\"}]}",
                              "j"),
                    Catch::Contains("links[0]"));
  CHECK_THROWS_WITH(from_json("{\"format\": \"coral-topology\", \"version\": 1, \"devices\": []}", "j"),
                    Catch::Contains("\"devices\" is empty"));
  CHECK_THROWS_WITH(from_json("{\"format\": \"coral-topology\"", "j"), Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(from_json("[1,2]", "j"), Catch::Contains("not a coral-topology document"));
  CHECK_THROWS_WITH(load_file("/nonexistent.xml"), Catch::Contains("cannot open"));
  // Odd but valid: link_speed strings NCCL has written over the years, and comments.
  Topology odd = from_nccl_xml(
      "<!-- c --><system version=\"1\"><cpu numaid=\"0\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"Unknown\" link_width=\"0\"/>"
      "<pci busid=\"0000:02:00.0\" class=\"0x030200\" link_speed=\"2.5 GT/s PCIe\" link_width=\"16\"/>"
      "</cpu></system>",
      "x");
  CHECK(odd.up_bw(odd.find("0000:02:00.0")) == Approx(2.5 * 0.8 / 8 * 16));
  CHECK(odd.up_bw(odd.find("0000:01:00.0")) > 0);
  CHECK(pcie_lane_gbs("32.0 GT/s PCIe") == Approx(32 * 128.0 / 130 / 8));
  CHECK(pcie_lane_gbs("garbage") == 0);
}

TEST_CASE("this machine: cores, NUMA nodes and network interfaces") {
  Topology t = detect();
  REQUIRE(t.of_kind(Kind::Host).size() == 1);
  CHECK(t.of_kind(Kind::Cpu).size() >= 1);
  if (have_hwloc()) {
    int pus = 0;
    for (int c : t.of_kind(Kind::Cpu)) pus += std::stoi(t.devices[c].attr("pus", "0"));
    CHECK(pus == static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  }
  std::set<std::string> expect, found;
  for (const auto& e : fs::directory_iterator("/sys/class/net"))
    if (e.path().filename() != "lo") expect.insert(e.path().filename());
  for (int p : t.of_kind(Kind::Port))
    if (t.devices[p].attr("link_layer") == "ethernet") found.insert(t.devices[p].id);
  CHECK(found == expect);
  CHECK(t.of_kind(Kind::Gpu).empty() == (access("/dev/nvidia0", F_OK) != 0));
}

TEST_CASE("sysfs NICs: InfiniBand and RoCE ports with rate, GUID and NUMA placement") {
  fs::path root = fs::temp_directory_path() / ("coral-sysfs-" + std::to_string(getpid()));
  fs::remove_all(root);
  auto put = [&](const fs::path& p, const std::string& v) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << v << "\n";
  };
  fs::path pci = root / "devices/pci0000:00/0000:3b:00.0";
  put(pci / "numa_node", "1");
  for (auto [name, layer, rate] : {std::tuple{"mlx5_0", "InfiniBand", "200 Gb/sec (4X HDR)"},
                                   std::tuple{"mlx5_1", "Ethernet", "100 Gb/sec (4X EDR)"}}) {
    fs::path ib = root / "class/infiniband" / name;
    put(ib / "node_guid", "b859:9f03:00d4:1e3a");
    put(ib / "ports/1/link_layer", layer);
    put(ib / "ports/1/rate", rate);
    put(ib / "ports/1/state", "4: ACTIVE");
    fs::create_directory_symlink(pci, ib / "device");
  }
  put(root / "class/net/ib0/speed", "200000");
  fs::create_directory_symlink(pci, root / "class/net/ib0/device");
  put(root / "class/net/veth9/speed", "10000");       // virtual: no device link
  put(root / "class/net/veth8/speed", "4294967295");  // a driver's "unknown", read unsigned

  Topology t;
  int h = t.add(Kind::Host, "h", -1);
  t.add(Kind::Cpu, "cpu0", h, {{"numaid", "0"}});
  int cpu1 = t.add(Kind::Cpu, "cpu1", h, {{"numaid", "1"}});
  detect_net(t, h, root.string());
  int ib = dev(t, "mlx5_0:1"), roce = dev(t, "mlx5_1:1");
  CHECK(t.devices[ib].attr("link_layer") == "infiniband");
  CHECK(t.devices[roce].attr("link_layer") == "roce");
  CHECK(t.devices[ib].attr("speed") == "200000");
  CHECK(t.up_bw(ib) == Approx(25));
  CHECK(t.devices[ib].attr("guid") == "b859:9f03:00d4:1e3a");
  CHECK(t.cpu_of(ib) == cpu1);  // placed by the PCI device's NUMA node
  CHECK(t.devices[t.devices[ib].parent].id == "0000:3b:00.0");
  CHECK(t.devices[dev(t, "ib0")].parent == t.devices[ib].parent);
  CHECK(t.devices[t.devices[dev(t, "veth9")].parent].attr("virtual") == "1");
  CHECK(t.devices[dev(t, "veth9")].attr("speed") == "10000");
  CHECK(t.devices[dev(t, "veth8")].attr("speed").empty());  // not a 4 Pb/s port
  // Ranks prefer the real, active port over the virtual one.
  auto nics = assign_nics(t, {RankPlace{h, cpu1}});
  CHECK(t.devices[nics[0]].kind == Kind::Port);
  CHECK(t.devices[t.devices[nics[0]].parent].attr("virtual").empty());
  fs::remove_all(root);
}
