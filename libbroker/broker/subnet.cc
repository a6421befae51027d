#include "broker/subnet.hh"

#include <cstddef>

namespace broker {

namespace {

constexpr uint8_t max_raw_len = 128;
constexpr uint8_t max_v4_len = 32;
// IPv4 subnets store their prefix shifted by the 96 bits of the v4-mapped marker.
constexpr uint8_t v4_raw_offset = 96;
constexpr unsigned decimal_base = 10;

} // namespace

std::optional<subnet> subnet::make(const address& network, uint8_t prefix_len) {
  if (network.is_v4()) {
    if (prefix_len > max_v4_len)
      return std::nullopt;
    return from_raw(network, static_cast<uint8_t>(prefix_len + v4_raw_offset));
  }
  return from_raw(network, prefix_len);
}

std::optional<subnet> subnet::from_raw(const address& network, uint8_t raw_len) {
  if (raw_len > max_raw_len || (network.is_v4() && raw_len < v4_raw_offset))
    return std::nullopt;
  subnet result;
  result.network_ = network;
  result.network_.mask(raw_len);
  result.raw_len_ = raw_len;
  return result;
}

std::optional<subnet> subnet::parse(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos)
    return std::nullopt;
  auto addr = address::parse(text.substr(0, slash));
  auto digits = text.substr(slash + 1);
  if (!addr || digits.empty())
    return std::nullopt;
  unsigned len = 0;
  for (char c : digits) {
    if (c < '0' || c > '9')
      return std::nullopt;
    len = len * decimal_base + static_cast<unsigned>(c - '0');
    if (len > max_raw_len)
      return std::nullopt; // also stops overflow on long digit strings
  }
  return make(*addr, static_cast<uint8_t>(len));
}

uint8_t subnet::length() const noexcept {
  if (network_.is_v4() && raw_len_ >= v4_raw_offset)
    return static_cast<uint8_t>(raw_len_ - v4_raw_offset);
  return raw_len_;
}

bool subnet::contains(const address& addr) const noexcept {
  auto masked = addr;
  masked.mask(raw_len_);
  return masked == network_;
}

std::string to_string(const subnet& x) {
  auto result = to_string(x.network());
  result += '/';
  result += std::to_string(unsigned{x.length()});
  return result;
}

} // namespace broker
