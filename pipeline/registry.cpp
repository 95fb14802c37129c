#include "pipeline/registry.hpp"

#include <algorithm>
#include <stdexcept>

namespace aispflow {

std::string to_string(ParamKind k) {
  switch (k) {
    case ParamKind::integer: return "int";
    case ParamKind::number: return "number";
    case ParamKind::boolean: return "bool";
    case ParamKind::string: return "string";
    case ParamKind::list: return "list";
    case ParamKind::map: return "map";
    case ParamKind::any: return "any";
    case ParamKind::path: return "path";
    case ParamKind::path_list: return "list of paths";
  }
  return "any";
}

void Registry::add(std::unique_ptr<NodeType> type) {
  std::string name = type->name();
  if (!types_.emplace(name, std::move(type)).second)
    throw std::logic_error("node type registered twice: " + name);
}

const NodeType* Registry::find(const std::string& name) const {
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : it->second.get();
}

std::vector<const NodeType*> Registry::all() const {
  std::vector<const NodeType*> out;
  for (const auto& [_, t] : types_) out.push_back(t.get());
  return out;
}

std::string Registry::nearest(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& [n, _] : types_) names.push_back(n);
  return closest_match(name, names);
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) { best_d = d; best = c; }
  }
  // Plausible typo: at most a third of the word wrong (and at least one edit allowed).
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_d <= limit ? best : std::string();
}

}  // namespace aispflow
