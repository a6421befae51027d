#pragma once

#include "broker/export.hh"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace broker {

/// An IPv4 or IPv6 address, stored as 16 bytes in network order. IPv4 addresses are
/// IPv4-mapped (`::ffff:a.b.c.d`); there is no separate family flag (doc/protocol/binary.md §4.4).
class BROKER_API address {
public:
  using bytes_type = std::array<uint8_t, 16>;

  /// The all-zero address `::`.
  address() noexcept : bytes_{} {}
  explicit address(const bytes_type& bytes) noexcept : bytes_(bytes) {}

  /// An IPv4 address from its four octets, e.g. `address::v4(127, 0, 0, 1)`.
  static address v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) noexcept;

  /// Parses dotted-quad IPv4 or any RFC 4291 IPv6 text form (including a trailing dotted
  /// quad). Returns nullopt for anything else (no zone ids, no surrounding whitespace).
  static std::optional<address> parse(std::string_view text);

  /// True if the first 12 bytes are `00..00 ff ff`.
  bool is_v4() const noexcept;

  const bytes_type& bytes() const noexcept { return bytes_; }
  bytes_type& bytes() noexcept { return bytes_; }

  /// Zeroes every bit after the first `prefix_len` bits (0-128, counted over all 128).
  void mask(uint8_t prefix_len) noexcept;

  friend bool operator==(const address& x, const address& y) noexcept {
    return x.bytes_ == y.bytes_;
  }
  friend bool operator!=(const address& x, const address& y) noexcept { return !(x == y); }
  /// memcmp order of the 16 bytes (doc/protocol/binary.md §7).
  friend bool operator<(const address& x, const address& y) noexcept {
    return x.bytes_ < y.bytes_;
  }

private:
  bytes_type bytes_;
};

/// Dotted quad for v4-mapped addresses, RFC 5952 text otherwise (doc/protocol/websocket.md §6.4).
BROKER_API std::string to_string(const address& x);

} // namespace broker
