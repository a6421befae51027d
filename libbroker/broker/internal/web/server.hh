#pragma once

// http_server: Broker's WebSocket JSON API v1 (spec/websocket-v1.md) and the Prometheus
// metrics endpoint, on Boost.Beast, sharing the endpoint's io_context.
//
// Threads: every session is a strand on the shared io_context; the core is reached through
// core_runtime::post() and the queues, exactly like peerings.
//
// Transport: when the endpoint's peer_manager has a TLS context (any broker.ssl.* option),
// the WebSocket server speaks wss:// with exactly that context, so clients need a
// certificate signed by the configured CA (mutual TLS, spec §1); otherwise plain ws://. The
// metrics server is always plain HTTP. Both transports hide behind one stream type
// (http_transport.hh). Between it and Beast's WebSocket stream, every session runs a
// frame_masker (web_socket_unmask.hh) so that unmasked client frames are accepted, as
// Broker does.
//
// Flow of one WebSocket client:
//   0. With TLS: the TLS handshake (within the handshake timeout, like the request).
//   1. HTTP upgrade on /v1/messages/json (any other path: 400 with the spec's text).
//   2. The first text message must be a JSON array of topic strings; otherwise an error
//      frame, then close 1008.
//   3. The session posts core_state::add_client(); only after the core ran it does the
//      session send the ack, so anything published after the client saw the ack reaches it.
//   4. Data messages from the client are decoded on the strand and pushed into its source
//      inbox; reading stops while the inbox is full (TCP back-pressure, never a disconnect).
//      Bad input gets an error frame and the connection stays open.
//   5. The core fills the client's send queue; the session writes each message's cached
//      JSON frame (encoded once per message, shared by all clients). On overflow under
//      `disconnect` it sends a backpressure_overflow error frame, then closes with 1000.
//   6. On close the session posts core_state::remove_client().
//   7. stop() sends every live client close 1000 after the frames the session already took
//      from its queue, waits for the close handshakes (at most shutdown_close_timeout, and
//      not at all on an I/O thread), then closes whatever is left. From then on the core
//      and the queues post nothing to the sessions' strands, so the endpoint may destroy
//      the io_context next.

#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/overflow_policy.hh"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace broker::internal {

class core_runtime;
class peer_manager;

/// How long http_server::stop() waits for its WebSocket clients' close handshakes.
inline constexpr std::chrono::milliseconds shutdown_close_timeout{1000};

/// Settings of one listening HTTP server.
struct http_options {
  bool web_socket = false;          ///< Serve /v1/messages/json.
  bool metrics = false;             ///< Serve GET /metrics.
  endpoint_id node;                 ///< Our endpoint id, for the ack.
  std::string version;              ///< Our version, for the ack.
  size_t buffer_size = 512;         ///< broker.web-socket-buffer-size.
  overflow_policy policy = overflow_policy::disconnect;
  size_t inbox_capacity = 1024;     ///< Messages in flight from one client.
  size_t max_message_size = 16 * 1024 * 1024;
  size_t max_clients = 10000;
  size_t max_depth = 128;
  size_t handshake_timeout_ms = 10000;
};

/// One listening server (see the file comment).
class http_server {
public:
  /// Binds `address`:`port` and starts accepting. A WebSocket server uses `net`'s TLS
  /// context if it has one. Returns the server, or an error (also for a broken TLS setup).
  static expected<std::shared_ptr<http_server>>
  start(peer_manager& net, std::shared_ptr<core_runtime> rt, std::function<uint64_t()> next_id,
        const std::string& address, uint16_t port, http_options opts);

  virtual ~http_server() = default;

  /// The bound port.
  virtual uint16_t port() const noexcept = 0;

  /// Stops accepting and closes every session: WebSocket clients get close 1000, flushed
  /// within at most shutdown_close_timeout. Blocks (except on an I/O thread). Idempotent.
  virtual void stop() = 0;
};

} // namespace broker::internal
