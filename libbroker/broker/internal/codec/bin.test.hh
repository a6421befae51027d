#pragma once

// Helpers shared by the bin codec tests: hex conversion, value shorthands and the checks
// that every test vector runs through. Test-only; nothing in the library includes this.

#include "broker/internal/codec/bin.hh"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace broker::internal::bin::test {

inline constexpr double infinity = std::numeric_limits<double>::infinity();
inline constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

// -- hex helpers ------------------------------------------------------------------------------

// Spaces only group bytes for the reader, as in doc/protocol/binary.md.
inline std::string from_hex(std::string_view text) {
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    FAIL("bad hex digit in test vector: " << c);
    return 0;
  };
  std::string out;
  int hi = -1;
  for (char c : text) {
    if (c == ' ')
      continue;
    if (hi < 0) {
      hi = nibble(c);
    } else {
      out += static_cast<char>((hi << 4) | nibble(c));
      hi = -1;
    }
  }
  REQUIRE(hi < 0);
  return out;
}

inline std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    auto b = static_cast<uint8_t>(c);
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

inline std::string normalized_hex(std::string_view text) {
  return to_hex(from_hex(text));
}

// -- value helpers ----------------------------------------------------------------------------

inline data addr(std::string_view text) {
  auto result = address::parse(text);
  REQUIRE(result);
  return data{*result};
}

inline data net(std::string_view text) {
  auto result = subnet::parse(text);
  REQUIRE(result);
  return data{*result};
}

inline data ts(int64_t ns) {
  return data{timestamp{timespan{ns}}};
}

inline data span(int64_t ns) {
  return data{timespan{ns}};
}

inline data c(uint64_t x) {
  return data{count{x}};
}

inline data i(int64_t x) {
  return data{integer{x}};
}

inline data e(std::string name) {
  return data{enum_value{std::move(name)}};
}

inline data vec(std::initializer_list<data> xs) {
  return data{vector(xs)};
}

inline data st(std::initializer_list<data> xs) {
  return data{set(xs)};
}

inline data tbl(std::initializer_list<std::pair<const data, data>> xs) {
  return data{table(xs)};
}

// -- checks -----------------------------------------------------------------------------------

inline void check_decodes_to(std::string_view hex, const data& expected) {
  INFO("hex: " << hex);
  auto decoded = bin::decode(from_hex(hex));
  if (!decoded)
    FAIL("decode failed: " << to_string(decoded.error_value()));
  CHECK(decoded->get_type() == expected.get_type());
  CHECK(*decoded == expected);
}

inline void check_encodes_to(const data& value, std::string_view hex) {
  INFO("value: " << value);
  auto encoded = bin::encode(value);
  if (!encoded)
    FAIL("encode failed: " << to_string(encoded.error_value()));
  CHECK(to_hex(*encoded) == normalized_hex(hex));
  CHECK(bin::encoded_size(value) == encoded->size());
}

// A positive test vector: both directions.
inline void check_vector(const data& value, std::string_view hex) {
  check_encodes_to(value, hex);
  check_decodes_to(hex, value);
}

// Returns the error message; the payload must be rejected as deserialization_failed.
inline std::string check_rejected(const std::string& bytes) {
  INFO("hex: " << to_hex(bytes));
  auto decoded = bin::decode(bytes);
  if (decoded) {
    FAIL_CHECK("decoded to " << *decoded);
    return {};
  }
  CHECK(decoded.error_value() == ec::deserialization_failed);
  return decoded.error_value().message();
}

inline std::string check_rejected_hex(std::string_view hex) {
  return check_rejected(from_hex(hex));
}

} // namespace broker::internal::bin::test
