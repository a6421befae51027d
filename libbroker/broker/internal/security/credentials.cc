#include "broker/internal/security/credentials.hh"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdio>

namespace broker::internal::security {

namespace {

/// The largest certificate name a rules file may hold.
constexpr size_t max_certificate_name = 1024;

/// ZeroMQ's Z85 alphabet (ZeroMQ RFC 32): the value of a character is its position.
constexpr std::string_view z85_alphabet =
  "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

std::string_view to_string(mechanism x) noexcept {
  switch (x) {
    case mechanism::none:
      return "none";
    case mechanism::certificate:
      return "certificate";
    case mechanism::token:
      return "token";
    case mechanism::curve_key:
      return "curve-key";
  }
  return "?";
}

std::optional<digest> sha256(std::string_view token) {
  digest result{};
  unsigned int size = 0;
  // EVP_Digest fails only when OpenSSL itself cannot work (out of memory).
  if (EVP_Digest(token.data(), token.size(), result.data(), &size, EVP_sha256(), nullptr) != 1
      || size != result.size())
    return std::nullopt;
  return result;
}

std::string hash_token(std::string_view token) {
  auto d = sha256(token);
  if (!d)
    return {};
  std::string result{token_hash_prefix};
  constexpr std::string_view digits = "0123456789abcdef";
  for (auto byte : *d) {
    result += digits[byte >> 4];
    result += digits[byte & 0x0F];
  }
  return result;
}

credential credential::from_token(std::string_view token) {
  credential result;
  result.kind = mechanism::token;
  if (auto d = sha256(token))
    result.token_digest = *d;
  else
    result.usable = false;
  return result;
}

std::optional<digest> parse_token_hash(std::string_view text) noexcept {
  if (text.substr(0, token_hash_prefix.size()) != token_hash_prefix)
    return std::nullopt;
  text.remove_prefix(token_hash_prefix.size());
  digest result{};
  if (text.size() != result.size() * 2)
    return std::nullopt;
  for (size_t i = 0; i < result.size(); ++i) {
    auto hi = hex_value(text[2 * i]);
    auto lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    result[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return result;
}

bool same_digest(const digest& x, const digest& y) noexcept {
  return CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

std::string check_certificate_name(std::string_view text) {
  std::string_view kind;
  for (auto k : certificate_name_kinds)
    if (text.substr(0, k.size()) == k)
      kind = k;
  if (kind.empty())
    return "expected cn:, dns:, uri: or email: followed by the name";
  auto name = text.substr(kind.size());
  if (name.empty())
    return "the name after " + std::string{kind} + " is empty";
  if (name.size() > max_certificate_name)
    return "longer than " + std::to_string(max_certificate_name) + " bytes";
  for (auto ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F)
      return "contains a control character";
  }
  return {};
}

bool is_curve_key(std::string_view text) noexcept {
  if (text.size() != curve_key_length)
    return false;
  for (size_t group = 0; group < text.size(); group += 5) {
    uint64_t value = 0;
    for (size_t i = group; i < group + 5; ++i) {
      auto pos = z85_alphabet.find(text[i]);
      if (pos == std::string_view::npos)
        return false;
      value = value * 85 + pos;
    }
    if (value > 0xFFFFFFFFu) // Five characters hold more than four bytes can.
      return false;
  }
  return true;
}

} // namespace broker::internal::security
