#include "pipeline/workflow_codec.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace aispflow {

namespace {

constexpr std::string_view kMagic = "aispflow parsed workflow 1\n";

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void number(std::int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void text(std::string_view s) {
    number(static_cast<std::int64_t>(s.size()));
    out_.append(s);
  }
  // JSON values as their compact text; the empty object (most matrices) as an empty string.
  void value(const json& v) { text(v.is_object() && v.empty() ? std::string() : v.dump()); }
  // Locations name the workflow file nearly always: that name is written once, not in every location.
  void loc(const SourceLoc& l, const std::string& workflow_file) {
    const bool elsewhere = l.file != workflow_file;
    number(elsewhere ? 1 : 0);
    if (elsewhere) text(l.file);
    number(l.line);
    number(l.column);
  }

 private:
  std::string& out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::int64_t number() {
    std::int64_t v;
    take(&v, sizeof v);
    return v;
  }
  std::size_t count() {
    const std::int64_t n = number();
    if (n < 0 || static_cast<std::uint64_t>(n) > in_.size()) throw std::runtime_error("corrupt parsed workflow");
    return static_cast<std::size_t>(n);
  }
  std::string text() {
    const std::size_t n = count();
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }
  json value() {
    const std::string t = text();
    return t.empty() ? json::object() : json::parse(t);
  }
  SourceLoc loc(const std::string& workflow_file) {
    SourceLoc l;
    l.file = number() != 0 ? text() : workflow_file;
    l.line = static_cast<int>(number());
    l.column = static_cast<int>(number());
    return l;
  }
  bool done() const { return in_.empty(); }

 private:
  void take(void* into, std::size_t n) {
    if (in_.size() < n) throw std::runtime_error("truncated parsed workflow");
    std::memcpy(into, in_.data(), n);
    in_.remove_prefix(n);
  }
  std::string_view in_;
};

}  // namespace

std::string encode_workflow(const Workflow& w) {
  // The file name that locations carry (as the workflow was named on the command line).
  const std::string file = w.nodes.empty() ? w.file.string() : w.nodes.front().loc.file;
  std::string out(kMagic);
  Writer put(out);
  put.text(w.name);
  put.text(w.file.string());
  put.text(file);
  put.number(static_cast<std::int64_t>(w.nodes.size()));
  for (const auto& n : w.nodes) {
    put.text(n.name);
    put.text(n.declared_name == n.name ? std::string() : n.declared_name);
    put.text(n.type);
    put.value(n.params);
    put.number(static_cast<std::int64_t>(n.param_locs.size()));
    for (const auto& [param, l] : n.param_locs) {
      put.text(param);
      put.loc(l, file);
    }
    put.loc(n.loc, file);
    put.number(static_cast<std::int64_t>(n.inputs.size()));
    for (const auto& i : n.inputs) {
      put.text(i.alias);
      put.text(i.node);
      put.loc(i.loc, file);
    }
    put.number(static_cast<std::int64_t>(n.refs.size()));
    for (const auto& r : n.refs) {
      put.text(r.node);
      put.text(r.field_path);
      put.loc(r.loc, file);
    }
    put.number(static_cast<std::int64_t>(n.resources.size()));
    for (const auto& [resource, amount] : n.resources) {
      put.text(resource);
      put.number(amount);
    }
    put.number(n.exclusive ? 1 : 0);
    put.value(n.matrix);
  }
  return out;
}

Workflow decode_workflow(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) throw std::runtime_error("not a parsed workflow of this version");
  Reader get(bytes.substr(kMagic.size()));
  Workflow w;
  w.name = get.text();
  w.file = get.text();
  const std::string file = get.text();
  w.nodes.resize(get.count());
  for (auto& n : w.nodes) {
    n.name = get.text();
    n.declared_name = get.text();
    if (n.declared_name.empty()) n.declared_name = n.name;
    n.type = get.text();
    n.params = get.value();
    for (std::size_t i = get.count(); i > 0; --i) {
      std::string param = get.text();
      n.param_locs.emplace(std::move(param), get.loc(file));
    }
    n.loc = get.loc(file);
    n.inputs.resize(get.count());
    for (auto& i : n.inputs) {
      i.alias = get.text();
      i.node = get.text();
      i.loc = get.loc(file);
    }
    n.refs.resize(get.count());
    for (auto& r : n.refs) {
      r.node = get.text();
      r.field_path = get.text();
      r.loc = get.loc(file);
    }
    for (std::size_t i = get.count(); i > 0; --i) {
      std::string resource = get.text();
      n.resources[std::move(resource)] = static_cast<int>(get.number());
    }
    n.exclusive = get.number() != 0;
    n.matrix = get.value();
  }
  if (!get.done()) throw std::runtime_error("trailing bytes in parsed workflow");
  return w;
}

}  // namespace aispflow
