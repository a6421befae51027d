#pragma once

#include "broker/export.hh"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace broker {

/// A transport-layer port: number plus protocol (doc/protocol/binary.md §4.6).
class BROKER_API port {
public:
  /// Wire codes of the protocols; any other code is invalid.
  enum class protocol : uint8_t { unknown = 0, tcp = 1, udp = 2, icmp = 3 };

  constexpr port() noexcept = default;
  constexpr port(uint16_t number, protocol proto) noexcept : number_(number), proto_(proto) {}

  /// Parses "<0-65535>/<tcp|udp|icmp|?>" or a bare number (then tcp).
  static std::optional<port> parse(std::string_view text);

  constexpr uint16_t number() const noexcept { return number_; }
  constexpr protocol type() const noexcept { return proto_; }

  friend constexpr bool operator==(port x, port y) noexcept {
    return x.number_ == y.number_ && x.proto_ == y.proto_;
  }
  friend constexpr bool operator!=(port x, port y) noexcept { return !(x == y); }
  /// Number first, then protocol code.
  friend constexpr bool operator<(port x, port y) noexcept {
    return x.number_ != y.number_ ? x.number_ < y.number_ : x.proto_ < y.proto_;
  }

private:
  uint16_t number_ = 0;
  protocol proto_ = protocol::unknown;
};

/// "8080/tcp", "0/?".
BROKER_API std::string to_string(port x);

} // namespace broker
