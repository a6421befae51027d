#pragma once

// core_status: a snapshot of the core's handlers and sources for the status API, the web
// view and the per-peer metrics (ops/status.hh, ops/prometheus.hh).
//
// Threads: collect_core_status() runs on the core actor's thread (posted by the HTTP
// server when someone asks) and only reads; the result is a plain value that the I/O
// thread turns into JSON or Prometheus text. Nothing here runs per message: the counters
// it reads are kept per run by handler::push() and per batch by each source
// (source_stats.hh).

#include "broker/endpoint_id.hh"
#include "broker/metrics.hh"
#include "broker/overflow_policy.hh"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace broker::internal {

class core_state;

/// One handler (output sink), and the source of the same id if it has one.
struct handler_status {
  uint64_t id = 0;
  handler_kind kind = handler_kind::subscriber;
  overflow_policy policy = overflow_policy::block;
  size_t capacity = 0;
  size_t buffered = 0;    ///< Messages in its queue now.
  uint64_t delivered = 0; ///< Messages put into its queue since it was added.
  uint64_t dropped = 0;   ///< Messages its overflow policy dropped.
  bool has_source = false;
  uint64_t received = 0;  ///< Messages its source routed (peers, clients, hubs, stores).
  size_t inbox = 0;       ///< Messages of its source waiting for room in a sink.
  /// Peers: the remote endpoint; clients: the id the node gave them.
  endpoint_id remote;
  std::string address; ///< Peers and clients.
  uint16_t port = 0;   ///< Peers and clients.
  bool filters = false;              ///< True if the two lists below were collected.
  std::vector<std::string> filter;   ///< Its subscriptions (a peer's: what it announced).
  std::vector<std::string> announced; ///< Peers: what we announce to it.
};

/// What collect_core_status() returns.
struct core_status {
  endpoint_metrics metrics;
  /// Every handler, in ascending id order.
  std::vector<handler_status> handlers;
  /// Sources without a handler (publishers, the endpoint's own publish calls).
  size_t publishers = 0;
  /// Messages those routed.
  uint64_t published = 0;
  /// Messages decoded or published but not yet routed (their sources wait for room),
  /// split as Broker's broker_buffered_messages: data and command messages (store sources
  /// count as commands), and routing updates (which never wait: they go to the core as
  /// tasks, so this is always 0).
  uint64_t waiting_data = 0;
  uint64_t waiting_commands = 0;
  uint64_t waiting_routing_updates = 0;
  /// The filter a new peer would get (what this node announces).
  std::vector<std::string> announced;
};

/// Takes the snapshot. Filters are copied for every handler except WebSocket clients, of
/// which only the `client_filters` fullest get them (a node may have thousands).
core_status collect_core_status(const core_state& st, size_t client_filters);

} // namespace broker::internal
