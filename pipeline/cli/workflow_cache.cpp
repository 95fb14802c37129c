#include "pipeline/cli/workflow_cache.hpp"

#include <fstream>
#include <sstream>

#include "pipeline/cache.hpp"
#include "pipeline/build_id.hpp"
#include "pipeline/hash.hpp"
#include "pipeline/workflow_codec.hpp"

namespace aispflow::cli {

namespace fs = std::filesystem;

namespace {

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

Workflow load_workflow_cached(const fs::path& file, const Registry& registry, const std::vector<std::string>& overrides,
                              const fs::path& cache_root) {
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  if (!in || fs::is_directory(file, ec)) return load_workflow(file, registry, overrides);  // it explains the error
  std::ostringstream text;
  text << in.rdbuf();

  Hasher h;
  h.add_field("build", build_id());
  // A rebuilt binary whose structs changed must not read an old form.
  h.add_field("layout", std::to_string(sizeof(NodeDecl)) + "/" + std::to_string(sizeof(Workflow)));
  h.add_field("registry", registry_digest(registry));
  h.add_field("path", fs::absolute(file).lexically_normal().string());
  h.add_field("text", text.str());
  for (const auto& o : overrides) h.add_field("set", o);
  const fs::path entry = cache_root / "workflows" / (h.hex() + ".bin");

  std::ifstream cached(entry, std::ios::binary);
  if (cached) {
    try {
      std::ostringstream doc;
      doc << cached.rdbuf();
      return decode_workflow(doc.str());
    } catch (const std::exception&) {
      // Unreadable or from another version: parse the YAML again and overwrite it.
    }
  }
  Workflow w = parse_workflow(text.str(), file, registry, overrides);
  // A workflow with plugins is never stored: loading them is part of the parse (a cached parse would leave them
  // unloaded), and its validity depends on their contents, which the entry's key does not cover.
  if (!w.plugins.empty()) return w;
  try {
    atomic_write_file(entry, encode_workflow(w));
  } catch (const std::exception&) {
    // A read-only cache only costs the parse next time.
  }
  return w;
}

}  // namespace aispflow::cli
