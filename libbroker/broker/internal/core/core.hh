#pragma once

// core_state: the core actor's state, free of CAF so it can be driven step by step in unit
// tests. The CAF actor (core_runtime.cc) runs one task at a time on it.
//
// Ownership: the core owns the topic index, the handler table, the peers' and clients'
// bookkeeping and the announcements; it is their only writer. It does not route data:
// the thread that has a message routes it (router.hh), on the snapshot of the index the
// core publishes. Everything here runs on the core actor's thread; nothing is locked.
//
// Update flow, per task (a subscription, a peering that came or went, a routing update):
//   1. The task changes the index and the tables (add_handler, subscribe, add_peer, ...)
//      and queues status or error events.
//   2. commit(), run after every task: publishes a new snapshot if the index changed, then
//      hands the handlers removed by the task to the router's garbage list (they live on
//      until no routing thread can see them), routes the queued events (as the core's own
//      source: they never wait), and sends peers the routing updates that changed.

#include "broker/data.hh"
#include "broker/endpoint_id.hh"
#include "broker/internal/core/announcer.hh"
#include "broker/internal/core/client_handler.hh"
#include "broker/internal/core/handler.hh"
#include "broker/internal/core/local_handler.hh"
#include "broker/internal/core/net_input.hh"
#include "broker/internal/core/peer_handler.hh"
#include "broker/internal/core/router.hh"
#include "broker/internal/core/source_stats.hh"
#include "broker/internal/core/topic_index.hh"
#include "broker/metrics.hh"
#include "broker/status.hh"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace broker::internal {

/// Id of messages the core itself publishes (status and error events).
inline constexpr uint64_t core_source_id = 0;

/// Everything the core needs to attach a peering whose handshake completed.
struct peer_attachment {
  uint64_t id = 0;              ///< Handler and source id of this peering.
  endpoint_id remote;           ///< The peer's endpoint id.
  filter_type filter;           ///< The peer's filter.
  std::string address;          ///< For status events.
  uint16_t port = 0;            ///< For status events.
  std::shared_ptr<send_queue> queue;
  std::shared_ptr<source_stats> stats; ///< What the connection routed.
  /// What we sent in the handshake (our announcement so far).
  filter_type handshake_filter;
};

/// Everything the core needs to attach a WebSocket client that sent its subscriptions.
struct client_attachment {
  uint64_t id = 0;          ///< Handler and source id of this client.
  endpoint_id client;       ///< A random id for status events.
  filter_type filter;       ///< The client's subscriptions.
  std::string address;      ///< For status events.
  uint16_t port = 0;        ///< For status events.
  std::shared_ptr<message_queue> queue;
  std::shared_ptr<source_stats> stats; ///< What the session routed.
};

/// See the file comment.
class core_state {
public:
  core_state(const endpoint_id& id, std::shared_ptr<router> r);
  ~core_state();

  core_state(const core_state&) = delete;
  core_state& operator=(const core_state&) = delete;

  /// The router that routes on this core's snapshots.
  router& routing() noexcept { return *router_; }

  // -- handlers -----------------------------------------------------------------

  /// Adds `h` under `filter`.
  void add_handler(std::shared_ptr<handler> h, filter_type filter);

  /// Closes and removes a handler; unknown ids are ignored.
  void remove_handler(uint64_t id);

  /// Adds or removes prefixes of an existing handler.
  void subscribe(uint64_t id, const filter_type& prefixes);
  void unsubscribe(uint64_t id, const filter_type& prefixes);

  /// The union of all local handlers' prefixes, minimized (what peers would receive).
  filter_type filter() const;

  /// The union of every handler's prefixes but handler `id`'s (peers' included, reserved
  /// ones not), minimized: what a transport that is itself handler `id` subscribes to
  /// elsewhere on behalf of all the others (the ZeroMQ bridge, zeromq/bridge.hh), without
  /// its own wishes echoed back. O(prefixes).
  filter_type filter_without(uint64_t id) const;

  // -- sources (for the status page and metrics) ---------------------------------

  /// Registers what a source routes. A source with a handler of the same id (a hub, a
  /// store, a peering, a client) is shown with it; others count as publishers.
  void add_source(uint64_t id, std::shared_ptr<source_stats> stats);
  void remove_source(uint64_t id);

  // -- peers and clients ---------------------------------------------------------

  /// Adds a handler for a peering; emits endpoint_discovered and peer_added.
  void add_peer(peer_attachment att);

  /// Removes a peering (its connection routed all its input before); emits peer_removed
  /// or peer_lost, then endpoint_unreachable.
  void remove_peer(uint64_t id, peer_end why, std::string reason);

  /// Replaces the peer's filter (a routing_update arrived).
  void update_peer_filter(uint64_t id, filter_type filter);

  /// Adds a WebSocket client; its subscriptions become part of the node's filter. Emits
  /// endpoint_discovered and peer_added for the client.
  void add_client(client_attachment att);

  /// Replaces a client's subscriptions (access control granted others after a reload).
  void update_client_filter(uint64_t id, filter_type filter);

  /// Removes a client; emits peer_removed or peer_lost, then endpoint_unreachable.
  void remove_client(uint64_t id, peer_end why, std::string reason);

  /// The ids and filters of the attached peers.
  std::vector<std::pair<endpoint_id, filter_type>> peer_filters() const;

  /// The filter we announce to peer `id` right now. For an id that is no peer (e.g. 0):
  /// what a new peer would get in the handshake.
  filter_type announcement_for(uint64_t id) const;

  /// Called with announcement_for(0) whenever the announcements may have changed, so the
  /// transport can hand a current filter to new handshakes.
  void on_filter_change(std::function<void(const filter_type&)> callback) {
    on_filter_change_ = std::move(callback);
  }

  // -- events and introspection --------------------------------------------------

  /// Queues a message from the core itself (status/error events), routed by commit().
  /// Never waits: a full `block` sink drops it and counts the drop under drop_newest.
  void publish_local(std::string topic, data value);

  /// Queues an error event on topic::errors.
  void emit_error(const error& err);

  /// Queues a status event on topic::statuses.
  void emit_status(const status& st);

  /// A handler overflowed under `disconnect` (the router said so): report and remove it.
  void on_overflow(uint64_t id);

  /// Publishes what changed and routes queued events (see the file comment). Every task
  /// runs it; tests call it after their changes.
  void commit();

  /// Frees retired snapshots and handlers no reader can see; true if some are left.
  bool collect_garbage();

  endpoint_metrics metrics() const;

  /// Counts a connection of `kind` that was refused for exceeding a budget.
  void count_limit_disconnect(handler_kind kind) noexcept {
    ++limit_disconnects_[static_cast<size_t>(kind)];
  }

  /// Closes every handler (consumers see the end, waiting publishers return) and stops
  /// routing.
  void shutdown();

  const endpoint_id& id() const noexcept { return id_; }

private:
  /// Reads the tables for the status page and the metrics (core_status.cc).
  friend struct core_status_reader;

  /// What the core keeps about each handler.
  struct entry {
    std::shared_ptr<handler> h;
    std::set<topic> filter; ///< Its subscriptions, sorted.
    endpoint_id remote;     ///< Peers: the remote endpoint; clients: the id we gave them.
    network_info network;   ///< Peers and clients: where they are.
    bool peer = false;
    bool client = false;
  };

  entry* find(uint64_t id);
  void set_filter(entry& e, const filter_type& prefixes);
  void end_connection(uint64_t id, const status& last);

  endpoint_id id_;
  std::shared_ptr<router> router_;
  topic_index index_;
  announcer announcer_;
  std::unordered_map<uint64_t, entry> handlers_;
  std::unordered_map<uint64_t, std::shared_ptr<source_stats>> sources_;
  std::vector<std::shared_ptr<handler>> removed_; // Retired after the next publish.
  std::vector<data_message> events_;              // Core events waiting for commit().
  bool announce_needed_ = false;
  bool shut_down_ = false;
  std::function<void(const filter_type&)> on_filter_change_;
  std::array<uint64_t, num_handler_kinds> limit_disconnects_{};
};

} // namespace broker::internal
