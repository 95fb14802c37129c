#pragma once
// Content digests (XXH3-128, hex). Canonical JSON = nlohmann's dump() of an object with sorted keys,
// which std::map-backed nlohmann::json gives us, so key order in YAML never changes a digest.
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace aispflow {

class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& add(std::string_view bytes);
  Hasher& add_field(std::string_view name, std::string_view value);  // length-prefixed, unambiguous
  std::string hex();  // 32 hex chars

 private:
  void* state_;
};

std::string digest_bytes(std::string_view bytes);
std::string digest_json(const nlohmann::json& value);               // of the canonical dump
std::string digest_file(const std::filesystem::path& file);         // throws std::runtime_error if unreadable

}  // namespace aispflow
