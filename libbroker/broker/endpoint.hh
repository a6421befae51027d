#pragma once

// endpoint: the entry point of libbroker. It owns the core (an actor on CAF's scheduler)
// and hands out publishers, subscribers and hubs that talk to it.
//
//   broker::endpoint ep;
//   auto sub = ep.make_subscriber({"/foo"});
//   ep.publish("/foo/bar", broker::data{42});
//   auto msg = sub.get();            // topic "/foo/bar", value 42
//
// Threads: every member function is thread-safe. Objects created by the endpoint may
// outlive it; after shutdown() they report the end of their streams and publishing fails.

#include "broker/configuration.hh"
#include "broker/data.hh"
#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/export.hh"
#include "broker/fwd.hh"
#include "broker/hub.hh"
#include "broker/message.hh"
#include "broker/metrics.hh"
#include "broker/overflow_policy.hh"
#include "broker/publisher.hh"
#include "broker/status.hh"
#include "broker/store.hh"
#include "broker/subscriber.hh"
#include "broker/topic.hh"

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace broker {

namespace internal {
class local_source;
} // namespace internal

/// Per-call settings of a subscriber or hub queue; unset fields take the configuration's
/// broker.subscriber-buffer-size / broker.subscriber-overflow-policy.
struct BROKER_API queue_options {
  std::optional<size_t> capacity;
  std::optional<overflow_policy> policy;
};

/// One live peering as peers() reports it.
struct BROKER_API peer_info {
  endpoint_info peer; ///< The peer's id and address.
  bool outbound = false; ///< True if we dialed.
};

/// See the file comment.
class BROKER_API endpoint {
public:
  /// Starts an endpoint with the default configuration.
  endpoint();

  /// Starts an endpoint with `cfg` (already validated by the configuration itself).
  explicit endpoint(configuration cfg);

  /// Shuts down (see shutdown()).
  ~endpoint();

  endpoint(const endpoint&) = delete;
  endpoint& operator=(const endpoint&) = delete;

  /// This endpoint's id (a random UUID).
  const endpoint_id& node_id() const noexcept;

  const configuration& config() const noexcept;

  // -- publishing ---------------------------------------------------------------------

  /// Publishes `value` on `t`, routed on the calling thread. Blocks while a `block`
  /// receiver is full.
  /// Errors: ec::invalid_topic for reserved "<$>" topics, ec::shutting_down after shutdown.
  error publish(topic t, data value);

  /// Publishes a prebuilt message.
  error publish(data_message msg);

  /// Publishes a batch in order (one lookup per run of messages with the same topic).
  error publish(std::vector<data_message> batch);

  /// A publisher for topic `t` (`capacity` 0: the broker.publisher-buffer-size option;
  /// see publisher::capacity()). Errors as for publish().
  expected<publisher> make_publisher(topic t, size_t capacity = 0);

  // -- subscribing --------------------------------------------------------------------

  /// A subscriber to `filter`, active when this returns.
  subscriber make_subscriber(filter_type filter, queue_options opts = {});

  /// Shorthand: capacity only.
  subscriber make_subscriber(filter_type filter, size_t capacity) {
    return make_subscriber(std::move(filter), queue_options{capacity, std::nullopt});
  }

  /// A subscriber to error events, and to status events if `receive_statuses`.
  status_subscriber make_status_subscriber(bool receive_statuses = false,
                                           queue_options opts = {});

  /// A hub subscribed to `filter` that can also publish.
  hub make_hub(filter_type filter, queue_options opts = {});

  // -- peering ------------------------------------------------------------------------

  /// Accepts peers on `address`:`port` ("" = all interfaces; port 0 = an ephemeral port).
  /// Returns the bound port. Errors: invalid address, port in use.
  expected<uint16_t> listen(const std::string& address = "", uint16_t port = 0);

  /// Peers with `host`:`port` and blocks until the peering is up. With `retry` > 0 a failed
  /// attempt or a lost peering is re-dialed every `retry`, and this call keeps waiting until
  /// a connection succeeds (or the endpoint shuts down); with `retry` 0 it returns false
  /// after the first failure. Failures are also reported as error events.
  bool peer(const std::string& host, uint16_t port,
            timespan retry = std::chrono::seconds{10});

  /// Like peer(), but returns at once.
  void peer_nosync(const std::string& host, uint16_t port,
                   timespan retry = std::chrono::seconds{10});

  /// Ends the peering with `host`:`port` gracefully (BYE, then close) and stops re-dialing
  /// it. Returns false if there is no such peering.
  bool unpeer(const std::string& host, uint16_t port);

  /// The live peerings.
  std::vector<peer_info> peers() const;

  /// The union of the filters our peers announced (what we forward to them).
  filter_type peer_subscriptions() const;

  // -- WebSocket JSON API and metrics ---------------------------------------------------

  /// Serves Broker's WebSocket JSON API v1 on ws://`address`:`port`/v1/messages/json
  /// (port 0: ephemeral; address "" or "0.0.0.0": all IPv4 interfaces). Returns the bound
  /// port. The endpoint starts this by itself when broker.web-socket.port (or
  /// BROKER_WEB_SOCKET_PORT) is set, on broker.web-socket.address (default 127.0.0.1).
  expected<uint16_t> web_socket_listen(const std::string& address = "127.0.0.1",
                                       uint16_t port = 0);

  /// Serves the metrics in Prometheus text format on http://`address`:`port`/metrics (and
  /// /v1/status and the web view). Started by itself when broker.metrics.port (or
  /// BROKER_METRICS_PORT) is set, on broker.metrics.address (default 127.0.0.1).
  expected<uint16_t> metrics_listen(const std::string& address = "127.0.0.1",
                                    uint16_t port = 0);

  /// A problem starting what the configuration asked for (none if all went well): a
  /// server, or the rules of broker.security.rules-file (then no server starts, and every
  /// check of the rules refuses until reload_security() succeeds).
  const error& startup_error() const noexcept;

  // -- data stores (doc/stores.md) ------------------------------------------------------

  /// Attaches the master of store `name` with a backend. Waits up to
  /// broker.store.master-probe-timeout for an existing master in the network to object.
  /// Errors: master_exists (here or on a reachable node), invalid_config (bad backend
  /// option, named), cannot_open_file (SQLite file unusable), invalid_topic (bad name),
  /// shutting_down.
  expected<store> attach_master(const std::string& name, backend type = backend::memory,
                                const backend_options& opts = {});

  /// Attaches a clone of store `name`. Returns at once; the clone finds its master through
  /// the peerings (store::await_ready waits for its first snapshot).
  expected<store> attach_clone(const std::string& name);

  // -- introspection and lifetime ----------------------------------------------------

  /// The union of all local subscriptions, minimized (internal "<$>" topics excluded).
  filter_type filter() const;

  /// Counters of handlers, drops and disconnects.
  endpoint_metrics metrics() const;

  /// Stops the core. Subscribers see the end of their streams; blocked publishers return
  /// ec::shutting_down. Never waits on application threads. Idempotent.
  void shutdown();

  bool is_shut_down() const noexcept;

  // -- access control -------------------------------------------------------------------

  /// Reads broker.security.rules-file again and replaces the rules as a whole
  /// (doc/security.md, "Reload"): connections stay up and get the new rules at their next
  /// check. Without a rules file nothing happens. On error (the file's, naming
  /// file:line:column) the previous rules stay in force; the error is also logged.
  error reload_security();

  // -- logging --------------------------------------------------------------------------

  /// Severity of a line a program writes to the endpoint's log.
  enum class log_severity : uint8_t { error, warning, info, debug };

  /// Writes one line to the endpoint's log, with its level, format and file
  /// (broker.log-level, broker.log-format, broker.log-file), so that a program's own
  /// events (broker-node's "stop" handling) sit beside the library's. After shutdown() the
  /// line goes to stderr. Thread-safe.
  void log(log_severity level, std::string_view component, std::string_view message) const;

private:
  std::shared_ptr<internal::endpoint_context> ctx_;
  /// The source behind publish(): calls from one thread stay in order.
  std::shared_ptr<internal::local_source> own_;
  error startup_error_;
};

} // namespace broker
