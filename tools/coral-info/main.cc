// coral-info: what this build of Coral has and how it is configured.
//   coral-info                 version, features built in, this machine in one line
//   coral-info --knobs         every CORAL_* knob: type, default, current value, allowed values, doc
//   coral-info --json          all of it as one JSON object
//   coral-info --knobs --markdown   the knob table of docs/configuration.md
//   coral-info --tuner         the tuner's one-host defaults, in the CORAL_ALGO grammar
#include <coral/coral.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "collectives/tuner/select.h"
#include "gpu/runtime.h"
#include "kernels/reduce.h"
#include "topology/detect.h"
#include "transport/shm/cma.h"
#include "transport/transport.h"

namespace {

using nlohmann::json;
namespace config = coral::config;

json features() {
  json f;
  f["cuda"] = coral::gpu::built();
  f["cuda_usable"] = coral::gpu::usable();
  f["hwloc"] = coral::topology::have_hwloc();
  std::vector<std::string> transports;
  for (coral::transport::Transport* t : coral::transport::built_transports()) transports.push_back(t->name());
  if (coral::gpu::built())
    for (coral::transport::Transport* t : coral::transport::device_transports()) transports.push_back(t->name());
  f["transports"] = transports;
  auto has = [&](const char* name) {
    for (const std::string& t : transports)
      if (t == name) return true;
    return false;
  };
  f["ucx"] = has("ucx");
  f["ibverbs"] = has("ibverbs");
  std::vector<std::string> kernels;
  using coral::kernels::Isa;
  for (auto [isa, name] : {std::pair{Isa::Scalar, "scalar"}, {Isa::Avx2, "avx2"}, {Isa::Avx512, "avx512"}})
    if (coral::kernels::table_for(isa)) kernels.push_back(name);
  if (coral::gpu::built()) kernels.push_back("cuda");
  f["kernels"] = kernels;
  return f;
}

// "host: 1 package, 2 cores, 1 NUMA node, 0 GPUs, 1 NIC (eth0)"
json machine() {
  json m;
  coral::topology::Topology t = coral::topology::detect();
  using coral::topology::Kind;
  int cores = 0;
  for (int c : t.of_kind(Kind::Cpu)) cores += std::stoi(t.devices[c].attr("cores", "0"));
  std::vector<std::string> nics;
  for (int n : t.nic_endpoints()) nics.push_back(t.devices[n].id);
  m["numa_nodes"] = t.of_kind(Kind::Cpu).size();
  m["cores"] = cores;
  m["gpus"] = t.of_kind(Kind::Gpu).size();
  m["gpus_usable"] = coral::gpu::usable() ? coral::gpu::device_count() : 0;
  m["nics"] = nics;
  return m;
}

// Cross-memory attach as the shm transport sees it (src/transport/shm/cma.h).
json cma() {
  namespace shm = coral::transport::shm;
  const shm::CmaProbe& p = shm::cma_probe();
  return {{"works", p.works},
          {"read_us", p.cma_us},
          {"copy_us", p.copy_us},
          {"pays", p.pays},
          {"setting", config::get_string("CORAL_CMA")},
          {"used", shm::cma_wanted()}};
}

std::string cma_line(const json& c) {
  const std::string use =
      fmt::format("{} (CORAL_CMA={})", c["used"].get<bool>() ? "used" : "not used", c["setting"].get<std::string>());
  if (!c["works"].get<bool>()) return "process_vm_readv fails here: " + use;
  return fmt::format("reads {} KiB in {:.1f} us, a copy takes {:.1f} us: {}",
                     coral::transport::shm::kCmaProbeBytes >> 10, c["read_us"].get<double>(),
                     c["copy_us"].get<double>(), use);
}

std::string machine_line(const json& m) {
  std::string nics;
  for (const auto& n : m["nics"]) nics += (nics.empty() ? "" : ", ") + n.get<std::string>();
  return fmt::format("{} NUMA node(s), {} core(s), {} GPU(s) ({} usable), {} network port(s){}",
                     m["numa_nodes"].get<size_t>(), m["cores"].get<int>(), m["gpus"].get<size_t>(),
                     m["gpus_usable"].get<int>(), m["nics"].size(), nics.empty() ? "" : " (" + nics + ")");
}

json knobs() {
  json out = json::array();
  for (const config::Knob& k : config::knobs()) {
    const std::string value = config::current(k);
    out.push_back({{"name", k.name},
                   {"type", config::type_name(k.type)},
                   {"default", k.default_value},
                   {"value", value},
                   {"set", config::is_set(k.name)},
                   {"allowed", config::allowed(k)},
                   {"error", config::check(k, value)},
                   {"doc", k.doc}});
  }
  return out;
}

void print_knobs(const json& ks, bool markdown) {
  if (markdown) {
    std::printf("| variable | type | default | meaning |\n|---|---|---|---|\n");
    for (const auto& k : ks) {
      std::string allowed = k["allowed"].get<std::string>();
      std::printf("| `%s` | %s | %s | %s%s |\n", k["name"].get<std::string>().c_str(),
                  k["type"].get<std::string>().c_str(), k["default"].get<std::string>().c_str(),
                  k["doc"].get<std::string>().c_str(), allowed.empty() ? "" : (" Allowed: " + allowed + ".").c_str());
    }
    return;
  }
  for (const auto& k : ks) {
    std::printf("%s (%s, default '%s'%s%s)\n", k["name"].get<std::string>().c_str(),
                k["type"].get<std::string>().c_str(), k["default"].get<std::string>().c_str(),
                k["allowed"].get<std::string>().empty() ? "" : (", " + k["allowed"].get<std::string>()).c_str(),
                k["set"].get<bool>() ? (", set to '" + k["value"].get<std::string>() + "'").c_str() : "");
    if (!k["error"].get<std::string>().empty()) std::printf("    INVALID: %s\n", k["error"].get<std::string>().c_str());
    std::printf("    %s\n", k["doc"].get<std::string>().c_str());
  }
}

// CORAL_* variables in the environment that no knob declares: most often a typo.
std::vector<std::string> unknown_variables() {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("CORAL_", 0) != 0) continue;
    std::string name = kv.substr(0, kv.find('='));
    bool known = false;
    for (const config::Knob& k : config::knobs()) known |= name == k.name;
    if (!known) out.push_back(name);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coral-info: version, features, machine and configuration knobs of Coral"};
  bool show_knobs = false, as_json = false, markdown = false, show_tuner = false;
  app.add_flag("--knobs", show_knobs, "List every CORAL_* knob: type, default, current value, allowed values, doc");
  app.add_flag("--json", as_json, "Print everything as one JSON object");
  app.add_flag("--markdown", markdown, "With --knobs: the table of docs/configuration.md");
  app.add_flag("--tuner", show_tuner,
               "The tuner's one-host all-reduce defaults by rank count, as CORAL_ALGO values (past the latency "
               "path of CORAL_SMALL_BYTES and one-shot)");
  CLI11_PARSE(app, argc, argv);

  int version = 0;
  coralGetVersion(&version);
  const std::string ver = fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
  const json ks = knobs();
  const auto unknown = unknown_variables();
  int invalid = 0;
  for (const auto& k : ks) invalid += !k["error"].get<std::string>().empty();
  const config::Knob& cma_knob = config::knob("CORAL_CMA");
  const bool cma_valid = config::check(cma_knob, config::current(cma_knob)).empty();

  if (as_json) {
    json all{{"version", ver}, {"features", features()}, {"knobs", ks}, {"unknown_variables", unknown}};
    if (!show_knobs) {
      all["machine"] = machine();
      if (cma_valid) all["cma"] = cma();
    }
    json rows = json::array();
    for (const auto& row : coral::collectives::default_rows())
      rows.push_back({{"min_ranks", row.lo},
                      {"max_ranks", row.hi == coral::collectives::kAnyRanks ? -1 : row.hi},
                      {"coral_algo", row.text}});
    all["tuner_defaults"] = rows;
    std::printf("%s\n", all.dump(2).c_str());
  } else if (show_tuner) {
    std::printf(
        "# One host, no CORAL_ALGO: the all-reduce's algorithm by rank count past the latency path\n"
        "# (CORAL_SMALL_BYTES, and one-shot while its peers read at most 64 KiB). Each line's value\n"
        "# works as CORAL_ALGO too.\n%s",
        coral::collectives::default_rules_text().c_str());
  } else if (show_knobs) {
    print_knobs(ks, markdown);
  } else {
    const json f = features();
    std::string kernels, transports;
    for (const auto& k : f["kernels"]) kernels += (kernels.empty() ? "" : " ") + k.get<std::string>();
    for (const auto& t : f["transports"]) transports += (transports.empty() ? "" : " ") + t.get<std::string>();
    std::printf("Coral %s\n", ver.c_str());
    std::printf("features: cuda %s, hwloc %s, ucx %s, ibverbs %s\n", f["cuda"].get<bool>() ? "yes" : "no",
                f["hwloc"].get<bool>() ? "yes" : "no", f["ucx"].get<bool>() ? "yes" : "no",
                f["ibverbs"].get<bool>() ? "yes" : "no");
    std::printf("transports: %s\nkernels: %s\n", transports.c_str(), kernels.c_str());
    std::printf("machine: %s\n", machine_line(machine()).c_str());
    if (cma_valid) std::printf("cross-memory attach: %s\n", cma_line(cma()).c_str());
    std::printf("knobs: %zu (coral-info --knobs lists them)\n", ks.size());
  }
  for (const std::string& n : unknown)
    std::fprintf(stderr, "coral-info: warning: %s is set but is no Coral knob\n", n.c_str());
  // A bad value fails every communicator's creation: say so with the exit status too.
  return invalid ? 2 : 0;
}
