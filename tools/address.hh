#pragma once

// address: the one spelling of a network address on the tools' command lines
// (broker-node --peers, broker-store --peer, broker-throughput's <host>:<port>).
//
// Accepted, everywhere:
//   host:port           127.0.0.1:9999, node.example.org:9999
//   tcp://host:port     Broker's URI form, also inside <...> as Broker prints it
//   [v6addr]:port       [::1]:9999, tcp://[::1]:9999
// A tool may also allow a missing port (then its default) or a missing host (":9999" or
// "*:9999", the server's "all interfaces"). Errors quote the text and say what was wrong
// with it.
//
// Printed, everywhere (start-up lines, errors, --status): format_address(), "*:9999" for
// all interfaces, "[::1]:9999" for IPv6; the library's log lines use the same form.

#include <broker/error.hh>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace broker_tools {

/// One address to dial or bind.
struct peer_address {
  std::string host;
  uint16_t port = 0;
};

/// What a use of parse_address() allows beyond host:port.
struct address_rules {
  /// The port of an address without one; nullopt: the port is required.
  std::optional<uint16_t> default_port;
  /// Accept ":port" (empty host).
  bool allow_empty_host = false;
  /// Accept port 0 (a server's "any free port").
  bool allow_port_zero = false;
};

/// Parses an address (see the file comment). Errors (ec::invalid_config):
/// `expected host:port or tcp://host:port, got "<text>" (<reason>)`.
broker::expected<peer_address> parse_address(std::string_view text,
                                             const address_rules& rules = {});

/// The printed form of an address: "*:port" for an empty host (all interfaces),
/// "[host]:port" for an IPv6 address, "host:port" otherwise. parse_address() reads it back
/// (an empty host where the rules allow one).
std::string format_address(std::string_view host, uint16_t port);

/// Parses a decimal port 0-65535: digits only, no sign or suffix.
std::optional<uint16_t> parse_port_number(std::string_view text);

} // namespace broker_tools
