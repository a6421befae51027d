#pragma once

#include "broker/address.hh"
#include "broker/export.hh"

namespace broker {

/// A network: an address with its host bits masked, plus a prefix length. The length is
/// stored raw as on the wire: IPv4 subnets store `prefix + 96` (doc/protocol/binary.md §4.5).
class BROKER_API subnet {
public:
  subnet() noexcept = default;

  /// Builds a subnet from a network and a user-facing prefix length (0-32 for IPv4,
  /// 0-128 for IPv6); masks the host bits. Returns nullopt for an out-of-range length.
  static std::optional<subnet> make(const address& network, uint8_t prefix_len);

  /// Builds a subnet from the raw 17 wire bytes' values; masks host bits. Returns nullopt
  /// if `raw_len > 128` or the network is v4-mapped with `raw_len < 96`.
  static std::optional<subnet> from_raw(const address& network, uint8_t raw_len);

  /// Parses `<address>/<decimal length>` with a plain in-range length.
  static std::optional<subnet> parse(std::string_view text);

  const address& network() const noexcept { return network_; }
  /// The prefix as users see it: raw_len - 96 for IPv4, raw_len for IPv6.
  uint8_t length() const noexcept;
  /// The prefix as stored on the wire.
  uint8_t raw_length() const noexcept { return raw_len_; }

  /// True if `addr` lies inside this network.
  bool contains(const address& addr) const noexcept;

  friend bool operator==(const subnet& x, const subnet& y) noexcept {
    return x.raw_len_ == y.raw_len_ && x.network_ == y.network_;
  }
  friend bool operator!=(const subnet& x, const subnet& y) noexcept { return !(x == y); }
  /// Network bytes first, then raw length (doc/protocol/binary.md §7).
  friend bool operator<(const subnet& x, const subnet& y) noexcept {
    if (x.network_ != y.network_)
      return x.network_ < y.network_;
    return x.raw_len_ < y.raw_len_;
  }

private:
  address network_;
  uint8_t raw_len_ = 0;
};

/// `<address>/<prefix>`, e.g. "192.168.9.0/24".
BROKER_API std::string to_string(const subnet& x);

} // namespace broker
