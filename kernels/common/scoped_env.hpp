#pragma once
// Environment variables set for a scope and restored when it ends: each one back to the value it had, or unset
// if it had none. Used by the `alltoall` node's in-process nccl transport, so its `nccl_env` reaches NCCL (which
// reads NCCL_* variables from the process environment) without leaking into later nodes: a `command` node's shell
// started afterwards, or another node, must not inherit settings that are not in its cache key.
//
// The process environment is shared by every thread: hold it only where nothing else reads or forks meanwhile
// (the alltoall node is exclusive: no other node runs while it does).
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

namespace aispflow::kernels {

class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const std::map<std::string, std::string>& values) {
    for (const auto& [name, value] : values) {
      const char* before = std::getenv(name.c_str());
      saved_[name] = before ? std::optional<std::string>(before) : std::nullopt;
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnvironment() {
    for (const auto& [name, before] : saved_) {
      if (before) ::setenv(name.c_str(), before->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace aispflow::kernels
