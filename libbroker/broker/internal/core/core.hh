#pragma once

// core_state: the routing logic of the core actor, free of CAF so it can be driven
// step by step in unit tests. The CAF actor (core_runtime.cc) only forwards messages here.
//
// Ownership: the core owns the topic index, the handler table and the source table.
// Everything here runs on the core actor's thread; nothing is locked.
//
// Routing the input of a source (process()), until its inbox is empty:
//   1. Take the inbox's pending messages and events (one lock).
//   2. In arrival order: apply each event (a peer's new filter, the end of a connection)
//      where it stands between the messages. Per message: one index lookup (usually a cache
//      hit), then for each matching handler except the source's own: if a `block` handler
//      lacks room, flush what is staged and ask the handler for a wakeup; if it still lacks
//      room, park the source at this message. Otherwise offer() every handler (staging, no
//      locks).
//   3. Flush every handler that staged something (one lock per handler per batch, and a
//      connection is woken only if it was idle), apply the results to the counters, close
//      disconnected handlers and report them as errors.
//   4. Release the delivered items' credit to the inbox, unblocking publishers and readers.
// A parked source resumes when a handler reports room (on_room()). A detached source is
// removed after its last message: its handler, its status events, its announcement.

#include "broker/data.hh"
#include "broker/endpoint_id.hh"
#include "broker/internal/core/client_handler.hh"
#include "broker/internal/core/handler.hh"
#include "broker/internal/core/local_handler.hh"
#include "broker/internal/core/peer_handler.hh"
#include "broker/internal/core/source_inbox.hh"
#include "broker/internal/core/topic_index.hh"
#include "broker/metrics.hh"
#include "broker/status.hh"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace broker::internal {

/// Id of messages the core itself publishes (status and error events).
inline constexpr uint64_t core_source_id = 0;

/// Settings the core reads once.
struct core_options {
  endpoint_id id;
  size_t topic_cache_size = 1024;
  /// broker.disable-forwarding: never relay messages from one peer to another.
  bool disable_forwarding = false;
  /// broker.ttl: the TTL of messages this node originates.
  uint16_t ttl = 16;
};

/// Everything the core needs to attach a peering whose handshake completed.
struct peer_attachment {
  uint64_t id = 0;              ///< Handler and source id of this peering.
  endpoint_id remote;           ///< The peer's endpoint id.
  filter_type filter;           ///< The peer's filter.
  std::string address;          ///< For status events.
  uint16_t port = 0;            ///< For status events.
  std::shared_ptr<send_queue> queue;
  std::shared_ptr<source_inbox> inbox;
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
  std::shared_ptr<send_queue> queue;
  std::shared_ptr<source_inbox> inbox;
};

/// See the file comment.
class core_state {
public:
  explicit core_state(core_options opts);
  ~core_state();

  core_state(const core_state&) = delete;
  core_state& operator=(const core_state&) = delete;

  // -- handlers -----------------------------------------------------------------

  /// Adds `h` under `filter` (one index batch).
  void add_handler(std::unique_ptr<handler> h, filter_type filter);

  /// Closes and removes a handler; unknown ids are ignored.
  void remove_handler(uint64_t id);

  /// Adds or removes prefixes of an existing handler (one index batch each).
  void subscribe(uint64_t id, const filter_type& prefixes);
  void unsubscribe(uint64_t id, const filter_type& prefixes);

  /// The union of all handlers' prefixes, minimized (what peers would receive).
  filter_type filter() const;

  // -- sources ------------------------------------------------------------------

  void add_source(std::shared_ptr<source_inbox> inbox);

  /// Delivers what the source still has pending, then forgets it.
  void remove_source(uint64_t id);

  /// The inbox of `id` has pending messages.
  void on_wake(uint64_t id);

  /// Handler `id` has room again: resume the sources parked on it.
  void on_room(uint64_t id);

  // -- peers ----------------------------------------------------------------------

  /// Adds a handler and a source for a peering; emits endpoint_discovered and peer_added.
  void add_peer(peer_attachment att);

  /// Removes a peering's handler and source (pending input is still delivered); emits
  /// peer_removed or peer_lost, then endpoint_unreachable.
  void remove_peer(uint64_t id, peer_end why, std::string reason);

  /// Replaces the peer's filter (a routing_update arrived).
  void update_peer_filter(uint64_t id, filter_type filter);

  /// Adds a WebSocket client (handler and source); its subscriptions become part of the
  /// node's filter. Emits endpoint_discovered and peer_added for the client.
  void add_client(client_attachment att);

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

  /// Lets process() hand the core to others after `max_rounds` takes from one busy source;
  /// `callback(id)` must make the core call on_wake(id) again later. Without a callback
  /// (unit tests) a source is processed until its inbox is empty.
  void on_reschedule(std::function<void(uint64_t)> callback, size_t max_rounds = 16) {
    reschedule_ = std::move(callback);
    max_rounds_ = max_rounds;
  }

  // -- events and introspection --------------------------------------------------

  /// Publishes a message from the core itself (status/error events). Never parks: a
  /// full `block` sink drops it and counts the drop under drop_newest.
  void publish_local(std::string topic, data value);

  /// Queues an error event on topic::errors (routed by the next settle()).
  void emit_error(const error& err);

  /// Queues a status event on topic::statuses (routed by the next settle()).
  void emit_status(const status& st);

  /// Routes queued events, applies deferred removals and resumes parked sources until
  /// nothing is left to do. Every entry point calls it; tests call it after
  /// publish_local().
  void settle();

  endpoint_metrics metrics() const;

  /// Counts a connection of `kind` that was refused for exceeding a budget before it was
  /// attached (its subscriptions in the handshake or first message).
  void count_limit_disconnect(handler_kind kind) noexcept {
    ++counters_.kinds[static_cast<size_t>(kind)].limit_disconnects;
  }

  /// Closes every handler and source (consumers see the end, publishers unblock).
  void shutdown();

  const core_options& options() const noexcept { return opts_; }

private:
  /// Reads the tables for the status page and the metrics (core_status.cc).
  friend struct core_status_reader;

  struct source_state {
    std::shared_ptr<source_inbox> inbox;
    bool remote = false; // A peering: apply forwarding rules and loop suppression.
    bool client = false; // A WebSocket client: not local for disable-forwarding.
    std::vector<data_message> batch;
    std::vector<positioned_event> events;
    size_t pos = 0;       // Next message of `batch` to route.
    size_t event_pos = 0; // Next event to apply.
    size_t released = 0;  // Items (messages + events) whose credit went back.
    size_t checked = 0;   // Messages [0, checked) passed loop suppression.
    bool parked = false;
    bool removing = false; // remove_source(): deliver what is pending, then forget.
    std::optional<source_event> detached; // The connection ended (applied after its data).
  };

  /// Sliding window of sequence numbers seen from one origin.
  struct seen_window {
    uint64_t highest = 0;
    std::vector<uint64_t> bits; // Bit i of the window: sequence highest - i was seen.
  };

  /// True if a source must wait for room in `h` rather than overflow it: handlers with
  /// policy `block`, and peers for store commands (a burst of replication is no reason to
  /// cut a peering; a peer that stops reading then slows the stores down, not the rest).
  static bool must_wait(const handler& h, message_kind kind) noexcept {
    return h.policy() == overflow_policy::block
           || (kind == message_kind::command && h.kind() == handler_kind::peer);
  }

  /// What loop suppression makes of a message from a peer (see first_sighting()).
  enum class sighting : uint8_t {
    fresh,     ///< New: route it.
    duplicate, ///< Seen before (another path, or our own message back): not a loss.
    stale,     ///< Older than one of its origin already routed here: dropped for order.
  };

  void process(uint64_t id);
  bool apply_events(uint64_t id, source_state& src);
  void finish_detach(uint64_t id, source_event ev);
  void set_filter(handler& h, const filter_type& prefixes);
  sighting first_sighting(const route_info& route);
  void local_filter_add(const filter_type& xs);
  void local_filter_remove(const filter_type& xs);
  void announce();
  /// Per prefix that peers want (reserved ones excluded), how many peers want it; empty
  /// with disable_forwarding.
  std::map<topic, size_t> forwarded_prefixes() const;
  /// What we announce to the peer `to` (nullptr: a new peer) given forwarded_prefixes().
  filter_type announcement_from(const std::map<topic, size_t>& forwarded,
                                const handler* to) const;
  void resume_parked();
  bool route(const data_message& msg, const source_state* src, uint64_t source_id,
             bool may_park);
  bool route_run(const data_message* xs, size_t k, const source_state& src,
                 uint64_t source_id);
  void flush_all();
  handler* find(uint64_t id);

  core_options opts_;
  topic_index index_;
  std::unordered_map<uint64_t, std::unique_ptr<handler>> handlers_;
  std::unordered_map<uint64_t, source_state> sources_;
  std::vector<handler*> dirty_;
  std::deque<data_message> events_;  // Core-originated messages waiting for routing.
  std::vector<uint64_t> removals_;   // Handlers disconnected during a flush.
  std::vector<uint64_t> parked_;     // Sources waiting for room, in parking order.
  std::vector<route_info> run_routes_; // Scratch for route_run().
  std::map<std::string, size_t> local_prefixes_; // Local subscriptions, reference-counted.
  std::unordered_map<uint64_t, peer_handler*> peers_;
  std::unordered_map<uint64_t, client_handler*> clients_;
  std::map<endpoint_id, seen_window> seen_;
  uint64_t next_sequence_ = 0;
  bool announce_needed_ = false;
  std::function<void(const filter_type&)> on_filter_change_;
  std::function<void(uint64_t)> reschedule_;
  size_t max_rounds_ = 16;
  bool resume_needed_ = false;
  bool settling_ = false;
  endpoint_metrics counters_;
};

} // namespace broker::internal
