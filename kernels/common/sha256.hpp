#pragma once
// SHA-256 of a file, for the identity of things aispflow did not build (GEMM provider plugins): records name
// the plugin by the digest anyone can recompute with `sha256sum`, which the cache's XXH3 digests are not.
#include <filesystem>
#include <string>
#include <string_view>

namespace aispflow::kernels {

std::string sha256_hex(std::string_view bytes);
// Throws std::runtime_error naming the file if it cannot be read.
std::string sha256_file(const std::filesystem::path& file);

}  // namespace aispflow::kernels
