#pragma once
// An artifact is what a node produced: a JSON document plus optional files (SVG, CSV, logs) that live in
// one directory, identified by a content digest over both.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace aispflow {

using json = nlohmann::json;

// How a node's result bears on the run's exit code, beyond succeeding or failing.
enum class Verdict {
  ok,                    // nothing to report
  expectations_not_met,  // e.g. `expect` found regressions or missing records: the run exits 3
};
std::string to_string(Verdict v);
Verdict verdict_from_string(const std::string& s);  // unknown strings read as ok

struct Artifact {
  json data;                          // the node's output document (what `${node.field}` reads)
  Verdict verdict = Verdict::ok;
  std::filesystem::path dir;          // directory holding artifact.json and the files
  std::vector<std::string> files;     // file names relative to dir, sorted
  std::string digest;                 // content digest of data + verdict + files (hex)
};

}  // namespace aispflow
