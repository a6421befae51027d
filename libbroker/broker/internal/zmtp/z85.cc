#include "broker/internal/zmtp/z85.hh"

#include <array>

namespace broker::internal::zmtp {

namespace {

constexpr char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                            ".-:+=^!/*?&<>()[]{}@%$#";

static_assert(sizeof(alphabet) == 86);

// Character -> digit value, or -1.
constexpr std::array<int8_t, 256> make_digits() {
  std::array<int8_t, 256> result{};
  for (auto& x : result)
    x = -1;
  for (int i = 0; i < 85; ++i)
    result[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
  return result;
}

constexpr auto digits = make_digits();

} // namespace

std::optional<std::string> z85_encode(std::string_view bytes) {
  if (bytes.size() % 4 != 0)
    return std::nullopt;
  std::string out;
  out.reserve(bytes.size() / 4 * 5);
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t value = 0;
    for (size_t k = 0; k < 4; ++k)
      value = (value << 8) | static_cast<uint8_t>(bytes[i + k]);
    char group[5];
    for (int k = 4; k >= 0; --k) {
      group[k] = alphabet[value % 85];
      value /= 85;
    }
    out.append(group, 5);
  }
  return out;
}

std::optional<std::string> z85_decode(std::string_view text) {
  if (text.size() % 5 != 0)
    return std::nullopt;
  std::string out;
  out.reserve(text.size() / 5 * 4);
  for (size_t i = 0; i < text.size(); i += 5) {
    uint64_t value = 0;
    for (size_t k = 0; k < 5; ++k) {
      auto digit = digits[static_cast<uint8_t>(text[i + k])];
      if (digit < 0)
        return std::nullopt;
      value = value * 85 + static_cast<uint64_t>(digit);
    }
    // "%%%%%" is 85^5 - 1 > 2^32 - 1: such a group encodes no 4 bytes.
    if (value > 0xffffffffu)
      return std::nullopt;
    for (int k = 3; k >= 0; --k)
      out += static_cast<char>((value >> (8 * k)) & 0xff);
  }
  return out;
}

} // namespace broker::internal::zmtp
