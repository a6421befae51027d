#pragma once

// node_snapshot: everything /metrics, /v1/status and the web view show, taken at one moment
// from the places that know it: the core (handlers, queues, counters), the network side
// (peerings, dials and why they fail, control frames, WebSocket clients' application
// names and rejections, the access-control audit, the log's recent events) and the data
// stores.
//
// Threads and flow of collect_snapshot(), started on an HTTP session's strand:
//   1. The probe answers the network side at once (it holds a mutex briefly).
//   2. A task posted to the core takes core_status (core_status.hh).
//   3. From the core thread, the probe asks every store actor for its stats.
//   4. When the last of these answered (or its task was dropped because the store or the
//      core went away), `done` runs with the snapshot, on whichever thread finished last.
//      The caller bounds the wait with finish_now() (a store in a long backlog answers
//      late), which hands over what arrived so far instead.
// Nothing of this touches the message path.

#include "broker/endpoint_id.hh"
#include "broker/internal/ops/core_status.hh"
#include "broker/internal/security/audit.hh"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace broker::internal {

class core_runtime;

/// One live peering as the network side knows it.
struct peer_link {
  endpoint_id id;
  std::string address;
  uint16_t port = 0;
  bool outbound = false;
  uint64_t handler = 0; ///< Its handler id in the core (joins with handler_status).
  std::string tls;      ///< "plain", "anonymous" or "verified".
  uint64_t routing_updates = 0;
  uint64_t pings = 0;
  uint64_t pongs = 0;
  uint64_t writes_through = 0; ///< Writes a routing thread made itself (no wake-up).
};

/// An outgoing peering without a live connection.
struct pending_dial {
  std::string host;
  uint16_t port = 0;
  bool connecting = false; ///< Dialing or in the handshake; otherwise waiting to re-dial.
  endpoint_id remote;      ///< Nil unless it was peered before.
  std::string last_error;  ///< Why the last attempt failed; empty if none did.
};

/// What the WebSocket servers count beyond the core (summed over servers).
struct client_report {
  uint64_t rejected_inputs = 0; ///< Messages answered with an error frame.
  /// Clients turned away, by reason (label value, count), every reason listed.
  std::vector<std::pair<std::string, uint64_t>> rejected_clients;
  uint64_t ping_timeouts = 0;
  /// X-Application-Name by the client's handler id (clients that sent one).
  std::unordered_map<uint64_t, std::string> apps;
};

/// One recent lifecycle event of the node's log (peer lost, client rejected, errors).
struct event_entry {
  std::string time; ///< The last time, if repeated.
  std::string level;
  std::string component;
  std::string message;
  uint64_t repeats = 1; ///< Times in a row.
};

/// One data store's counters (Broker's broker_store_* families).
struct store_report {
  std::string name;
  bool master = false;
  uint64_t entries = 0;
  uint64_t input_channels = 0;
  uint64_t output_channels = 0;
  uint64_t out_of_order_updates = 0;
  uint64_t unacknowledged_updates = 0;
  uint64_t processed_updates = 0;
  uint64_t rejected_writes = 0; ///< Master: writes it rejected (ours, not Broker's).
};

/// One ZeroMQ connection (internal/zeromq/).
struct zeromq_link_report {
  std::string side; ///< "xsub" (a node's XPUB: it publishes) or "xpub" (it subscribes)
  std::string peer; ///< address:port
  uint64_t messages_in = 0;
  uint64_t messages_out = 0;
  uint64_t dropped = 0; ///< By the overflow policy.
  uint64_t queued = 0;
  uint64_t capacity = 0;
  std::string policy;
  std::string zeek_id;   ///< The Zeek node's id, once seen.
  std::string zeek_name; ///< Its name (from its ZeroMQ::hello), once seen.
  // Node mode (zeromq/node_client.hh): the forwarder's socket and how the link fares.
  std::string state = "connected"; ///< connecting, connected, reconnecting
  std::string endpoint;            ///< tcp://host:port (node mode), else empty
  uint64_t connects = 0, connect_failures = 0, failed = 0;
  std::string last_error;
};

/// The ZeroMQ forwarder and bridge (all zero unless broker.zeromq.*-port is set), or the
/// node-mode connections and bridge (broker.zeromq.connect-xpub / connect-xsub).
struct zeromq_report {
  bool enabled = false;
  std::string mode; ///< "forwarder" or "node"
  std::string node_id;
  uint16_t xsub_port = 0;
  uint16_t xpub_port = 0;
  // Zeek's forwarder counters: the frontend is the XSUB side, the backend the XPUB side.
  uint64_t frontend_bytes_received = 0, frontend_messages_received = 0;
  uint64_t frontend_bytes_sent = 0, frontend_messages_sent = 0;
  uint64_t backend_bytes_received = 0, backend_messages_received = 0;
  uint64_t backend_bytes_sent = 0, backend_messages_sent = 0;
  uint64_t accepted = 0, failed = 0, dropped = 0;
  uint64_t bridged_to_core = 0, bridged_from_core = 0, not_bridged = 0, bridge_dropped = 0;
  uint64_t own_events = 0; ///< ZeroMQ events with our node id (our own, back), dropped
  // Node mode.
  uint64_t reconnects = 0, connect_failures = 0, to_node = 0, hellos_sent = 0;
  std::vector<zeromq_link_report> links;
};

/// One row of the access-control audit, copied for the views.
using access_row = security::audit_row;

/// Access control (doc/security.md, "Audit").
struct access_report {
  std::string rules_file; ///< broker.security.rules-file; empty if none.
  bool enforcing = false; ///< The rules in force define identities.
  uint64_t identities = 0;
  uint64_t rules = 0; ///< Configured rules in force.
  std::vector<access_row> rows;
};

/// What the network side reports.
struct network_report {
  std::vector<peer_link> peers;
  std::vector<pending_dial> dials;
  /// Control frames received from peers since start (ended connections included).
  uint64_t routing_updates = 0;
  uint64_t pings = 0;
  uint64_t pongs = 0;
  /// How WebSocket clients connect: "plain" (ws://) or TLS (wss://).
  std::string client_tls = "plain";
  client_report clients;
  zeromq_report zeromq;
  access_report access;
  /// The node's recent events, the oldest first.
  std::vector<event_entry> events;
};

/// Facts about the node that do not change while it runs.
struct node_identity {
  endpoint_id id;
  std::string name;    ///< broker.metrics.endpoint-name (broker-node: -N); may be empty.
  std::string version; ///< The library version.
  std::chrono::system_clock::time_point started;
  std::chrono::steady_clock::time_point started_steady;
};

/// See the file comment.
struct node_snapshot {
  node_identity node;
  std::chrono::system_clock::time_point taken;
  std::chrono::steady_clock::time_point taken_steady;
  core_status core;
  network_report network;
  std::vector<store_report> stores;
  bool core_answered = false;
  /// False if finish_now() cut the wait for the stores short.
  bool stores_complete = true;
};

/// What the HTTP server asks the endpoint about, beyond the core. The endpoint implements
/// it (node_probe.cc) without keeping itself alive through it.
class node_probe {
public:
  virtual ~node_probe();

  virtual node_identity identity() const = 0;

  /// Answers at once; empty after shutdown.
  virtual network_report network() const = 0;

  /// Asks every store for its report; each answer goes to `sink` (store threads), and
  /// `sink` is released when the last store answered or dropped the request.
  virtual void stores(std::shared_ptr<std::function<void(store_report)>> sink) const = 0;
};

/// A collection under way (see collect_snapshot()).
class snapshot_request {
public:
  virtual ~snapshot_request();

  /// Hands over what has arrived so far, unless `done` ran already; `done` never runs twice.
  virtual void finish_now() = 0;
};

/// Collects a snapshot (see the file comment). `client_filters`: how many WebSocket
/// clients (the fullest) have their subscriptions copied. The result lets the caller cut
/// the wait short; it is expired once `done` ran.
std::weak_ptr<snapshot_request> collect_snapshot(core_runtime& rt,
                                                 std::shared_ptr<const node_probe> probe,
                                                 size_t client_filters,
                                                 std::function<void(node_snapshot)> done);

} // namespace broker::internal
