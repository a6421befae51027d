#pragma once

// http_server: Broker's WebSocket JSON API v1 (spec/websocket-v1.md) and the Prometheus
// metrics endpoint, on Boost.Beast, sharing the endpoint's io_context.
//
// Threads: every session is a strand on the shared io_context; the core is reached through
// core_runtime::post() and the queues, exactly like peerings.
//
// Flow of one WebSocket client:
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

#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/overflow_policy.hh"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace broker::internal {

class core_runtime;
class peer_manager;

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
  bool tls = false;                 ///< wss:// with the peering TLS settings.
};

/// One listening server (see the file comment).
class http_server {
public:
  /// Binds `address`:`port` and starts accepting. Returns the server or an error.
  static expected<std::shared_ptr<http_server>>
  start(peer_manager& net, std::shared_ptr<core_runtime> rt, std::function<uint64_t()> next_id,
        const std::string& address, uint16_t port, http_options opts);

  virtual ~http_server() = default;

  /// The bound port.
  virtual uint16_t port() const noexcept = 0;

  /// Stops accepting and closes every session. Idempotent.
  virtual void stop() = 0;
};

} // namespace broker::internal
