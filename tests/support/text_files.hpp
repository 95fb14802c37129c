#pragma once
// Helpers the integration tests share: reading a whole file, quoting for /bin/sh, running a command.
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

// Runs `command` with /bin/sh in `dir`, capturing stdout and stderr through out.txt and err.txt there.
inline CommandResult run_in(const std::filesystem::path& dir, const std::string& command) {
  const std::string line = "cd " + quote(dir.string()) + " && " + command + " > out.txt 2> err.txt";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(line.c_str());
  CommandResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(dir / "out.txt");
  r.err = read_file(dir / "err.txt");
  return r;
}

}  // namespace aispflow::test
