#include "tools/coral-run/flight_table.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace coral::run {

namespace {

std::vector<std::string> dump_files(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {};
  if (!S_ISDIR(st.st_mode)) return {path};
  std::vector<std::string> files;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string n = e->d_name; n.size() > 6 && n.substr(n.size() - 6) == ".jsonl")
        files.push_back(path + "/" + n);
    closedir(d);
  }
  return files;
}

}  // namespace

std::string flight_table(const std::string& path, int first, int nranks) {
  std::map<int, nlohmann::json> last;  // each rank's latest dump header
  for (const std::string& f : dump_files(path)) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || j.value("event", "") != "dump" || !j.contains("rank")) continue;
      if (!j["rank"].is_number_integer()) continue;
      last[j["rank"].get<int>()] = j;
    }
  }
  if (last.empty()) return "";
  std::string t = fmt::format("{:>5}  {:<24}  {:<24}  {:<10}  {:<9}  {}\n", "rank", "last completed", "current op",
                              "step", "waits for", "state");
  for (int r = first; r < first + nranks; ++r) {
    auto it = last.find(r);
    if (it == last.end()) {
      t += fmt::format("{:>5}  (no dump: stopped, exited, or not using Coral)\n", r);
      continue;
    }
    const nlohmann::json& j = it->second;
    const std::string state = j.value("state", "") == "completed" ? "idle" : j.value("state", "");
    const int waits = j.value("waiting_on", -1);
    const std::string cur = j.value("current", "");
    t += fmt::format("{:>5}  {:<24}  {:<24}  {:<10}  {:<9}  {}\n", r, j.value("last_completed", "-"),
                     cur.empty() || state == "idle" ? "-" : cur,
                     state == "running" || state == "failed"
                         ? fmt::format("{} of {}", j.value("step", 0), j.value("nsteps", 0))
                         : "-",
                     waits >= 0 ? fmt::format("rank {}", waits) : "-", state);
  }
  return t;
}

}  // namespace coral::run
