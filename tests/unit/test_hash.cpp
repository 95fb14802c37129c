// Digests: known values, streaming equals one-shot, field framing is unambiguous, JSON is canonical.
#include "pipeline/hash.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace aispflow {
namespace {

namespace fs = std::filesystem;

TEST(Hash, DigestIs32LowercaseHexChars) {
  const std::string d = digest_bytes("hello");
  ASSERT_EQ(d.size(), 32u);
  for (char c : d) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << d;
}

TEST(Hash, MatchesXxh3_128ReferenceValue) {
  // XXH3-128 of the empty input, as published by xxHash (high 64 bits first).
  EXPECT_EQ(digest_bytes(""), "99aa06d3014798d86001c324468d497f");
}

TEST(Hash, DifferentBytesGiveDifferentDigests) {
  EXPECT_NE(digest_bytes("a"), digest_bytes("b"));
  EXPECT_NE(digest_bytes("a"), digest_bytes("a "));
  EXPECT_EQ(digest_bytes("same"), digest_bytes("same"));
}

TEST(Hash, StreamingEqualsOneShot) {
  Hasher h;
  h.add("hel").add("lo wor").add("ld");
  EXPECT_EQ(h.hex(), digest_bytes("hello world"));
}

TEST(Hash, FieldsAreLengthPrefixedSoBoundariesMatter) {
  Hasher a, b;
  a.add_field("ab", "c");
  b.add_field("a", "bc");
  EXPECT_NE(a.hex(), b.hex());
}

TEST(Hash, JsonDigestIgnoresKeyOrder) {
  const auto a = nlohmann::json::parse(R"({"m": 1, "n": [1, 2], "o": {"x": true, "y": "s"}})");
  const auto b = nlohmann::json::parse(R"({"o": {"y": "s", "x": true}, "n": [1, 2], "m": 1})");
  EXPECT_EQ(digest_json(a), digest_json(b));
}

TEST(Hash, JsonDigestSeesValueAndOrderOfLists) {
  const auto a = nlohmann::json::parse(R"({"n": [1, 2]})");
  EXPECT_NE(digest_json(a), digest_json(nlohmann::json::parse(R"({"n": [2, 1]})")));
  EXPECT_NE(digest_json(a), digest_json(nlohmann::json::parse(R"({"n": [1, 3]})")));
  EXPECT_NE(digest_json(a), digest_json(nlohmann::json::parse(R"({"n": ["1", "2"]})")));
}

TEST(Hash, JsonWithInvalidUtf8DoesNotThrow) {
  const nlohmann::json j = std::string("bad \xff byte");
  EXPECT_NO_THROW(digest_json(j));
}

TEST(Hash, FileDigestEqualsDigestOfItsBytes) {
  const fs::path file = fs::temp_directory_path() / ("aispflow_test_hash_" + std::to_string(::getpid()));
  std::string content(200000, '\0');  // larger than one read buffer, with embedded NULs
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  {
    std::ofstream out(file, std::ios::binary);
    out << content;
  }
  EXPECT_EQ(digest_file(file), digest_bytes(content));
  fs::remove(file);
}

TEST(Hash, UnreadableFileThrows) {
  EXPECT_THROW(digest_file("/nonexistent/aispflow/file"), std::runtime_error);
}

}  // namespace
}  // namespace aispflow
