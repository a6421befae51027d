#pragma once

// server: broker-node as the central forwarder of a Zeek ZeroMQ cluster
// (doc/protocol/zeromq.md §10): listens on the XSUB port (the nodes' XPUBs connect there)
// and the XPUB port (the nodes' XSUBs connect there), runs one zmq_link per connection on
// the endpoint's I/O runtime and forwards between them (forwarder.hh).
//
// Owner: the endpoint (endpoint_context), which stops it before the I/O runtime. Threads:
// start() and stop() from any thread but an I/O thread; the rest from any thread.
// Free of CAF and Boost in this header.

#include "broker/error.hh"
#include "broker/internal/config/zeromq_options.hh"
#include "broker/topic.hh"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal {
class io_runtime;
class core_runtime;
} // namespace broker::internal

namespace broker::internal::security {
class runtime;
} // namespace broker::internal::security

namespace broker::internal::zeromq {

class forwarder;

/// One connection, for the status page and tests.
struct link_status {
  std::string name;   ///< "xsub connection from 127.0.0.1:40000"
  std::string side;   ///< "xsub" or "xpub"
  std::string peer;   ///< address:port
  uint64_t messages_in = 0;
  uint64_t messages_out = 0;
  uint64_t dropped = 0;
  uint64_t queued = 0;
  uint64_t capacity = 0;  ///< broker.zeromq.buffer-size
  std::string policy;     ///< broker.zeromq.overflow-policy
  std::string zeek_id;    ///< The Zeek node's id, once seen (zmq_link::zeek_node()).
  std::string zeek_name;  ///< Its name, from its ZeroMQ::hello (either side of the node).
  // Node mode (node_client.hh): one entry per socket, connected or not.
  std::string state = "connected"; ///< "connecting", "connected" or "reconnecting"
  std::string endpoint;            ///< The forwarder's socket: "tcp://host:port"
  uint64_t connects = 0;           ///< Handshakes completed
  uint64_t connect_failures = 0;   ///< Attempts that did not connect (refused, unresolved)
  uint64_t failed = 0;             ///< Connections closed for bad input or a failed handshake
  std::string last_error;          ///< Why the last attempt or connection failed
};

/// Totals of the server (Zeek's forwarder counters and ours).
struct server_counters {
  uint64_t frontend_bytes_received = 0, frontend_messages_received = 0;
  uint64_t frontend_bytes_sent = 0, frontend_messages_sent = 0;
  uint64_t backend_bytes_received = 0, backend_messages_received = 0;
  uint64_t backend_bytes_sent = 0, backend_messages_sent = 0;
  uint64_t connections = 0;   ///< Open now.
  uint64_t accepted = 0;      ///< Ever.
  uint64_t failed = 0;        ///< Closed for bad input, a failed handshake, a timeout.
  uint64_t dropped = 0;       ///< Events dropped by overflow policies, all connections.
  // The bridge (bridge.hh); zero without one.
  uint64_t bridged_to_core = 0;   ///< ZeroMQ events routed into the node
  uint64_t bridged_from_core = 0; ///< node messages sent to ZeroMQ subscribers
  uint64_t not_bridged = 0;       ///< ZeroMQ events the node wanted but could not decode
  uint64_t bridge_dropped = 0;    ///< ZeroMQ events for the node dropped (its queue full)
  uint64_t own_events = 0;        ///< ZeroMQ events with our own node id, dropped
  // Node mode (node_client.hh); zero otherwise.
  uint64_t reconnects = 0;        ///< Handshakes after the first, both sockets
  uint64_t connect_failures = 0;  ///< Attempts that did not connect, both sockets
  uint64_t to_node = 0;           ///< Events to our nodeid topic (the Zeek nodes' hellos)
  uint64_t hellos_sent = 0;       ///< Our ZeroMQ::hello events
};

class bridge;

class server {
public:
  /// Binds the configured ports (either may be 0: off) and starts accepting. Fails for an
  /// address that does not parse, a port in use or an invalid CURVE key, naming it.
  /// With a core (`rt` not null) the server bridges ZeroMQ and the node (bridge.hh) as
  /// handler and source `bridge_id`. With `sec` (access control with a rules file,
  /// doc/security.md "ZeroMQ") every connection is admitted as an identity and limited by
  /// its rules (zmq_link.hh).
  static expected<std::shared_ptr<server>> start(io_runtime& io, const zeromq_settings& cfg,
                                                 std::shared_ptr<core_runtime> rt = nullptr,
                                                 uint64_t bridge_id = 0,
                                                 std::shared_ptr<security::runtime> sec
                                                 = nullptr);

  /// The node's filter changed (the core's announcement): what the bridge subscribes to.
  void update_filter(const filter_type& f);

  virtual ~server();

  /// This node's ZeroMQ node id (broker.zeromq.node-id or generated).
  virtual const std::string& node_id() const noexcept = 0;

  /// "forwarder" (this class) or "node" (node_client.hh).
  virtual std::string_view mode() const noexcept { return "forwarder"; }

  /// The bound ports (0 if off).
  virtual uint16_t xsub_port() const noexcept = 0;
  virtual uint16_t xpub_port() const noexcept = 0;

  virtual std::vector<link_status> links() const = 0;
  virtual server_counters counters() const = 0;

  /// Stops accepting and closes every connection. Idempotent.
  virtual void stop() = 0;

protected:
  /// The bridge between ZeroMQ and the node (bridge.hh), in either mode; null without a
  /// core.
  std::shared_ptr<bridge> bridge_;
};

} // namespace broker::internal::zeromq
