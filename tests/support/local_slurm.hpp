#pragma once
// A one-node Slurm cluster on localhost for a test suite (tests/support/local_slurm.sh does the work):
// started once per test program, stopped -- every daemon it started, by PID -- when the program ends.
// Where the daemons cannot start (Slurm not installed, not root for mknod, ...) `problem()` says why, and
// tests skip with that reason: never a silent pass.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "support/text_files.hpp"

namespace aispflow::test {

class LocalSlurm {
 public:
  static LocalSlurm& instance() {
    static LocalSlurm cluster;
    return cluster;
  }
  const std::string& problem() const { return problem_; }   // empty when the cluster is up
  const std::filesystem::path& dir() const { return dir_; }
  // Placeholder GPUs in gres.conf (0 where device nodes could not be made).
  bool has_gpus() const { return read_file(dir_ / "gres.conf").find("Name=gpu") != std::string::npos; }

  ~LocalSlurm() {
    if (dir_.empty()) return;
    std::system((script() + " stop " + quote(dir_.string()) + " > /dev/null 2>&1").c_str());
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);   // state, logs, placeholder devices: nothing outlives the tests
  }

 private:
  LocalSlurm() {
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() / ("aispflow-slurm-" + std::to_string(rd()));
    const std::string out_file = dir_.string() + ".start.txt";
    const int status = std::system(("bash " + script() + " start " + quote(dir_.string()) + " 8 2 > " +
                                    quote(out_file) + " 2>&1").c_str());
    const std::string out = read_file(out_file);
    std::filesystem::remove(out_file);
    if (status != 0) {
      problem_ = "the local Slurm cluster did not start: " + out;
      return;
    }
    ::setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);
  }
  static std::string script() { return quote(std::string(AISPFLOW_SOURCE_DIR) + "/tests/support/local_slurm.sh"); }

  std::filesystem::path dir_;
  std::string problem_;
};

}  // namespace aispflow::test
