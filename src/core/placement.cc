#include "core/placement.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "topology/detect.h"
#include "topology/formats.h"
#include "topology/rings.h"

namespace coral {
namespace {

using namespace topology;

// This process's model of its host, loaded or detected once (thread ranks share it).
std::shared_ptr<const Topology> host_model() {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Topology>> cache;  // by CORAL_TOPO_FILE
  const std::string file = config::get_string("CORAL_TOPO_FILE");
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(file); it != cache.end()) return it->second;
  auto t = std::make_shared<Topology>();
  if (!file.empty()) {
    try {
      *t = load_file(file);
    } catch (const topology::Error& e) {
      fail(coralInvalidArgument, std::string("CORAL_TOPO_FILE: ") + e.what());
    }
  } else {
    char name[256] = "localhost";
    gethostname(name, sizeof name - 1);
    DetectOptions o;
    o.host = name;
    try {
      *t = detect(o);
    } catch (const topology::Error& e) {
      // Rank order still works: only the speed of the rings is at stake.
      log::warn(log::Topo, "topology detection failed ({}): rings follow rank order", e.what());
      t->devices.clear();
      t->add(Kind::Cpu, "cpu0", t->add(Kind::Host, name, -1));
    }
  }
  for (const std::string& n : t->notes) log::info(log::Topo, "{}", n);
  if (t->of_kind(Kind::Host).empty()) fail(coralInvalidArgument, "CORAL_TOPO_FILE: " + file + " describes no host");
  return cache[file] = t;
}

// An affinity mask as hwloc and NCCL write it: 32-bit hex words, most significant first.
cpu_set_t parse_affinity(const std::string& s) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<std::string> words = config::split(s, ',');
  for (size_t w = 0; w < words.size(); w++) {
    std::string word = words[words.size() - 1 - w];
    if (word.rfind("0x", 0) == 0) word.erase(0, 2);
    unsigned long bits = std::strtoul(word.c_str(), nullptr, 16);
    for (int b = 0; b < 32; b++)
      if ((bits >> b) & 1 && w * 32 + b < CPU_SETSIZE) CPU_SET(w * 32 + b, &set);
  }
  return set;
}

// The NUMA domain a rank's CPUs fall in most (the first one when the model says no affinity).
int numa_of(const Topology& t, int host, const cpu_set_t& cpus) {
  int best = -1, most = -1;
  for (int c : t.of_kind(Kind::Cpu)) {
    if (t.host_of(c) != host) continue;
    cpu_set_t mine = parse_affinity(t.devices[c].attr("affinity")), both;
    CPU_AND(&both, &mine, &cpus);
    if (CPU_COUNT(&both) > most) most = CPU_COUNT(&both), best = c;
  }
  return best >= 0 ? best : host;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : " ") + (x.empty() ? std::string("-") : x);
  return s;
}

std::vector<std::string> unjoin(const std::string& s) {
  std::vector<std::string> out;
  for (const std::string& x : config::split(s, ' ')) out.push_back(x == "-" ? "" : x);
  return out;
}

// The leader's plan for the ranks of its host (global ranks `mine`, in rank order).
bootstrap::Record plan_record(int rank, const std::vector<int>& mine, const std::vector<PlaceInput>& inputs,
                              bool alone) {
  bootstrap::Record rec("topology plan", rank);
  std::shared_ptr<const Topology> model = host_model();
  const Topology& t = *model;
  const int host = t.of_kind(Kind::Host)[0];
  std::vector<std::string> wanted = config::split(config::get_string("CORAL_TOPO_DEVICES"), ',');
  wanted.erase(std::remove(wanted.begin(), wanted.end(), ""), wanted.end());
  std::vector<RankPlace> places;
  for (size_t i = 0; i < mine.size(); i++) {
    int d = numa_of(t, host, inputs[static_cast<size_t>(mine[i])].cpus);
    if (!wanted.empty()) {
      std::string id = wanted[i % wanted.size()];
      std::transform(id.begin(), id.end(), id.begin(), ::tolower);
      d = t.find(id);
      if (d < 0 || t.host_of(d) != host)
        fail(coralInvalidArgument,
             fmt::format("CORAL_TOPO_DEVICES: '{}' is no device of this host's topology", wanted[i % wanted.size()]));
      // A rank runs on a GPU or a CPU; a NIC, switch or host is no place for one.
      if (t.devices[d].kind != Kind::Gpu && t.devices[d].kind != Kind::Cpu)
        fail(coralInvalidArgument, fmt::format("CORAL_TOPO_DEVICES: '{}' is a {}, not a GPU or a CPU",
                                               wanted[i % wanted.size()], kind_name(t.devices[d].kind)));
    }
    places.push_back({host, d});
  }
  if (!wanted.empty() && wanted.size() < mine.size())
    log::warn(log::Topo, "CORAL_TOPO_DEVICES lists {} devices for this host's {} ranks: ranks {} and up share them",
              wanted.size(), mine.size(), mine[wanted.size()]);
  for (size_t i = 0; i < places.size(); i++)
    for (size_t j = 0; j < i; j++)
      if (places[i].device == places[j].device && t.devices[places[i].device].kind == Kind::Gpu) {
        log::warn(log::Topo, "ranks {} and {} share GPU {}: more ranks than GPUs on this host", mine[j], mine[i],
                  t.devices[places[i].device].id);
        j = i;
      }
  HostPlan plan = plan_host(t, places, alone);
  std::vector<std::string> order, device, nic, rdma, numa, ports;
  double gbs = 0;
  for (int i : plan.order) order.push_back(std::to_string(i));
  for (size_t i = 0; i < places.size(); i++) {
    device.push_back(t.devices[places[i].device].id);
    int cpu = t.cpu_of(places[i].device);
    numa.push_back(cpu >= 0 ? t.devices[cpu].attr("numaid", "-1") : "-1");
    std::string n, r;
    if (int p = plan.nic[i]; p >= 0) {
      const Device& port = t.devices[p];
      const Device& card = port.kind == Kind::Port ? t.devices[port.parent] : port;
      bool physical = port.attr("virtual").empty() && card.attr("virtual").empty();
      r = port.attr("rdma");
      if (r.empty() && port.id.find(':') != std::string::npos) r = port.id;                     // sysfs: mlx5_0:1
      if (r.empty() && !port.attr("guid").empty()) r = port.id + ":" + port.attr("port", "1");  // NCCL XML
      if (port.id != r && physical) n = port.id;
      if (physical && (gbs == 0 || t.up_bw(p) < gbs)) gbs = t.up_bw(p);
    }
    nic.push_back(n);
    rdma.push_back(r);
    ports.push_back(plan.nic[i] >= 0 ? t.devices[plan.nic[i]].id : "");
  }
  rec.add("order", join(order)).add("device", join(device)).add("nic", join(nic)).add("rdma", join(rdma));
  rec.add("numa", join(numa)).add("port", join(ports)).add("gbs", fmt::format("{:g}", gbs));
  if (rank == 0)
    if (std::string dump = config::get_string("CORAL_TOPO_DUMP_FILE"); !dump.empty()) {
      bool xml = dump.size() > 4 && dump.compare(dump.size() - 4, 4, ".xml") == 0;
      std::ofstream out(dump);
      out << (xml ? to_nccl_xml(t) : to_json(t) + "\n");
      if (!out) log::warn(log::Topo, "CORAL_TOPO_DUMP_FILE: cannot write {}", dump);
    }
  return rec;
}

}  // namespace

bool Placement::identity() const {
  for (size_t i = 0; i < ring.size(); i++)
    if (ring[i] != static_cast<int>(i)) return false;
  return true;
}

std::string Placement::describe() const {
  std::string s = "ring";
  for (int r : ring) s += " " + std::to_string(r);
  std::map<int, std::string> numa_groups;
  for (size_t r = 0; r < device.size(); r++) {
    s += fmt::format("; rank {} on {}, NIC {}", r, device[r],
                     nic[r].empty() ? rdma[r].empty() ? "none" : rdma[r] : nic[r]);
    if (!rdma[r].empty() && !nic[r].empty()) s += " (" + rdma[r] + ")";
    numa_groups[numa[r]] += " " + std::to_string(r);
  }
  for (auto& [n, ranks] : numa_groups) s += fmt::format("; NUMA {}:{}", n, ranks);
  return s;
}

Placement place_ranks(bootstrap::Exchange& ex, int rank, const std::vector<int>& host_index,
                      const std::vector<PlaceInput>& inputs) {
  const int nranks = static_cast<int>(host_index.size());
  std::map<int, std::vector<int>> hosts;  // host -> its ranks, in rank order
  for (int r = 0; r < nranks; r++) hosts[host_index[static_cast<size_t>(r)]].push_back(r);
  const std::vector<int>& mine = hosts[host_index[static_cast<size_t>(rank)]];
  if (mine[0] == rank) {
    bootstrap::Record rec;
    try {
      rec = plan_record(rank, mine, inputs, hosts.size() == 1);
    } catch (const std::exception& e) {
      // Published, so that every rank fails with the reason instead of waiting for a plan.
      rec = bootstrap::Record("topology plan", rank);
      rec.add("error", e.what());
      ex.publish("topo", rec);
      throw;
    }
    ex.publish("topo", rec);
  }
  Placement p;
  p.device.resize(nranks), p.nic.resize(nranks), p.rdma.resize(nranks), p.port.resize(nranks);
  p.numa.assign(nranks, -1);
  for (auto& [h, ranks] : hosts) {
    bootstrap::Record rec = ex.read("topo", ranks[0], "topology plan");
    if (rec.has("error"))
      fail(coralInvalidArgument,
           fmt::format("rank {} (which plans host {}'s ranks) failed: {}", ranks[0], h, rec.text("error")));
    std::vector<std::string> order = unjoin(rec.text("order")), device = unjoin(rec.text("device")),
                             nic = unjoin(rec.text("nic")), rdma = unjoin(rec.text("rdma")),
                             numa = unjoin(rec.text("numa")), port = unjoin(rec.text("port"));
    const size_t n = ranks.size();
    if (order.size() != n || device.size() != n || nic.size() != n || rdma.size() != n || numa.size() != n ||
        port.size() != n)
      rec.bad(fmt::format("a plan for {} ranks, expected {}", order.size(), n));
    for (size_t i = 0; i < n; i++) {
      long k = std::strtol(order[i].c_str(), nullptr, 10);
      if (k < 0 || static_cast<size_t>(k) >= n) rec.bad("ring position out of range");
      p.ring.push_back(ranks[static_cast<size_t>(k)]);
      const size_t r = static_cast<size_t>(ranks[i]);
      p.device[r] = device[i], p.nic[r] = nic[i], p.rdma[r] = rdma[i], p.port[r] = port[i];
      p.numa[r] = static_cast<int>(std::strtol(numa[i].c_str(), nullptr, 10));
    }
    double gbs = std::strtod(rec.text("gbs").c_str(), nullptr);
    if (gbs > 0 && (p.nic_gbs == 0 || gbs < p.nic_gbs)) p.nic_gbs = gbs;
  }
  std::vector<int> seen(p.ring);
  std::sort(seen.begin(), seen.end());
  for (int r = 0; r < nranks; r++)
    if (seen[static_cast<size_t>(r)] != r) fail(coralRemoteError, "topology plans do not cover every rank once");
  return p;
}

}  // namespace coral
