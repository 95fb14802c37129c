// Content digests with xxHash's XXH3-128: fast enough that hashing every file of a cache entry on
// look-up is cheap, and 128 bits wide so accidental collisions between cache keys are not a concern.
// These are not cryptographic digests; the cache guards against accidents, not adversaries.
#include "pipeline/hash.hpp"

#include <xxhash.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace aispflow {

namespace {

XXH3_state_t* state_of(void* p) { return static_cast<XXH3_state_t*>(p); }

// 32 lowercase hex chars, high 64 bits first: the canonical big-endian form xxHash documents.
std::string to_hex(XXH128_hash_t h) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, h);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(sizeof(canonical.digest) * 2);
  for (unsigned char byte : canonical.digest) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0xf]);
  }
  return out;
}

}  // namespace

Hasher::Hasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_128bits_reset(state_of(state_));
}

Hasher::~Hasher() { XXH3_freeState(state_of(state_)); }

Hasher& Hasher::add(std::string_view bytes) {
  XXH3_128bits_update(state_of(state_), bytes.data(), bytes.size());
  return *this;
}

// Each part is preceded by its length, so ("ab","c") and ("a","bc") can never hash alike.
Hasher& Hasher::add_field(std::string_view name, std::string_view value) {
  for (std::string_view part : {name, value}) {
    const std::string length = std::to_string(part.size()) + ":";
    add(length);
    add(part);
  }
  return *this;
}

std::string Hasher::hex() { return to_hex(XXH3_128bits_digest(state_of(state_))); }

std::string digest_bytes(std::string_view bytes) { return to_hex(XXH3_128bits(bytes.data(), bytes.size())); }

// Invalid UTF-8 (e.g. captured program output) is replaced, not thrown on: digests must never fail.
std::string digest_json(const nlohmann::json& value) {
  return digest_bytes(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string digest_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  Hasher hasher;
  std::array<char, 1 << 16> buffer;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() > 0) hasher.add(std::string_view(buffer.data(), static_cast<std::size_t>(in.gcount())));
  }
  if (in.bad()) throw std::runtime_error("error while reading " + file.string());
  return hasher.hex();
}

}  // namespace aispflow
