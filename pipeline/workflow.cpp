// Workflow loading: YAML text -> expanded, validated Workflow. The syntax is documented in docs/workflow.md.
//
// The loader works in three passes so that every error can name the place it comes from:
//   1. read each declared node from YAML into a DeclaredNode (values converted to JSON, and the file
//      location of every value remembered under its JSON pointer);
//   2. expand each declared node's matrix into instances, apply --set overrides, substitute ${matrix.x},
//      and find ${node.field} references;
//   3. check what needs the whole picture: input and reference targets, self-dependencies, params
//      against the node type's schema. Cycles are left to the Dag.
#include "pipeline/workflow.hpp"

#include "pipeline/shell_quote.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

namespace aispflow {
namespace {

const SourceLoc kCommandLine{"<command line>", 0, 0};

// ---------------------------------------------------------------------------------------------------
// Small text helpers

std::string join(const std::vector<std::string>& items, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best = closest_match(word, candidates);
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

// Declared node names, matrix keys and aliases: they end up in directory and variable names, and the
// characters '.', '[', ']', '=' and ',' have meaning in references and instance names.
bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// A short description of a JSON value for "expected X, got Y" messages.
std::string describe(const json& v) {
  auto clip = [](std::string s) { return s.size() > 40 ? s.substr(0, 37) + "..." : s; };
  switch (v.type()) {
    case json::value_t::null: return "nothing (null)";
    case json::value_t::boolean: return std::string("bool ") + (v.get<bool>() ? "true" : "false");
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "int " + v.dump();
    case json::value_t::number_float: return "number " + v.dump();
    case json::value_t::string: return "string " + clip(json(v.get<std::string>()).dump());
    case json::value_t::array: return "list " + clip(v.dump());
    case json::value_t::object: return "map " + clip(v.dump());
    default: return clip(v.dump());
  }
}

// ---------------------------------------------------------------------------------------------------
// ${...} references inside strings.
//
// A reference is `${name.path}`: an identifier, then one or more dot-separated segments. Anything else
// inside ${...} (for example a shell variable such as ${HOME}) is left alone, so `command` strings keep
// working. `${matrix.key}` is a matrix value, never a node reference.

struct RefMatch {
  std::size_t pos = 0;       // offset of '$' in the string
  std::size_t length = 0;    // length of the whole ${...}
  std::string node;          // "matrix" for matrix values
  std::string field_path;    // "a.b"
  bool raw = false;          // ${raw:node.field}: inserted unquoted even into a shell command
};

// Hand-written rather than std::regex: libstdc++'s regex recurses per character and can exhaust the
// stack on long strings, and no input may crash the loader.
std::vector<RefMatch> find_refs(const std::string& s) {
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; };
  std::vector<RefMatch> out;
  std::size_t from = 0;
  while ((from = s.find("${", from)) != std::string::npos) {
    std::size_t i = from + 2;
    const bool raw = s.compare(i, 4, "raw:") == 0;
    if (raw) i += 4;
    const std::size_t name_start = i;
    if (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_'))
      while (i < s.size() && word_char(s[i])) ++i;
    const std::size_t name_end = i;
    std::size_t segments = 0;
    while (name_end > name_start && i + 1 < s.size() && s[i] == '.' && word_char(s[i + 1])) {
      ++i;
      while (i < s.size() && word_char(s[i])) ++i;
      ++segments;
    }
    if (segments > 0 && i < s.size() && s[i] == '}') {
      out.push_back({from, i + 1 - from, s.substr(name_start, name_end - name_start),
                     s.substr(name_end + 1, i - name_end - 1), raw});
      from = i + 1;
    } else {
      from += 2;
    }
  }
  return out;
}

bool has_node_ref(const json& v) {
  if (v.is_string()) {
    for (const auto& r : find_refs(v.get_ref<const std::string&>()))
      if (r.node != "matrix") return true;
    return false;
  }
  if (v.is_structured())
    for (const auto& item : v) if (has_node_ref(item)) return true;
  return false;
}

std::string as_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Where a reference was written (the string holding it), for messages.
SourceLoc ref_loc(const NodeDecl& node, const RefMatch& r, const std::string& field) {
  for (const auto& decl : node.refs)
    if (decl.node == r.node && decl.field_path == r.field_path) return decl.loc;
  auto it = node.param_locs.find(field);
  return it != node.param_locs.end() ? it->second : node.loc;
}

// Why a reference cannot go where it stands in a shell command, and what to write instead.
std::string shell_refusal(const RefMatch& r, int line, const std::string& why) {
  return "${" + std::string(r.raw ? "raw:" : "") + r.node + "." + r.field_path + "} (line " + std::to_string(line) +
         " of the command) " + why + "; write it outside quotes, inside '...' or inside \"...\", or read \"$" +
         ref_env_var(r.node, r.field_path) + "\" instead (docs/workflow.md)";
}

// Load time: every ${node.field} in a shell command (ParamSpec::shell) must stand where its value can be
// quoted, and a ParamSpec::references list must hold only references. Nothing runs before this passed.
void check_reference_places(const NodeDecl& n, const NodeType& type) {
  for (const auto& spec : type.param_specs()) {
    if (!n.params.contains(spec.name)) continue;
    const json& v = n.params[spec.name];
    auto loc = [&] {
      auto it = n.param_locs.find(spec.name);
      return it != n.param_locs.end() ? it->second : n.loc;
    };
    if (spec.shell && v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      std::vector<RefMatch> refs;
      std::vector<shell::Span> spans;
      for (auto& r : find_refs(s))
        if (r.node != "matrix") {
          spans.push_back({r.pos, r.length});
          refs.push_back(std::move(r));
        }
      if (spans.empty()) continue;  // most commands: nothing to place, no lexing
      const std::vector<shell::Place> where = shell::places(s, spans);
      for (std::size_t k = 0; k < refs.size(); ++k)
        if (!refs[k].raw && where[k].context == shell::Context::refused)
          throw InputError(loc(), n.name, spec.name, shell_refusal(refs[k], where[k].line, where[k].why));
    }
    if (spec.references && v.is_array())
      for (std::size_t i = 0; i < v.size(); ++i) {
        const json& item = v[i];
        std::vector<RefMatch> refs = item.is_string() ? find_refs(item.get<std::string>()) : std::vector<RefMatch>{};
        const bool one_ref = refs.size() == 1 && refs[0].pos == 0 && refs[0].length == item.get<std::string>().size() &&
                             !refs[0].raw && refs[0].node != "matrix";
        if (!one_ref)
          throw InputError(loc(), n.name, spec.name,
                           "item " + std::to_string(i) + ": expected one reference such as \"${node.field}\", got " +
                               describe(item));
      }
  }
}

// ---------------------------------------------------------------------------------------------------
// Locations of values, keyed by JSON pointer ("/params/run" style, relative to a node's params).

std::string pointer_escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// The pointer of `key` inside the value at `parent`. (Built with append: GCC 12 warns falsely on
// `"/" + string` here.)
std::string child_pointer(const std::string& parent, const std::string& key) {
  std::string out;
  out.reserve(parent.size() + key.size() + 1);
  return out.append(parent).append("/").append(pointer_escape(key));
}

class LocMap {
 public:
  void set(const std::string& pointer, const SourceLoc& loc) { locs_[pointer] = loc; }
  // Replaces everything under `pointer` (a --set override replaces a whole value).
  void replace_subtree(const std::string& pointer, const SourceLoc& loc) {
    auto it = locs_.lower_bound(pointer + "/");
    while (it != locs_.end() && it->first.rfind(pointer + "/", 0) == 0) it = locs_.erase(it);
    locs_[pointer] = loc;
  }
  // The location of the value at `pointer`, or of its nearest recorded ancestor.
  SourceLoc find(std::string pointer, const SourceLoc& fallback) const {
    while (true) {
      auto it = locs_.find(pointer);
      if (it != locs_.end()) return it->second;
      auto slash = pointer.rfind('/');
      if (slash == std::string::npos || pointer.empty()) return fallback;
      pointer.resize(slash);
    }
  }

 private:
  std::map<std::string, SourceLoc> locs_;
};

// ---------------------------------------------------------------------------------------------------
// YAML -> JSON, following the YAML 1.2 core schema for untagged scalars (so `no` stays a string and
// `010` is the integer 10), with quoted scalars always strings.

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  SourceLoc loc(const YAML::Node& n) const {
    YAML::Mark m = n.Mark();
    return {file_, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0};
  }
  // yaml-cpp places an empty value (`key:` followed by a newline) on the next line; the key is the
  // useful place to point at.
  SourceLoc value_loc(const YAML::Node& key, const YAML::Node& value) const {
    return value.IsNull() ? loc(key) : loc(value);
  }

  // Converts `n` and records the location of every value under `pointer` in `locs`.
  json to_json(const YAML::Node& n, const std::string& pointer, LocMap& locs,
               const SourceLoc& null_loc) const {
    // Aliases share nodes, so a small file can describe an exponentially large value ("billion
    // laughs"); refuse it instead of running out of memory.
    if (++values_read_ > kMaxValues)
      throw InputError(loc(n), "", "", "the document is too large (more than " + std::to_string(kMaxValues) +
                                           " values once YAML aliases are expanded)");
    SourceLoc here = n.IsNull() ? null_loc : loc(n);
    locs.set(pointer, here);
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null: return nullptr;
      case YAML::NodeType::Scalar: return scalar(n);
      case YAML::NodeType::Sequence: {
        json out = json::array();
        std::size_t i = 0;
        for (const auto& item : n) {
          out.push_back(to_json(item, child_pointer(pointer, std::to_string(i)), locs, loc(item)));
          ++i;
        }
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        for (const auto& [k, v] : unique_pairs(n, "")) {
          std::string key = k.Scalar();
          out[key] = to_json(v, child_pointer(pointer, key), locs, loc(k));
        }
        return out;
      }
    }
    return nullptr;
  }

  // The key/value pairs of a map, refusing non-scalar and duplicate keys (yaml-cpp keeps duplicates
  // silently, and the second one would win or lose depending on how it is read).
  std::vector<std::pair<YAML::Node, YAML::Node>> unique_pairs(const YAML::Node& map,
                                                              const std::string& node_name) const {
    std::vector<std::pair<YAML::Node, YAML::Node>> out;
    std::map<std::string, SourceLoc> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;  // a copy: yaml-cpp iterators hand out temporaries
      if (!key.IsScalar())
        throw InputError(loc(key), node_name, "", "expected a plain name as a map key");
      auto [prev, inserted] = seen.emplace(key.Scalar(), loc(key));
      if (!inserted)
        throw InputError(loc(key), node_name, key.Scalar(),
                         "duplicate key '" + key.Scalar() + "' (first defined at " + prev->second.str() +
                             ")");
      out.emplace_back(key, it->second);
    }
    return out;
  }

  json scalar(const YAML::Node& n) const {
    const std::string& s = n.Scalar();
    const std::string& tag = n.Tag();
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return s;  // quoted or explicitly a string
    if (tag == "?" || tag.empty()) return infer(s);
    const std::string core = "tag:yaml.org,2002:";
    if (tag.rfind(core, 0) == 0) {
      std::string kind = tag.substr(core.size());
      json v = infer(s);
      if ((kind == "int" && v.is_number_integer()) || (kind == "float" && v.is_number()) ||
          (kind == "bool" && v.is_boolean()) || (kind == "null" && v.is_null()))
        return kind == "float" ? json(v.get<double>()) : v;
      throw InputError(loc(n), "", "", "'" + s + "' is not a valid !!" + kind);
    }
    throw InputError(loc(n), "", "", "unsupported YAML tag '" + tag + "' (aispflow reads plain YAML values)");
  }

  static json infer(const std::string& s) {
    if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    if (auto i = parse_int(s)) return *i;
    if (looks_like_float(s)) {
      try {
        return std::stod(s);
      } catch (const std::exception&) {  // out of range: keep the text rather than invent a value
        return s;
      }
    }
    return s;
  }

  // The YAML 1.2 core float syntax: [-+]? ( . digits | digits [ . digits? ] ) ( [eE] [-+]? digits )?
  static bool looks_like_float(const std::string& s) {
    auto digits = [&](std::size_t& i) {
      std::size_t start = i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      return i - start;
    };
    std::size_t i = 0;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    std::size_t mantissa = digits(i);
    if (i < s.size() && s[i] == '.') {
      ++i;
      mantissa += digits(i);
    }
    if (mantissa == 0) return false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
      if (digits(i) == 0) return false;
    }
    return i == s.size();
  }

  static std::optional<std::int64_t> parse_int(const std::string& s) {
    std::string_view v = s;
    bool negative = false;
    if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
      negative = v[0] == '-';
      v.remove_prefix(1);
    }
    int base = 10;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o')) {
      if (negative || s[0] == '+') return std::nullopt;  // the core schema has no signed hex/octal
      base = v[1] == 'x' ? 16 : 8;
      v.remove_prefix(2);
    }
    if (v.empty()) return std::nullopt;
    std::uint64_t magnitude = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), magnitude, base);
    if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    const auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (magnitude > limit + (negative ? 1 : 0)) return std::nullopt;
    if (negative) return magnitude == limit + 1 ? std::numeric_limits<std::int64_t>::min()
                                                : -static_cast<std::int64_t>(magnitude);
    return static_cast<std::int64_t>(magnitude);
  }

 private:
  static constexpr std::size_t kMaxValues = 250'000;
  std::string file_;
  mutable std::size_t values_read_ = 0;
};

// ---------------------------------------------------------------------------------------------------
// Pass 1: declared nodes as written in the file.

struct MatrixAxis {
  std::string key;
  SourceLoc loc;
  std::vector<json> values;
  std::vector<std::string> labels;   // the value as written, for instance names and ${matrix.key} in text
};

struct DeclaredNode {
  std::string name;
  SourceLoc loc;
  std::string type_name;
  const NodeType* type = nullptr;
  json params = json::object();
  LocMap locs;                        // pointers relative to params ("/run", "/files/0")
  SourceLoc params_loc;
  std::vector<InputDecl> inputs;      // node names may still hold ${matrix.x}
  std::vector<MatrixAxis> matrix;
  std::map<std::string, int> resources;
  bool exclusive = false;
};

// `executor:` configures where nodes run (docs/slurm.md); pipeline/slurm/profile.cpp reads it, and only
// when a run asks for that executor, so a local run never depends on it.
const std::vector<std::string> kTopLevelKeys = {"name", "nodes", "plugins", "doc", "description", "executor"};
const std::vector<std::string> kNodeKeys = {"type",      "params",    "inputs", "matrix",
                                            "resources", "exclusive", "doc",    "description"};

std::string matrix_label(const YAML::Node& n, const json& value) {
  if (n.IsScalar()) return n.Scalar();
  return value.dump();
}

DeclaredNode read_node(const YamlReader& yaml, const Registry& registry, const YAML::Node& key,
                       const YAML::Node& body) {
  DeclaredNode node;
  node.name = key.Scalar();
  node.loc = yaml.loc(key);
  const std::string& name = node.name;

  if (!is_identifier(name))
    throw InputError(node.loc, name, "",
                     "invalid node name: use letters, digits, '_' and '-', starting with a letter or '_'");
  if (name == "matrix")
    throw InputError(node.loc, name, "", "'matrix' is reserved (${matrix.x} means a matrix value)");
  if (!body.IsMap())
    throw InputError(yaml.value_loc(key, body), name, "",
                     "expected a map with at least 'type' (allowed keys: " + join(kNodeKeys) + ")");

  std::optional<YAML::Node> type_value;
  for (const auto& [k, v] : yaml.unique_pairs(body, name)) {
    const std::string field = k.Scalar();
    const SourceLoc where = yaml.value_loc(k, v);
    if (field == "type") {
      if (!v.IsScalar()) throw InputError(where, name, field, "expected a node type name");
      type_value = v;
    } else if (field == "params") {
      if (v.IsNull()) continue;
      if (!v.IsMap()) throw InputError(where, name, field, "expected a map of param name -> value");
      node.params = yaml.to_json(v, "", node.locs, where);
      node.params_loc = where;
    } else if (field == "inputs") {
      if (v.IsNull()) continue;
      auto add_input = [&](const std::string& alias, const YAML::Node& target, const SourceLoc& alias_loc) {
        if (!target.IsScalar()) throw InputError(yaml.loc(target), name, field, "expected a node name");
        if (!is_identifier(alias))
          throw InputError(alias_loc, name, field,
                           "invalid input alias '" + alias + "': use letters, digits, '_' and '-'");
        for (const auto& in : node.inputs)
          if (in.alias == alias)
            throw InputError(alias_loc, name, field,
                             "input '" + alias + "' is listed twice (first at " + in.loc.str() +
                                 "); to read several instances of one matrix, give each an alias: "
                                 "inputs: {small: \"gen[size=1]\", big: \"gen[size=2]\"}");
        node.inputs.push_back({alias, target.Scalar(), yaml.loc(target)});
      };
      if (v.IsSequence()) {
        for (const auto& item : v) {
          if (!item.IsScalar()) throw InputError(yaml.loc(item), name, field, "expected a node name");
          // An instance name ("gen[size=1]") has no valid alias of its own: its declared part stands in.
          std::string alias = item.Scalar().substr(0, item.Scalar().find('['));
          add_input(alias, item, yaml.loc(item));
        }
      } else if (v.IsMap()) {
        for (const auto& [alias, target] : yaml.unique_pairs(v, name)) add_input(alias.Scalar(), target, yaml.loc(alias));
      } else if (v.IsScalar()) {
        throw InputError(where, name, field,
                         "expected a list of node names, e.g. [" + v.Scalar() + "], or a map {alias: node}");
      } else {
        throw InputError(where, name, field, "expected a list of node names or a map {alias: node}");
      }
    } else if (field == "matrix") {
      if (!v.IsMap() || v.size() == 0)
        throw InputError(where, name, field, "expected a map of key -> list of values, e.g. {size: [1, 2]}");
      for (const auto& [mk, mv] : yaml.unique_pairs(v, name)) {
        MatrixAxis axis{mk.Scalar(), yaml.loc(mk), {}, {}};
        if (!is_identifier(axis.key))
          throw InputError(axis.loc, name, "matrix." + axis.key, "invalid matrix key: use letters, digits, '_' and '-'");
        if (!mv.IsSequence() || mv.size() == 0)
          throw InputError(yaml.value_loc(mk, mv), name, "matrix." + axis.key, "expected a non-empty list of values");
        std::set<std::string> seen;
        for (const auto& item : mv) {
          LocMap unused;
          json value = yaml.to_json(item, "", unused, yaml.loc(item));
          std::string label = matrix_label(item, value);
          if (!seen.insert(label).second)
            throw InputError(yaml.loc(item), name, "matrix." + axis.key, "value '" + label + "' is listed twice");
          axis.values.push_back(std::move(value));
          axis.labels.push_back(std::move(label));
        }
        node.matrix.push_back(std::move(axis));
      }
    } else if (field == "resources") {
      if (v.IsNull()) continue;
      if (!v.IsMap()) throw InputError(where, name, field, "expected a map of resource -> count, e.g. {gpu: 1}");
      for (const auto& [rk, rv] : yaml.unique_pairs(v, name)) {
        auto count = rv.IsScalar() && rv.Tag() != "!" ? YamlReader::parse_int(rv.Scalar()) : std::nullopt;
        if (!count || *count < 0 || *count > 1'000'000)
          throw InputError(yaml.value_loc(rk, rv), name, "resources." + rk.Scalar(),
                           "expected a non-negative int");
        node.resources[rk.Scalar()] = static_cast<int>(*count);
      }
    } else if (field == "exclusive") {
      LocMap unused;
      json value = yaml.to_json(v, "", unused, where);
      if (!value.is_boolean())
        throw InputError(where, name, field, "expected bool (true or false), got " + describe(value));
      node.exclusive = value.get<bool>();
    } else if (field == "doc" || field == "description") {
      // Free text for readers of the file.
    } else {
      throw InputError(yaml.loc(k), name, field,
                       "unknown key" + did_you_mean(field, kNodeKeys) + "; allowed keys: " + join(kNodeKeys));
    }
  }

  if (!type_value)
    throw InputError(node.loc, name, "type", "missing: every node needs a 'type' (see `aispflow nodes`)");
  node.type_name = type_value->Scalar();
  node.type = registry.find(node.type_name);
  if (!node.type) {
    std::string hint = registry.nearest(node.type_name);
    std::vector<std::string> known;
    for (const NodeType* t : registry.all()) known.push_back(t->name());
    throw InputError(yaml.loc(*type_value), name, "type",
                     "unknown node type '" + node.type_name + "'" +
                         (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                         "; registered types: " + join(known));
  }
  if (node.params_loc.line == 0) node.params_loc = node.loc;
  return node;
}

// ---------------------------------------------------------------------------------------------------
// --set node.param=value

struct Override {
  std::string text;                 // as given, for messages
  std::string node;                 // declared or instance name
  std::vector<std::string> path;    // param, then nested keys
  json value;
  bool used = false;

  SourceLoc loc() const { return {"<command line> --set " + text, 0, 0}; }
};

Override parse_override(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return InputError(kCommandLine, "", "", "--set '" + text + "': " + why);
  };
  Override o;
  o.text = text;
  std::size_t i = 0;
  // The node part may be an instance name, whose brackets can hold '.', '=' and nested brackets.
  while (i < text.size() && text[i] != '.' && text[i] != '[' && text[i] != '=') ++i;
  if (i < text.size() && text[i] == '[') {
    int depth = 0;
    for (; i < text.size(); ++i) {
      if (text[i] == '[') ++depth;
      if (text[i] == ']' && --depth == 0) { ++i; break; }
    }
    if (depth != 0) throw bad("unbalanced '[' in the node name");
  }
  o.node = text.substr(0, i);
  if (o.node.empty() || i >= text.size() || text[i] != '.')
    throw bad("expected node.param=value");
  std::size_t eq = text.find('=', i);
  if (eq == std::string::npos) throw bad("expected node.param=value (no '=')");
  std::string path = text.substr(i + 1, eq - i - 1);
  std::stringstream parts(path);
  for (std::string part; std::getline(parts, part, '.');) {
    if (part.empty()) throw bad("empty name in the param path '" + path + "'");
    o.path.push_back(part);
  }
  if (o.path.empty()) throw bad("expected node.param=value (no param name)");

  std::string value_text = text.substr(eq + 1);
  if (value_text.empty()) {
    o.value = "";  // `--set n.p=` means an empty string, which is what people mean on a command line
    return o;
  }
  try {
    YamlReader reader("<command line>");
    LocMap unused;
    o.value = reader.to_json(YAML::Load(value_text), "", unused, kCommandLine);
  } catch (const YAML::Exception& e) {
    throw bad("the value is not valid YAML: " + e.msg);
  } catch (const InputError& e) {
    throw bad(e.what());
  }
  return o;
}

void apply_override(Override& o, const DeclaredNode& decl, json& params, LocMap& locs) {
  const std::string& param = o.path.front();
  std::vector<std::string> names;
  for (const auto& spec : decl.type->param_specs()) names.push_back(spec.name);
  if (std::find(names.begin(), names.end(), param) == names.end())
    throw InputError(kCommandLine, decl.name, param,
                     "--set '" + o.text + "': type '" + decl.type_name + "' has no param '" + param + "'" +
                         did_you_mean(param, names) + "; its params: " + join(names));
  json* target = &params;
  std::string pointer;
  for (std::size_t k = 0; k < o.path.size(); ++k) {
    if (!target->is_object()) {
      if (!target->is_null())
        throw InputError(kCommandLine, decl.name, param,
                         "--set '" + o.text + "': '" + o.path[k - 1] + "' is " + describe(*target) +
                             ", not a map, so it has no key '" + o.path[k] + "'");
      *target = json::object();
    }
    pointer = child_pointer(pointer, o.path[k]);
    target = &(*target)[o.path[k]];
  }
  *target = o.value;
  locs.replace_subtree(pointer, o.loc());
  o.used = true;
}

// ---------------------------------------------------------------------------------------------------
// Pass 2: one declared node -> its instances.

using Combination = std::vector<std::size_t>;  // index into each matrix axis

std::vector<Combination> cartesian(const std::vector<MatrixAxis>& axes) {
  std::vector<Combination> out{Combination{}};
  for (const auto& axis : axes) {  // the last key varies fastest, like nested loops in file order
    std::vector<Combination> next;
    for (const auto& partial : out)
      for (std::size_t i = 0; i < axis.values.size(); ++i) {
        next.push_back(partial);
        next.back().push_back(i);
      }
    out = std::move(next);
  }
  return out;
}

class MatrixSubstitution {
 public:
  MatrixSubstitution(const DeclaredNode& decl, const Combination& combo) : decl_(decl), combo_(combo) {}

  // Replaces ${matrix.key}; a string that is exactly one ${matrix.key} takes the value's own type.
  json apply(const json& v, const std::string& pointer, const LocMap& locs, const std::string& field) const {
    if (v.is_string()) return apply_string(v.get<std::string>(), locs.find(pointer, decl_.loc), field);
    if (v.is_array()) {
      json out = json::array();
      for (std::size_t i = 0; i < v.size(); ++i)
        out.push_back(apply(v[i], child_pointer(pointer, std::to_string(i)), locs, field));
      return out;
    }
    if (v.is_object()) {
      json out = json::object();
      for (const auto& [k, item] : v.items()) out[k] = apply(item, child_pointer(pointer, k), locs, field);
      return out;
    }
    return v;
  }

  json apply_string(const std::string& s, const SourceLoc& where, const std::string& field) const {
    std::vector<RefMatch> refs = find_refs(s);
    std::string out;
    std::size_t last = 0;
    for (const auto& r : refs) {
      if (r.node != "matrix") continue;
      std::size_t axis = find_axis(r.field_path, where, field);
      if (r.pos == 0 && r.length == s.size()) return decl_.matrix[axis].values[combo_[axis]];
      out += s.substr(last, r.pos - last) + decl_.matrix[axis].labels[combo_[axis]];
      last = r.pos + r.length;
    }
    return out + s.substr(last);
  }

  json values() const {
    json out = json::object();
    for (std::size_t a = 0; a < decl_.matrix.size(); ++a) out[decl_.matrix[a].key] = decl_.matrix[a].values[combo_[a]];
    return out;
  }

 private:
  std::size_t find_axis(const std::string& key, const SourceLoc& where, const std::string& field) const {
    std::vector<std::string> keys;
    for (std::size_t a = 0; a < decl_.matrix.size(); ++a) {
      if (decl_.matrix[a].key == key) return a;
      keys.push_back(decl_.matrix[a].key);
    }
    if (keys.empty())
      throw InputError(where, decl_.name, field,
                       "${matrix." + key + "} used, but the node has no 'matrix' (add matrix: {" + key +
                           ": [...]})");
    throw InputError(where, decl_.name, field,
                     "${matrix." + key + "}: no matrix key '" + key + "'" + did_you_mean(key, keys) +
                         "; the matrix has: " + join(keys));
  }

  const DeclaredNode& decl_;
  const Combination& combo_;
};

// Collects the ${node.field} references of `v` (after matrix substitution) with their locations.
void collect_refs(const json& v, const std::string& pointer, const LocMap& locs, const SourceLoc& fallback,
                  std::vector<RefDecl>& out) {
  if (v.is_string()) {
    for (const auto& r : find_refs(v.get_ref<const std::string&>()))
      if (r.node != "matrix") out.push_back({r.node, r.field_path, locs.find(pointer, fallback)});
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) collect_refs(v[i], child_pointer(pointer, std::to_string(i)), locs, fallback, out);
  } else if (v.is_object()) {
    for (const auto& [k, item] : v.items()) collect_refs(item, child_pointer(pointer, k), locs, fallback, out);
  }
}

std::vector<NodeDecl> expand(const DeclaredNode& decl, std::vector<Override>& overrides) {
  std::vector<NodeDecl> instances;
  for (const Combination& combo : cartesian(decl.matrix)) {
    NodeDecl n;
    n.declared_name = decl.name;
    n.name = decl.name;
    if (!decl.matrix.empty()) {
      std::vector<std::string> parts;
      for (std::size_t a = 0; a < decl.matrix.size(); ++a)
        parts.push_back(decl.matrix[a].key + "=" + decl.matrix[a].labels[combo[a]]);
      n.name += "[" + join(parts, ",") + "]";
    }
    n.type = decl.type_name;
    n.loc = decl.loc;
    n.resources = decl.resources;
    n.exclusive = decl.exclusive || decl.type->traits().exclusive;

    json params = decl.params;
    LocMap locs = decl.locs;
    for (auto& o : overrides)
      if (o.node == decl.name || o.node == n.name) apply_override(o, decl, params, locs);

    MatrixSubstitution matrix(decl, combo);
    n.matrix = matrix.values();
    n.params = json::object();
    for (const auto& [key, value] : params.items()) {
      const std::string pointer = child_pointer("", key);
      n.params[key] = matrix.apply(value, pointer, locs, key);
      n.param_locs[key] = locs.find(pointer, decl.params_loc);
      collect_refs(n.params[key], pointer, locs, n.param_locs[key], n.refs);
    }
    for (const auto& in : decl.inputs) {
      json target = matrix.apply_string(in.node, in.loc, "inputs");
      n.inputs.push_back({in.alias, target.is_string() ? target.get<std::string>() : target.dump(), in.loc});
    }
    instances.push_back(std::move(n));
  }
  return instances;
}

// ---------------------------------------------------------------------------------------------------
// Pass 3: checks that need every node.

void check_targets(const Workflow& wf, const std::map<std::string, std::vector<std::size_t>>& by_declared) {
  std::set<std::string> known;
  std::vector<std::string> candidates;
  for (const auto& [declared, _] : by_declared) candidates.push_back(declared);
  for (const auto& n : wf.nodes) known.insert(n.name);
  for (const auto& [declared, _] : by_declared) known.insert(declared);

  for (const auto& n : wf.nodes) {
    auto is_self = [&](const std::string& target) { return target == n.name || target == n.declared_name; };
    for (const auto& in : n.inputs) {
      if (!known.count(in.node))
        throw InputError(in.loc, n.name, "inputs",
                         "unknown node '" + in.node + "'" + did_you_mean(in.node, candidates) +
                             "; nodes in this workflow: " + join(candidates));
      if (is_self(in.node)) throw InputError(in.loc, n.name, "inputs", "a node cannot be its own input");
    }
    for (const auto& ref : n.refs) {
      const std::string text = "${" + ref.node + "." + ref.field_path + "}";
      if (!known.count(ref.node))
        throw InputError(ref.loc, n.name, "params",
                         text + ": unknown node '" + ref.node + "'" + did_you_mean(ref.node, candidates) +
                             "; nodes in this workflow: " + join(candidates));
      if (is_self(ref.node))
        throw InputError(ref.loc, n.name, "params", text + ": a node cannot read its own output");
    }
  }
}

// Node types may ask for GPUs depending on their params; the scheduler reads `resources`, so the larger
// of the declared and the required count is what the node holds.
void add_required_resources(NodeDecl& n, const NodeType& type, const json& completed) {
  try {
    Requirements req = type.requirements(completed);
    if (req.gpus > 0) n.resources["gpu"] = std::max(n.resources["gpu"], req.gpus);
  } catch (const std::exception&) {
    // Requirements that cannot be computed yet (params with ${refs}) are settled at run time.
  }
}

// `plugins: [path, ...]`, each relative to the workflow file, loaded through the registry's plugin loader.
std::vector<std::filesystem::path> load_plugins(const YamlReader& yaml, const Registry& registry, const YAML::Node& key,
                                                const YAML::Node& value, const std::filesystem::path& file) {
  if (!value.IsSequence())
    throw InputError(yaml.value_loc(key, value), "", "plugins", "expected a list of plugin files (.so)");
  const std::filesystem::path dir = file.empty() ? std::filesystem::current_path() : file.parent_path();
  std::vector<std::filesystem::path> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const YAML::Node item = value[i];
    const std::string field = "plugins[" + std::to_string(i) + "]";
    if (!item.IsScalar() || item.Scalar().empty())
      throw InputError(yaml.loc(item), "", field, "expected the path of a plugin file (.so)");
    std::filesystem::path path(item.Scalar());
    if (path.is_relative()) path = dir / path;
    path = path.lexically_normal();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw InputError(yaml.loc(item), "", field,
                       "plugin file '" + item.Scalar() + "' does not exist (looked for " + path.string() + ")");
    if (!registry.plugin_loader())
      throw InputError(yaml.loc(item), "", field, "this program cannot load plugins");
    try {
      registry.plugin_loader()(path);
    } catch (const std::exception& e) {
      throw InputError(yaml.loc(item), "", field, e.what());
    }
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  }
  return out;
}

Workflow parse_document(const std::string& text, const std::string& label, const std::filesystem::path& file,
                        const Registry& registry, const std::vector<std::string>& override_texts) {
  std::vector<Override> overrides;
  for (const auto& t : override_texts) overrides.push_back(parse_override(t));

  YamlReader yaml(label);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    SourceLoc where{label, e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0};
    throw InputError(where, "", "", "YAML syntax error: " + e.msg);
  }

  Workflow wf;
  wf.file = file;
  wf.name = file.stem().string();
  const SourceLoc file_loc{label, 0, 0};
  if (root.IsNull()) throw InputError(file_loc, "", "", "the workflow is empty: expected a map with 'nodes'");
  if (!root.IsMap())
    throw InputError(yaml.loc(root), "", "", "expected a map with 'nodes' (and optionally 'name') at the top level");

  std::optional<std::pair<YAML::Node, YAML::Node>> nodes_entry;
  for (const auto& [k, v] : yaml.unique_pairs(root, "")) {
    const std::string key = k.Scalar();
    if (key == "name") {
      if (!v.IsScalar() || v.Scalar().empty())
        throw InputError(yaml.value_loc(k, v), "", "name", "expected the workflow's name as text");
      wf.name = v.Scalar();
    } else if (key == "nodes") {
      nodes_entry = {k, v};
    } else if (key == "plugins") {
      // Loaded now, before any node's params are checked: a sweep may name the providers they bring.
      wf.plugins = load_plugins(yaml, registry, k, v, file);
    } else if (key != "doc" && key != "description" && key != "executor") {
      throw InputError(yaml.loc(k), "", key,
                       "unknown top-level key" + did_you_mean(key, kTopLevelKeys) +
                           "; allowed: " + join(kTopLevelKeys));
    }
  }
  if (!nodes_entry) throw InputError(file_loc, "", "", "the workflow has no 'nodes': nothing to run");
  const auto& [nodes_key, nodes] = *nodes_entry;
  if (nodes.IsNull() || (nodes.IsMap() && nodes.size() == 0))
    throw InputError(yaml.loc(nodes_key), "", "nodes", "the workflow is empty: 'nodes' declares no node");
  if (!nodes.IsMap())
    throw InputError(yaml.loc(nodes), "", "nodes", "expected a map of node name -> node");

  std::vector<DeclaredNode> declared;
  // yaml-cpp keeps both entries of a duplicated key, so duplicates are found here rather than lost.
  for (auto it = nodes.begin(); it != nodes.end(); ++it) {
    const YAML::Node k = it->first;  // a copy: yaml-cpp iterators hand out temporaries
    if (!k.IsScalar()) throw InputError(yaml.loc(k), "", "nodes", "expected a node name as the key");
    for (const auto& prev : declared)
      if (prev.name == k.Scalar())
        throw InputError(yaml.loc(k), k.Scalar(), "",
                         "duplicate node name: declared at " + prev.loc.str() + " and again at " +
                             yaml.loc(k).str());
    declared.push_back(read_node(yaml, registry, k, it->second));
  }

  std::map<std::string, std::vector<std::size_t>> by_declared;
  for (const auto& decl : declared)
    for (auto& instance : expand(decl, overrides)) {
      by_declared[decl.name].push_back(wf.nodes.size());
      wf.nodes.push_back(std::move(instance));
    }

  for (const auto& o : overrides) {
    if (o.used) continue;
    std::vector<std::string> names;
    for (const auto& n : wf.nodes) names.push_back(n.name);
    for (const auto& [d, _] : by_declared) names.push_back(d);
    throw InputError(kCommandLine, "", "",
                     "--set '" + o.text + "': unknown node '" + o.node + "'" + did_you_mean(o.node, names));
  }

  check_targets(wf, by_declared);

  for (std::size_t i = 0; i < wf.nodes.size(); ++i) {
    NodeDecl& n = wf.nodes[i];
    const NodeType& type = *registry.find(n.type);
    json completed = complete_params(n, type, n.params);
    check_reference_places(n, type);
    if (!has_node_ref(n.params)) add_required_resources(n, type, completed);
  }
  return wf;
}

// Type-checks one param value; returns it, possibly normalised (an integral 1e3 becomes the int 1000).
json check_kind(const NodeDecl& node, const ParamSpec& spec, const json& value, const SourceLoc& where) {
  auto fail = [&](const std::string& expected) {
    return InputError(where, node.name, spec.name, "expected " + expected + ", got " + describe(value));
  };
  switch (spec.kind) {
    case ParamKind::integer:
      if (value.is_number_integer()) return value;
      if (value.is_number_float()) {
        double d = value.get<double>();
        if (d == static_cast<double>(static_cast<std::int64_t>(d)) && std::abs(d) < 9.0e18)
          return static_cast<std::int64_t>(d);
      }
      throw fail("int");
    case ParamKind::number:
      if (value.is_number()) return value;
      throw fail("number");
    case ParamKind::boolean:
      if (value.is_boolean()) return value;
      throw fail("bool (true or false)");
    case ParamKind::string:
      if (value.is_string()) return value;
      throw fail("string");
    case ParamKind::list:
      if (value.is_array()) return value;
      throw fail("list");
    case ParamKind::map:
      if (value.is_object()) return value;
      throw fail("map");
    case ParamKind::path:
      if (value.is_string() && !value.get<std::string>().empty()) return value;
      throw fail("path (a file name)");
    case ParamKind::path_list:
      if (value.is_array()) {
        for (std::size_t i = 0; i < value.size(); ++i)
          if (!value[i].is_string() || value[i].get<std::string>().empty())
            throw InputError(where, node.name, spec.name,
                             "expected list of paths, but item " + std::to_string(i) + " is " + describe(value[i]));
        return value;
      }
      throw fail("list of paths");
    case ParamKind::any: return value;
  }
  return value;
}

}  // namespace

// -----------------------------------------------------------------------------------------------------
// Public interface

Workflow parse_workflow(const std::string& yaml_text, const std::filesystem::path& file_label,
                        const Registry& registry, const std::vector<std::string>& overrides) {
  const std::string label = file_label.empty() ? "<input>" : file_label.string();
  std::filesystem::path file;
  std::error_code ec;
  if (!file_label.empty()) file = std::filesystem::absolute(file_label, ec).lexically_normal();
  try {
    return parse_document(yaml_text, label, file, registry, overrides);
  } catch (const InputError&) {
    throw;
  } catch (const YAML::Exception& e) {
    // yaml-cpp reports some problems (e.g. nesting too deep) outside ParserException.
    SourceLoc where{label, e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0};
    throw InputError(where, "", "", "cannot read the YAML: " + e.msg);
  } catch (const std::exception& e) {
    throw InputError(SourceLoc{label, 0, 0}, "", "", std::string("cannot read the workflow: ") + e.what());
  }
}

Workflow load_workflow(const std::filesystem::path& file, const Registry& registry,
                       const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw InputError("cannot read workflow file '" + file.string() + "': it is a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    int err = errno;
    throw InputError("cannot read workflow file '" + file.string() + "': " +
                     (err ? std::strerror(err) : "cannot open it"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError("cannot read workflow file '" + file.string() + "': read error");
  return parse_workflow(text.str(), file, registry, overrides);
}

json complete_params(const NodeDecl& node, const NodeType& type, const json& params) {
  auto loc_of = [&](const std::string& key) {
    auto it = node.param_locs.find(key);
    return it != node.param_locs.end() ? it->second : node.loc;
  };
  const std::vector<ParamSpec>& specs = type.param_specs();

  if (!params.is_object()) throw InputError(node.loc, node.name, "params", "expected a map of param -> value");

  json out = json::object();
  bool unresolved_refs = false;
  for (const auto& [key, value] : params.items()) {
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == key; });
    if (spec == specs.end()) {
      std::vector<std::string> names;
      for (const auto& s : specs) names.push_back(s.name);
      throw InputError(loc_of(key), node.name, key,
                       "unknown param for type '" + type.name() + "'" + did_you_mean(key, names) +
                           "; its params: " + (names.empty() ? std::string("(none)") : join(names)));
    }
    if (value.is_null()) continue;  // `key: ~` means "not given": the default applies
    if (has_node_ref(value)) {
      // The value is only known once the upstream node has run; it is checked again then.
      out[key] = value;
      unresolved_refs = true;
      continue;
    }
    out[key] = check_kind(node, *spec, value, loc_of(key));
  }
  for (const auto& spec : specs) {
    if (out.contains(spec.name)) continue;
    if (spec.required)
      throw InputError(node.loc, node.name, spec.name,
                       "missing required param (expected " + to_string(spec.kind) +
                           (spec.doc.empty() ? "" : ": " + spec.doc) + ")");
    if (!spec.default_value.is_null()) out[spec.name] = spec.default_value;
  }
  if (!unresolved_refs) {
    std::string problem = type.check_params(out);
    if (!problem.empty()) {
      // Point at the param the message names, when it names one.
      SourceLoc where = node.loc;
      for (const auto& [key, _] : params.items())
        if (problem.find("'" + key + "'") != std::string::npos) { where = loc_of(key); break; }
      throw InputError(where, node.name, "", problem);
    }
  }
  return out;
}

namespace {

// The value at `field_path` inside `data`; numeric segments index lists.
const json* find_field(const json& data, const std::string& field_path, std::string& missing) {
  const json* cur = &data;
  std::stringstream parts(field_path);
  std::string walked;
  for (std::string part; std::getline(parts, part, '.');) {
    walked += (walked.empty() ? "" : ".") + part;
    if (cur->is_object() && cur->contains(part)) {
      cur = &(*cur)[part];
    } else if (cur->is_array() && !part.empty() &&
               part.find_first_not_of("0123456789") == std::string::npos && part.size() < 10 &&
               std::stoul(part) < cur->size()) {
      cur = &(*cur)[std::stoul(part)];
    } else {
      missing = walked;
      if (cur->is_object()) {
        std::vector<std::string> keys;
        for (const auto& [k, _] : cur->items()) keys.push_back(k);
        missing += "' (it has: " + (keys.empty() ? std::string("nothing") : join(keys)) + ")";
        missing.insert(0, "'");
        return nullptr;
      }
      missing = "'" + missing + "' (" + describe(*cur) + " has no such field)";
      return nullptr;
    }
  }
  return cur;
}

// A shell command with references: ${raw:...} spliced in as text first, then every other value written for
// the place it stands in (pipeline/shell_quote.hpp), so that the shell reads back exactly its bytes. A list
// standing as a word becomes one word per element; anywhere else a value is its text (JSON for lists, maps).
std::string splice_into_shell(const NodeDecl& node, const std::string& field, const std::string& s,
                              const std::vector<RefMatch>& refs, const std::vector<json>& values) {
  std::string script;
  std::vector<shell::Span> spans;
  std::vector<std::size_t> which;  // span -> index into refs
  std::size_t last = 0;
  for (std::size_t k = 0; k < refs.size(); ++k) {
    script.append(s, last, refs[k].pos - last);
    if (refs[k].raw) {
      script += as_text(values[k]);
    } else {
      spans.push_back({script.size(), refs[k].length});
      which.push_back(k);
      script.append(s, refs[k].pos, refs[k].length);
    }
    last = refs[k].pos + refs[k].length;
  }
  script.append(s, last, std::string::npos);
  try {
    return shell::splice(script, spans, [&](std::size_t i, const shell::Place& place) {
      const json& v = values[which[i]];
      if (place.context != shell::Context::word || !v.is_array()) return shell::escape(as_text(v), place.context);
      std::string words;
      for (const auto& item : v) words += (words.empty() ? "" : " ") + shell::escape(as_text(item), place.context);
      return words.empty() ? std::string("''") : words;
    });
  } catch (const shell::SpliceError& e) {
    const RefMatch& r = refs[which[e.span]];
    const auto before = script.begin() + static_cast<long>(spans[e.span].pos);
    const int line = 1 + static_cast<int>(std::count(script.begin(), before, '\n'));
    throw InputError(ref_loc(node, r, field), node.name, field, shell_refusal(r, line, e.what()));
  }
}

}  // namespace

json substitute_refs(const NodeDecl& node, const json& params,
                     const std::function<std::vector<const Artifact*>(const std::string&)>& lookup,
                     const std::function<bool(const std::string& field)>& shell_field, json* ref_values) {
  // The value of one reference: the field of the upstream artifact, a list over matrix instances.
  auto value_of = [&](const RefMatch& r, const std::string& field) -> json {
    const std::string text = "${" + r.node + "." + r.field_path + "}";
    const SourceLoc where = ref_loc(node, r, field);
    std::vector<const Artifact*> artifacts = lookup(r.node);
    if (artifacts.empty())
      throw InputError(where, node.name, field, text + ": node '" + r.node + "' has no artifact to read");
    json value = json::array();
    for (const Artifact* a : artifacts) {
      std::string missing;
      const json* found = a ? find_field(a->data(), r.field_path, missing) : nullptr;
      if (!found)
        throw InputError(where, node.name, field,
                         text + ": the output of '" + r.node + "' has no field " + (a ? missing : "(no artifact)"));
      value.push_back(*found);
    }
    if (artifacts.size() == 1) value = value[0];
    if (ref_values) (*ref_values)[r.node + "." + r.field_path] = value;
    return value;
  };
  // `field` is the top-level param being walked, for messages.
  std::function<json(const json&, const std::string&)> walk = [&](const json& v, const std::string& field) -> json {
    if (v.is_array()) {
      json out = json::array();
      for (const auto& item : v) out.push_back(walk(item, field));
      return out;
    }
    if (v.is_object()) {
      json out = json::object();
      for (const auto& [k, item] : v.items()) out[k] = walk(item, field.empty() ? k : field);
      return out;
    }
    if (!v.is_string()) return v;
    const std::string& s = v.get_ref<const std::string&>();
    std::vector<RefMatch> refs;
    for (auto& r : find_refs(s))
      if (r.node != "matrix") refs.push_back(std::move(r));
    if (refs.empty()) return v;
    std::vector<json> values;
    for (const auto& r : refs) values.push_back(value_of(r, field));
    if (shell_field && shell_field(field)) return splice_into_shell(node, field, s, refs, values);
    if (refs.size() == 1 && refs[0].pos == 0 && refs[0].length == s.size()) return values[0];  // keeps the type
    std::string out;
    std::size_t last = 0;
    for (std::size_t k = 0; k < refs.size(); ++k) {
      out += s.substr(last, refs[k].pos - last) + as_text(values[k]);
      last = refs[k].pos + refs[k].length;
    }
    return out + s.substr(last);
  };
  json result = json::object();
  if (!params.is_object()) return walk(params, "");
  for (const auto& [k, v] : params.items()) result[k] = walk(v, k);
  return result;
}

std::string ref_env_var(const std::string& node, const std::string& field_path) {
  return "AISPFLOW_REF_" + env_var_suffix(node) + "_" + env_var_suffix(field_path);
}

std::string filesystem_name(const std::string& instance_name) {
  std::string out;
  bool lossy = false;
  for (char c : instance_name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') out += c;
    else if (c == '[' || c == ',') out += '.';
    else if (c == '=') out += '-';
    else if (c == ']') continue;
    else { out += '_'; lossy = true; }
  }
  if (out.empty() || out == "." || out == "..") { out = "_" + out; lossy = true; }
  if (lossy) {
    // Replaced characters could make two names collide: a stable hash of the original tells them apart.
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : instance_name) { h ^= c; h *= 1099511628211ull; }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    out += "~" + std::string(buf, 8);
  }
  return out;
}

std::string env_var_suffix(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

}  // namespace aispflow
