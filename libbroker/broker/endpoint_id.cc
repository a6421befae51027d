#include "broker/endpoint_id.hh"

#include "broker/internal/codec/hex.hh"

#include <cstddef>
#include <random>

namespace broker {

namespace {

using internal::hex_digits;
using internal::hex_value;

// RFC 4122 layout details (doc/protocol/peering.md §8).
constexpr size_t version_byte = 6;
constexpr size_t variant_byte = 8;
constexpr uint8_t version_4 = 0x40;
constexpr uint8_t max_version = 5;
constexpr uint8_t low_nibble = 0x0f;
constexpr uint8_t variant_rfc4122 = 0x80; // bits 10xx
constexpr uint8_t variant_mask = 0x3f;
constexpr size_t text_len = 36;       // 32 hex digits and 4 hyphens
constexpr size_t hyphens[] = {8, 13, 18, 23};
constexpr std::string_view whitespace = " \t\n\r\f\v";
constexpr unsigned nibble_bits = 4;


bool is_hyphen_position(size_t i) noexcept {
  for (auto h : hyphens)
    if (h == i)
      return true;
  return false;
}

} // namespace

endpoint_id endpoint_id::random() {
  // One generator per thread, seeded once from the OS: ids must differ across processes and
  // threads, and random_device can be slow per call.
  thread_local std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64{seq};
  }();
  bytes_type bytes;
  for (size_t i = 0; i < bytes.size(); i += sizeof(uint64_t)) {
    auto word = gen();
    for (size_t j = 0; j < sizeof(uint64_t); ++j)
      bytes[i + j] = static_cast<uint8_t>(word >> (j * 8));
  }
  bytes[version_byte] = static_cast<uint8_t>((bytes[version_byte] & low_nibble) | version_4);
  bytes[variant_byte] = static_cast<uint8_t>((bytes[variant_byte] & variant_mask)
                                             | variant_rfc4122);
  return endpoint_id{bytes};
}

std::optional<endpoint_id> endpoint_id::parse(std::string_view text) {
  auto first = text.find_first_not_of(whitespace);
  if (first == std::string_view::npos)
    return std::nullopt;
  text = text.substr(first, text.find_last_not_of(whitespace) - first + 1);
  if (text.size() != text_len)
    return std::nullopt;
  bytes_type bytes{};
  size_t nibble = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_hyphen_position(i)) {
      if (text[i] != '-')
        return std::nullopt;
      continue;
    }
    int value = hex_value(text[i]);
    if (value < 0)
      return std::nullopt;
    auto& byte = bytes[nibble / 2];
    byte = static_cast<uint8_t>((byte << nibble_bits) | value);
    ++nibble;
  }
  endpoint_id result{bytes};
  auto version = bytes[version_byte] >> nibble_bits;
  if (!result.is_nil() && (version == 0 || version > max_version))
    return std::nullopt;
  return result;
}

bool endpoint_id::is_nil() const noexcept {
  for (auto b : bytes_)
    if (b != 0)
      return false;
  return true;
}

std::string to_string(const endpoint_id& x) {
  std::string out;
  out.reserve(text_len);
  const auto& bytes = x.bytes();
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (is_hyphen_position(out.size()))
      out += '-';
    out += hex_digits[bytes[i] >> nibble_bits];
    out += hex_digits[bytes[i] & low_nibble];
  }
  return out;
}

} // namespace broker
