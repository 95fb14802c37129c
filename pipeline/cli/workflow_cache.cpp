#include "pipeline/cli/workflow_cache.hpp"

#include <fstream>
#include <sstream>

#include "pipeline/cache.hpp"
#include "pipeline/hash.hpp"

namespace aispflow::cli {

namespace fs = std::filesystem;

namespace {

// Bump when the JSON form below changes.
constexpr int kFormat = 4;

// Locations are [line, column] when in the workflow file itself (nearly always), else [file, line, column].
json loc_json(const SourceLoc& l, const std::string& workflow_file) {
  if (l.file == workflow_file) return json::array({l.line, l.column});
  return json::array({l.file, l.line, l.column});
}
SourceLoc loc_from(const json& j, const std::string& workflow_file) {
  if (j.size() == 2) return SourceLoc{workflow_file, j.at(0).get<int>(), j.at(1).get<int>()};
  return SourceLoc{j.at(0).get<std::string>(), j.at(1).get<int>(), j.at(2).get<int>()};
}

// What the parse depends on besides the file: every node type's name, version and params.
const std::string& registry_digest(const Registry& registry) {
  static const std::string digest = [&] {
    json schema = json::array();
    for (const auto* t : registry.all()) {
      json params = json::array();
      for (const auto& p : t->params())
        params.push_back({p.name, to_string(p.kind), p.default_value, p.required});
      const NodeTraits traits = t->traits();
      schema.push_back({t->name(), traits.version, traits.exclusive, traits.hardware_bound, params});
    }
    return digest_json(schema);
  }();
  return digest;
}

}  // namespace

json workflow_to_json(const Workflow& w) {
  // The file name that locations carry (as the workflow was named on the command line).
  const std::string f = w.nodes.empty() ? w.file.string() : w.nodes.front().loc.file;
  auto loc_json = [&](const SourceLoc& l) { return cli::loc_json(l, f); };
  json nodes = json::array();
  for (const auto& n : w.nodes) {
    json param_locs = json::object();
    for (const auto& [k, l] : n.param_locs) param_locs[k] = loc_json(l);
    json inputs = json::array(), refs = json::array();
    for (const auto& i : n.inputs) inputs.push_back({i.alias, i.node, loc_json(i.loc)});
    for (const auto& r : n.refs) refs.push_back({r.node, r.field_path, loc_json(r.loc)});
    // Positional (a list, not an object): this file is read on every cached run, and keys cost time.
    nodes.push_back(json::array({n.name, n.declared_name == n.name ? json() : json(n.declared_name), n.type,
                                 n.params, param_locs, loc_json(n.loc), inputs, refs,
                                 n.resources.empty() ? json() : json(n.resources), n.exclusive,
                                 n.matrix.empty() ? json() : n.matrix}));
  }
  return {{"format", kFormat}, {"name", w.name}, {"file", w.file.string()}, {"loc_file", f}, {"nodes", nodes}};
}

Workflow workflow_from_json(const json& j) {
  if (j.at("format").get<int>() != kFormat) throw std::runtime_error("unknown parsed-workflow format");
  Workflow w;
  w.name = j.at("name").get<std::string>();
  w.file = j.at("file").get<std::string>();
  const std::string f = j.at("loc_file").get<std::string>();
  auto loc_from = [&](const json& l) { return cli::loc_from(l, f); };
  for (const auto& jn : j.at("nodes")) {
    NodeDecl n;
    n.name = jn.at(0).get<std::string>();
    n.declared_name = jn.at(1).is_null() ? n.name : jn.at(1).get<std::string>();
    n.type = jn.at(2).get<std::string>();
    n.params = jn.at(3);
    for (const auto& [k, l] : jn.at(4).items()) n.param_locs[k] = loc_from(l);
    n.loc = loc_from(jn.at(5));
    for (const auto& i : jn.at(6))
      n.inputs.push_back(InputDecl{i.at(0).get<std::string>(), i.at(1).get<std::string>(), loc_from(i.at(2))});
    for (const auto& r : jn.at(7))
      n.refs.push_back(RefDecl{r.at(0).get<std::string>(), r.at(1).get<std::string>(), loc_from(r.at(2))});
    if (!jn.at(8).is_null()) n.resources = jn.at(8).get<std::map<std::string, int>>();
    n.exclusive = jn.at(9).get<bool>();
    n.matrix = jn.at(10).is_null() ? json::object() : jn.at(10);
    w.nodes.push_back(std::move(n));
  }
  return w;
}

Workflow load_workflow_cached(const fs::path& file, const Registry& registry, const std::vector<std::string>& overrides,
                              const fs::path& cache_root) {
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  if (!in || fs::is_directory(file, ec)) return load_workflow(file, registry, overrides);  // it explains the error
  std::ostringstream text;
  text << in.rdbuf();

  Hasher h;
  h.add_field("format", std::to_string(kFormat));
  h.add_field("build", AISPFLOW_GIT_COMMIT);
  // A rebuilt binary whose structs changed must not read an old form.
  h.add_field("layout", std::to_string(sizeof(NodeDecl)) + "/" + std::to_string(sizeof(Workflow)));
  h.add_field("registry", registry_digest(registry));
  h.add_field("path", fs::absolute(file).lexically_normal().string());
  h.add_field("text", text.str());
  for (const auto& o : overrides) h.add_field("set", o);
  const fs::path entry = cache_root / "workflows" / (h.hex() + ".json");

  std::ifstream cached(entry, std::ios::binary);
  if (cached) {
    try {
      std::ostringstream doc;
      doc << cached.rdbuf();
      return workflow_from_json(json::parse(doc.str()));
    } catch (const std::exception&) {
      // Unreadable or from another version: parse the YAML again and overwrite it.
    }
  }
  Workflow w = parse_workflow(text.str(), file, registry, overrides);
  try {
    atomic_write_file(entry, workflow_to_json(w).dump());
  } catch (const std::exception&) {
    // A read-only cache only costs the parse next time.
  }
  return w;
}

}  // namespace aispflow::cli
