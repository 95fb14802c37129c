#include "pipeline/slurm/profile.hpp"

#include <yaml-cpp/yaml.h>

#include "pipeline/errors.hpp"

namespace aispflow::slurm {

namespace {

const char* const kFields = "where, partition, account, qos, time, mem, cpus, ntasks, num_nodes, exclusive, sbatch_args";

struct Reader {
  std::string file;
  SourceLoc loc(const YAML::Node& n) const {
    const auto mark = n.Mark();
    return SourceLoc{file, mark.line + 1, mark.column + 1};
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& field, const std::string& message) const {
    throw InputError(loc(n), "", field, message);
  }
  std::string text(const YAML::Node& v, const std::string& field) const {
    if (!v.IsScalar() || v.Scalar().empty()) fail(v, field, "expected text");
    return v.Scalar();
  }

  Settings settings(const YAML::Node& map, const std::string& where, bool top) const {
    if (!map.IsMap()) fail(map, where, "expected a map of settings (" + std::string(kFields) + ")");
    Settings s;
    for (const auto& entry : map) {
      const std::string key = entry.first.Scalar();
      const YAML::Node& v = entry.second;
      const std::string field = where.empty() ? key : where + "." + key;
      if (key == "where") {
        s.where = text(v, field);
        if (*s.where != "slurm" && *s.where != "local") fail(v, field, "expected 'slurm' or 'local'");
      } else if (key == "partition") {
        s.partition = text(v, field);
      } else if (key == "account") {
        s.account = text(v, field);
      } else if (key == "qos") {
        s.qos = text(v, field);
      } else if (key == "time") {
        s.time = text(v, field);   // Slurm's own formats ("30", "1:00:00", "1-0"): sbatch checks them
      } else if (key == "mem") {
        s.mem = text(v, field);
      } else if (key == "cpus" || key == "ntasks" || key == "num_nodes") {
        int count = 0;
        if (!YAML::convert<int>::decode(v, count) || count < 1) fail(v, field, "expected a positive integer");
        (key == "cpus" ? s.cpus : key == "ntasks" ? s.ntasks : s.num_nodes) = count;
      } else if (key == "exclusive") {
        bool b = false;
        if (!YAML::convert<bool>::decode(v, b)) fail(v, field, "expected true or false");
        s.exclusive = b;
      } else if (key == "sbatch_args") {
        if (!v.IsSequence()) fail(v, field, "expected a list of sbatch arguments, e.g. [--constraint=h100]");
        std::vector<std::string> args;
        for (const auto& a : v) args.push_back(text(a, field));
        s.sbatch_args = std::move(args);
      } else if (top && (key == "types" || key == "nodes" || key == "poll_interval_s")) {
        continue;   // read by load_profile
      } else {
        fail(entry.first, field,
             "unknown setting; allowed: " + std::string(kFields) + (top ? ", types, nodes, poll_interval_s" : ""));
      }
    }
    return s;
  }
};

}  // namespace

void Settings::overlay(const Settings& above) {
  auto take = [](auto& mine, const auto& theirs) {
    if (theirs) mine = theirs;
  };
  take(where, above.where);
  take(partition, above.partition);
  take(account, above.account);
  take(qos, above.qos);
  take(time, above.time);
  take(mem, above.mem);
  take(cpus, above.cpus);
  take(ntasks, above.ntasks);
  take(num_nodes, above.num_nodes);
  take(exclusive, above.exclusive);
  take(sbatch_args, above.sbatch_args);
}

Settings Profile::for_node(const std::string& instance, const std::string& declared, const std::string& type) const {
  Settings s = defaults;
  if (auto it = types.find(type); it != types.end()) s.overlay(it->second);
  if (auto it = nodes.find(declared); it != nodes.end()) s.overlay(it->second);
  if (instance != declared)
    if (auto it = nodes.find(instance); it != nodes.end()) s.overlay(it->second);
  return s;
}

Profile load_profile(const std::filesystem::path& file) {
  Reader r{file.string()};
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    throw InputError(SourceLoc{file.string(), 0, 0}, "", "", "cannot read the file");
  } catch (const YAML::Exception& e) {
    throw InputError(SourceLoc{file.string(), e.mark.line + 1, e.mark.column + 1}, "", "", e.msg);
  }
  Profile profile;
  profile.source = file.string();
  if (!root.IsMap()) return profile;
  YAML::Node section = root["executor"] ? root["executor"] : root;
  if (!section.IsMap()) r.fail(section, "executor", "expected a map with 'slurm'");
  YAML::Node slurm = section["slurm"];
  if (!slurm) return profile;
  profile.defaults = r.settings(slurm, "", true);
  if (auto poll = slurm["poll_interval_s"]) {
    double s = 0;
    if (!YAML::convert<double>::decode(poll, s) || s < 0.05 || s > 60)
      r.fail(poll, "poll_interval_s", "expected seconds between 0.05 and 60");
    profile.poll_interval_s = s;
  }
  for (const char* group : {"types", "nodes"}) {
    YAML::Node g = slurm[group];
    if (!g) continue;
    if (!g.IsMap()) r.fail(g, group, std::string("expected a map of ") + (group[0] == 't' ? "node type" : "node name") + " -> settings");
    auto& into = group[0] == 't' ? profile.types : profile.nodes;
    for (const auto& entry : g) {
      const std::string name = entry.first.Scalar();
      into[name] = r.settings(entry.second, std::string(group) + "." + name, false);
    }
  }
  return profile;
}

}  // namespace aispflow::slurm
