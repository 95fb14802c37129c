#pragma once
// Helpers the integration tests share: reading a whole file, quoting for /bin/sh.
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

}  // namespace aispflow::test
