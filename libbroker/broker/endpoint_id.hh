#pragma once

#include "broker/export.hh"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace broker {

/// A 16-byte endpoint identifier (a UUID, RFC 4122 byte order; doc/protocol/peering.md §8).
/// The all-zero id is nil: "no receiver" / "local".
class BROKER_API endpoint_id {
public:
  using bytes_type = std::array<uint8_t, 16>;

  endpoint_id() noexcept : bytes_{} {}
  explicit endpoint_id(const bytes_type& bytes) noexcept : bytes_(bytes) {}

  /// A fresh random version-4 UUID.
  static endpoint_id random();

  /// Parses the canonical 8-4-4-4-12 form (either case, surrounding whitespace allowed).
  /// Rejects a non-nil id whose version nibble is 0 or above 5.
  static std::optional<endpoint_id> parse(std::string_view text);

  bool is_nil() const noexcept;
  const bytes_type& bytes() const noexcept { return bytes_; }

  friend bool operator==(const endpoint_id& x, const endpoint_id& y) noexcept {
    return x.bytes_ == y.bytes_;
  }
  friend bool operator!=(const endpoint_id& x, const endpoint_id& y) noexcept {
    return !(x == y);
  }
  /// Bytewise (memcmp) order: the smaller id is the originator of a peering.
  friend bool operator<(const endpoint_id& x, const endpoint_id& y) noexcept {
    return x.bytes_ < y.bytes_;
  }

private:
  bytes_type bytes_;
};

/// Lowercase 8-4-4-4-12 text, e.g. "925c9110-5b87-57d9-9d80-b65568e87a44".
BROKER_API std::string to_string(const endpoint_id& x);

} // namespace broker
