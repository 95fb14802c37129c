#pragma once
// Helpers the integration tests share: reading a whole file, quoting for /bin/sh, running a command.
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace aispflow::test {

// The whole file, or "" when it cannot be read.
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `s` as one single-quoted /bin/sh word.
inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The aispflow executable under test: $AISPFLOW_BIN when set (a bundle on a GPU host, where the build tree's
// path does not exist), else `built` (the path this build compiled in).
inline std::string aispflow_binary(const char* built) {
  const char* env = std::getenv("AISPFLOW_BIN");
  return env && *env ? std::string(env) : std::string(built);
}

struct CommandResult {
  int code = -1;             // exit status; -1 when killed by a signal
  std::string out, err;
  double seconds = 0;        // wall time of the whole command
};

// Runs `command` with /bin/sh in `dir`, capturing stdout and stderr through two files of a fresh temporary
// folder: ctest runs test processes side by side, and two of them running in one folder (the temp folder, a
// shared fixture) must never read each other's output.
inline CommandResult run_in(const std::filesystem::path& dir, const std::string& command) {
  std::string capture_template = (std::filesystem::temp_directory_path() / "aispflow-run-in-XXXXXX").string();
  const char* capture = ::mkdtemp(capture_template.data());
  if (capture == nullptr) return CommandResult{};
  const std::filesystem::path out_file = std::filesystem::path(capture) / "out.txt";
  const std::filesystem::path err_file = std::filesystem::path(capture) / "err.txt";
  const std::string line = "cd " + quote(dir.string()) + " && " + command + " > " + quote(out_file.string()) + " 2> " +
                           quote(err_file.string());
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(line.c_str());
  CommandResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out_file);
  r.err = read_file(err_file);
  std::error_code ec;
  std::filesystem::remove_all(capture, ec);
  return r;
}

}  // namespace aispflow::test
