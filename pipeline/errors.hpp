#pragma once
// Errors the engine reports to the user. InputError means "the workflow or the command line is wrong":
// nothing runs and aispflow exits with code 2. Its message is complete and user-facing, starting with
// file:line:column where the problem has a place in a file.
#include <stdexcept>
#include <string>

namespace aispflow {

// Exit codes of `aispflow` (documented in `aispflow --help`; a contract for CI gates).
enum ExitCode : int {
  kExitOk = 0,
  kExitNodeFailed = 1,
  kExitBadInput = 2,
  kExitExpectationsNotMet = 3,
  kExitInterrupted = 130,
};

// A place in a YAML file. line and column are 1-based; 0 means "unknown".
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;
  std::string str() const {  // "file:line:column", shortest form that is known
    std::string s = file.empty() ? "<input>" : file;
    if (line > 0) s += ":" + std::to_string(line);
    if (line > 0 && column > 0) s += ":" + std::to_string(column);
    return s;
  }
  bool operator==(const SourceLoc&) const = default;
};

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  // "file:line:col: node 'n': field 'f': message"; empty parts are left out.
  InputError(const SourceLoc& where, const std::string& node, const std::string& field,
             const std::string& message)
      : std::runtime_error(format(where, node, field, message)) {}

  static std::string format(const SourceLoc& where, const std::string& node, const std::string& field,
                            const std::string& message) {
    std::string s = where.str() + ": ";
    if (!node.empty()) s += "node '" + node + "': ";
    if (!field.empty()) s += "field '" + field + "': ";
    return s + message;
  }
};

// Thrown by a node's run() to fail that node with a clear message (no stack trace is shown).
class NodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace aispflow
