#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "topology/formats.h"

namespace coral::topology {

using nlohmann::json;

std::string to_json(const Topology& t) {
  json devs = json::array(), links = json::array();
  for (const Device& d : t.devices) {
    json j{{"kind", kind_name(d.kind)}, {"id", d.id}, {"attrs", d.attrs}};
    j["parent"] = d.parent >= 0 ? json(t.devices[d.parent].id) : json(nullptr);
    devs.push_back(std::move(j));
  }
  for (const Link& l : t.links)
    links.push_back({{"a", t.devices[l.a].id},
                     {"b", t.devices[l.b].id},
                     {"type", link_name(l.type)},
                     {"bw", l.bw},
                     {"lanes", l.lanes}});
  return json{{"format", "coral-topology"}, {"version", 1}, {"devices", devs}, {"links", links}}.dump(1);
}

namespace {

const json& field(const json& j, const char* key, json::value_t type, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(fmt::format("{}: missing \"{}\"", where, key));
  bool ok = it->type() == type || (type == json::value_t::number_float && it->is_number()) ||
            (type == json::value_t::number_integer && it->is_number_integer());
  if (!ok) throw Error(fmt::format("{}: \"{}\" has the wrong type ({})", where, key, it->type_name()));
  return *it;
}

// Runs f; an Error that does not already say where it happened gets `where` in front.
template <class F>
auto located(const std::string& where, F f) {
  try {
    return f();
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(where, 0) == 0) throw;
    throw Error(where + ": " + e.what());
  }
}

// The tree's shape: hosts are roots, CPUs sit on hosts, ports on NICs, and nothing hangs off a
// port. A PCI device's id ends in its bus id (after a host prefix: "host1/0000:07:00.0").
void check_place(const Topology& t, Kind k, const std::string& id, int parent, const std::string& where) {
  Kind pk = parent >= 0 ? t.devices[static_cast<size_t>(parent)].kind : Kind::Host;
  std::string why;
  if (k == Kind::Host && parent >= 0)
    why = "a host cannot have a parent";
  else if (k != Kind::Host && parent < 0)
    why = fmt::format("a {} needs a parent", kind_name(k));
  else if (k == Kind::Cpu && pk != Kind::Host)
    why = fmt::format("a cpu belongs to a host, not a {}", kind_name(pk));
  else if (k == Kind::Port && pk != Kind::Nic)
    why = fmt::format("a port belongs to a nic, not a {}", kind_name(pk));
  else if (pk == Kind::Port)
    why = "nothing can hang off a port";
  if (!why.empty()) throw Error(fmt::format("{}: '{}': {}", where, id, why));
  bool pci = k == Kind::Pci || k == Kind::PciSwitch || k == Kind::Gpu;
  std::string bus = id.substr(id.rfind('/') == id.npos ? 0 : id.rfind('/') + 1);
  if (pci && !is_bus_id(bus))
    throw Error(fmt::format("{}: id '{}' is not a PCI bus id (domain:bus:device.function in hexadecimal)", where, id));
}

}  // namespace

Topology from_json(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("{}: not valid JSON (byte {}): {}", origin, e.byte, e.what()));
  } catch (const json::exception& e) {  // e.g. a number out of range
    throw Error(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!j.is_object() || j.value("format", "") != "coral-topology")
    throw Error(fmt::format("{}: not a coral-topology document", origin));
  if (!j.contains("version") || j["version"] != 1)
    throw Error(fmt::format("{}: unsupported coral-topology version", origin));
  Topology t;
  std::vector<int> depth;  // per device
  const json& devs = field(j, "devices", json::value_t::array, origin);
  if (devs.empty()) throw Error(fmt::format("{}: \"devices\" is empty: a model holds at least a host", origin));
  for (size_t i = 0; i < devs.size(); i++) {
    std::string where = fmt::format("{}: devices[{}]", origin, i);
    const json& d = devs[i];
    if (!d.is_object()) throw Error(where + ": not an object");
    Kind k =
        located(where, [&] { return kind_from(field(d, "kind", json::value_t::string, where).get<std::string>()); });
    std::string id = field(d, "id", json::value_t::string, where).get<std::string>();
    if (t.find(id) >= 0) throw Error(fmt::format("{}: duplicate id '{}'", where, id));
    int parent = -1;
    if (auto p = d.find("parent"); p != d.end() && !p->is_null()) {
      if (!p->is_string()) throw Error(where + ": \"parent\" must be a string or null");
      parent = t.find(p->get<std::string>());
      if (parent < 0) throw Error(fmt::format("{}: parent '{}' is not listed before it", where, p->get<std::string>()));
    }
    check_place(t, k, id, parent, where);
    if (parent >= 0)
      depth.push_back(depth[static_cast<size_t>(parent)] + 1);
    else
      depth.push_back(0);
    if (depth.back() > kMaxDepth)
      throw Error(fmt::format("{}: devices nested more than {} levels deep: no machine is", where, kMaxDepth));
    std::map<std::string, std::string> attrs;
    if (auto a = d.find("attrs"); a != d.end()) {
      if (!a->is_object()) throw Error(where + ": \"attrs\" must be an object");
      for (auto& [key, v] : a->items()) {
        if (!v.is_string()) throw Error(fmt::format("{}: attrs.{} must be a string", where, key));
        if (std::string why = check_attr(k, key, v.get<std::string>()); !why.empty())
          throw Error(fmt::format("{}: attrs.{}", where, why));
        attrs[key] = v.get<std::string>();
      }
    }
    t.add(k, id, parent, std::move(attrs));
  }
  if (j.contains("links")) {
    const json& links = field(j, "links", json::value_t::array, origin);
    for (size_t i = 0; i < links.size(); i++) {
      std::string where = fmt::format("{}: links[{}]", origin, i);
      const json& l = links[i];
      if (!l.is_object()) throw Error(where + ": not an object");
      int a = t.find(field(l, "a", json::value_t::string, where).get<std::string>());
      int b = t.find(field(l, "b", json::value_t::string, where).get<std::string>());
      if (a < 0 || b < 0) throw Error(where + ": an end names no device");
      LinkType type =
          located(where, [&] { return link_from(field(l, "type", json::value_t::string, where).get<std::string>()); });
      double bw = field(l, "bw", json::value_t::number_float, where).get<double>();
      int64_t lanes = l.contains("lanes") ? field(l, "lanes", json::value_t::number_integer, where).get<int64_t>() : 0;
      if (!(bw >= 0) || !(bw < 1e12) || lanes < 0 || lanes > 128)
        throw Error(where + ": bandwidth or lanes out of range (bw 0 to 1e12 GB/s, lanes 0 to 128)");
      if (a == b) {
        t.notes.push_back(
            fmt::format("{}: dropped a {} link from {} to itself", where, link_name(type), t.devices[a].id));
        continue;
      }
      t.links.push_back({a, b, type, bw, static_cast<int>(lanes)});
    }
  }
  return t;
}

}  // namespace coral::topology
