#pragma once

// node_client: broker-node as a node of a Zeek cluster that keeps its own ZeroMQ forwarder
// (node mode, doc/zeek-cluster.md §3): our XPUB connects to the forwarder's XSUB
// (broker.zeromq.connect-xpub, Zeek's connect_xpub_endpoint) and our XSUB to its XPUB
// (broker.zeromq.connect-xsub, connect_xsub_endpoint), as a Zeek node's sockets do, and the
// bridge (bridge.hh, in node mode) joins them to the rest of the node.
//
// Who owns what: the endpoint owns the node_client (as a `server`, the interface the
// status page and the filter updates use); the node_client owns two uplinks (one per
// socket), the bridge and a hub of two forwarders and a gate, which the links share:
//   - `out`: our XPUB connection is its subscriber (it holds the subscriptions the
//     forwarder's XSUB sends us), the bridge its publisher (the node's messages go out
//     there, to the prefixes held);
//   - `in`: our XSUB connection is its publisher (events from the forwarder go to the
//     bridge's tap; the bridge's subscriptions, replayed on every new connection, go up).
// The connections are zmq_links (zmq_link.hh) on the client side of the handshake; nothing
// passes between the two (split horizon, bridge.hh), so no event from ZeroMQ returns there.
//
// Each uplink (uplink.hh) connects (resolving the host each time), and when the connection
// fails or closes it tries again after a backoff, like libzmq (ZMQ_RECONNECT_IVL): 100 ms,
// doubled after every failed attempt up to 2 s, back to 100 ms after a connection that
// lasted 2 s. One log line per outage (the close, or the first failed attempt), one when
// connected again for 2 s; more failures of the same outage (refused attempts, failed
// handshakes, a connection failing again) are counted, not logged. A bad forwarder (bad
// greeting, oversized frames, CURVE refusal, a missed heartbeat) is handled by the link as
// on the server side: close, counted in `failed`; then the uplink reconnects.
//
// Threads: each uplink runs on its own strand, its links on the same one (the socket's
// executor); start() and stop() from any thread but an I/O thread; the status from any.
// Free of CAF and Boost in this header.

#include "broker/error.hh"
#include "broker/internal/config/zeromq_options.hh"
#include "broker/internal/zeromq/server.hh"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace broker::internal::zeromq {

/// A forwarder socket to connect to.
struct connect_target {
  std::string host; ///< A name or an address (IPv6 without the brackets).
  uint16_t port = 0;
  std::string text; ///< As configured: "tcp://host:port".
};

/// Parses the value of broker.zeromq.connect-xpub / connect-xsub, "tcp://host:port" (IPv6:
/// "tcp://[::1]:port"), the form Zeek's connect_*_endpoint takes. Errors (invalid_config)
/// name `option`, the text and what is wrong.
expected<connect_target> parse_connect_endpoint(std::string_view text, std::string_view option);

/// The reconnect backoff: first delay, bound.
inline constexpr size_t reconnect_min_ms = 100;
inline constexpr size_t reconnect_max_ms = 2000;

/// Whether the settings ask for node mode (connect-xpub or connect-xsub set).
bool wants_node_mode(const zeromq_settings& cfg) noexcept;

class node_client {
public:
  /// Checks the settings and starts connecting. Fails (invalid_config, naming the
  /// options) when the forwarder's ports are set too (the two modes exclude each other),
  /// when one of the two endpoints is missing or malformed, or for CURVE settings that do
  /// not fit (node mode: broker.zeromq.curve-server-public-key is the forwarder's key,
  /// curve-client-secret-key ours; both or neither). With a core (`rt` not null) the
  /// bridge (bridge.hh) joins it to the node as handler and source `bridge_id`; `name`
  /// is ours in ZeroMQ::hello.
  static expected<std::shared_ptr<server>> start(io_runtime& io, const zeromq_settings& cfg,
                                                 std::shared_ptr<core_runtime> rt = nullptr,
                                                 uint64_t bridge_id = 0,
                                                 std::string name = "broker-node");
};

} // namespace broker::internal::zeromq
