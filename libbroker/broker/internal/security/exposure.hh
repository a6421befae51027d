#pragma once

// exposure: the start-up line of every listener, which says who can reach it and whether
// anyone is authenticated (doc/security.md, "Defaults").
//
//   peering on 0.0.0.0:9999 (all IPv4 interfaces), TLS: anonymous (encrypts, authenticates no one)
//   web-socket on 127.0.0.1:9997 (loopback only), TLS: off, clients: not authenticated
//   web-socket on 0.0.0.0:9997 (all IPv4 interfaces), TLS: off, clients: bearer token, else anonymous; access rules enforced
//   metrics on 127.0.0.1:9998 (loopback only), TLS: off, not authenticated (/metrics, /v1/status, the web view)
//
// Pure functions: the endpoint computes the line and writes it to its log, at warning level
// when the listener is reachable from other hosts and authenticates no one.

#include <cstdint>
#include <string>
#include <string_view>

namespace broker::internal::security {

/// Who can reach a listener, from its bind address.
enum class reach : uint8_t {
  loopback,       ///< 127.0.0.0/8, ::1, localhost: this host only.
  all_interfaces, ///< "", 0.0.0.0 (IPv4) or :: (IPv6, and IPv4 where dual-stack).
  one_interface,  ///< Any other address: the hosts that can route to it.
};

/// Classifies a bind address as the listeners read it ("" binds 0.0.0.0).
reach reach_of(std::string_view address) noexcept;

/// How a listener's connections are secured.
enum class transport : uint8_t {
  plain,         ///< broker.disable-ssl: plain TCP.
  anonymous_tls, ///< TLS with anonymous ECDH: encrypted, nobody authenticated.
  mutual_tls,    ///< TLS with certificates on both sides, checked against the CA.
};

/// The kinds of listener.
enum class service : uint8_t { peering, web_socket, metrics };

/// The start-up line of a listener (see the file comment); `address` as configured.
/// `rules`: access rules with identities are in force (doc/security.md): peering and
/// WebSocket lines say so.
std::string exposure_line(service what, std::string_view address, uint16_t port,
                          transport how, bool rules = false);

/// True if the listener deserves a warning: reachable from other hosts, and nobody who
/// connects is authenticated or restricted by access rules (`rules`; never for metrics).
bool is_exposed(std::string_view address, transport how, bool rules = false) noexcept;

} // namespace broker::internal::security
