#pragma once

// peer_uri: the `tcp://host:port` spelling of a peer on the tools' command lines
// (broker-node --peers, broker-store --peer).

#include <broker/error.hh>

#include <cstdint>
#include <string>
#include <string_view>

namespace broker_tools {

/// One peer to dial.
struct peer_address {
  std::string host;
  uint16_t port = 0;
};

/// Parses `tcp://host:port`, `tcp://[v6addr]:port` or Broker's `<tcp://host:port>`. Errors
/// (ec::invalid_config): `expected tcp://host:port, got "<text>"`.
broker::expected<peer_address> parse_peer_uri(std::string_view text);

} // namespace broker_tools
