#pragma once

// http_server: Broker's WebSocket JSON API v1 (doc/protocol/websocket.md) and the HTTP endpoint
// for metrics, on the endpoint's I/O runtime.
//
// Threads: every connection is a strand of the runtime's io_context; the core is reached
// through core_runtime::post() and the queues, exactly like peerings.
//
// Pieces (this folder's README has the map):
//   - server.cc: the listener; tracks upgraded WebSocket sessions; stop().
//   - http_session.cc: TLS handshake (wss://), one HTTP request read with Beast's parser;
//     answers /metrics, /v1/status and the web view (snapshot.hh, prometheus.hh,
//     status.hh, page.hh), refuses what is not an upgrade, validates the upgrade and
//     hands the stream to a ws_session.
//   - ws_session.cc: one WebSocket client, with our own framing (ws_frame.hh) on the
//     stream: input in batches, output in gathered writes.
//
// Transport: the runtime's TLS mode decides (io_runtime.hh): with TLS, wss:// with the same
// context as peering; otherwise ws://. The metrics endpoint is always plain HTTP.

#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/overflow_policy.hh"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace broker::internal {

class core_runtime;
class io_runtime;
class node_probe;

namespace security {
class runtime;
} // namespace security

/// How long http_server::stop() waits for its WebSocket clients' close handshakes.
inline constexpr std::chrono::milliseconds shutdown_close_timeout{1000};

/// Settings of one listening server.
struct http_options {
  bool web_socket = false;          ///< Serve /v1/messages/json.
  bool metrics = false;             ///< Serve GET /metrics.
  bool status_page = false;         ///< Metrics servers: also GET /v1/status and the web view.
  std::shared_ptr<const node_probe> probe; ///< Metrics servers: the endpoint's side.
  std::string endpoint_name;        ///< broker.metrics.endpoint-name.
  size_t handler_series_limit = 100; ///< broker.metrics.handler-series-limit.
  endpoint_id node;                 ///< Our endpoint id, for the ack.
  std::string version;              ///< Our version, for the ack.
  size_t buffer_size = 512;         ///< broker.web-socket-buffer-size.
  overflow_policy policy = overflow_policy::disconnect;
  size_t max_message_size = 16 * 1024 * 1024;
  size_t max_clients = 10000;
  size_t max_depth = 128;
  size_t handshake_timeout_ms = 10000;
  size_t max_subscriptions = 100000;      ///< broker.web-socket.max-subscriptions.
  size_t max_control_bytes = 1024 * 1024; ///< broker.max-pending-control-bytes.
  size_t ping_interval_ms = 5000;   ///< broker.web-socket.ping-interval; 0: no pings.
  /// WebSocket servers: access control (security/runtime.hh); null: none.
  std::shared_ptr<security::runtime> access;
};

/// Why the WebSocket server turned a client away (broker_web_socket_rejected_clients_total).
enum class client_reject : uint8_t {
  handshake,         ///< Not a valid upgrade request (HTTP 400 or 426).
  tls,               ///< TLS handshake failed, or plain HTTP on a wss:// port.
  max_clients,       ///< broker.web-socket.max-clients reached (HTTP 503).
  application_name,  ///< Invalid X-Application-Name (error frame, close 1008).
  subscriptions,     ///< First message not a JSON array of strings (close 1008).
  max_subscriptions, ///< More than broker.web-socket.max-subscriptions (close 1008).
  authentication,    ///< A credential that failed, or a throttled address (HTTP 400, 401, 403, 429).
};

inline constexpr size_t num_client_rejects = 7;

/// The label value of `x`, e.g. "application_name".
std::string_view to_string(client_reject x) noexcept;

/// What a WebSocket server counts beyond the core (ops/ turns it into metrics and status).
struct web_socket_counters {
  uint64_t rejected_inputs = 0; ///< Client messages answered with an error frame.
  std::array<uint64_t, num_client_rejects> rejected_clients{};
  uint64_t ping_timeouts = 0; ///< Clients closed for not answering a ping.
  /// Attached clients: handler id and X-Application-Name (empty if none was sent).
  std::vector<std::pair<uint64_t, std::string>> apps;
};

/// One listening server (see the file comment).
class http_server {
public:
  /// Binds `address`:`port` and starts accepting. A WebSocket server uses the runtime's TLS
  /// context if it has one. Returns the server, or an error (also for a broken TLS setup).
  static expected<std::shared_ptr<http_server>>
  start(io_runtime& io, std::shared_ptr<core_runtime> rt, std::function<uint64_t()> next_id,
        const std::string& address, uint16_t port, http_options opts);

  virtual ~http_server() = default;

  /// The bound port.
  virtual uint16_t port() const noexcept = 0;

  /// The WebSocket server's counters and its clients' application names (any thread).
  virtual web_socket_counters counters() const = 0;

  /// Stops accepting and closes every session: WebSocket clients get close 1000, flushed
  /// within at most shutdown_close_timeout. Blocks (except on an I/O thread). Idempotent.
  virtual void stop() = 0;
};

} // namespace broker::internal
