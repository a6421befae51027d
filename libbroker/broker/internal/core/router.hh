#pragma once

// router: the forwarding rule, run to completion by the thread that has the messages
// (doc/architecture.md, "One message, socket to socket").
//
// Who calls it: the I/O thread that decoded a peer's or WebSocket client's input, the
// application thread that publishes, a store's actor, and the core for its own status and
// error events. Each routes its own batch itself: one lookup per run of messages with the
// same topic, then one push per matching handler per run. Nothing is handed to another
// thread on the way; a sink's consumer is woken only when its queue goes from empty to
// non-empty.
//
// Ownership: the core is the only writer. It publishes each new version of the topic index
// as an immutable index_snapshot (read-copy-update, core/rcu.hh); routing threads read the
// current one without a lock. Handlers removed by the core stay alive until no routing
// thread can still see them (retire()).
//
// Rules, per run of messages (same topic, same kind) from one source:
//   0. A source with a publish_gate (a peering, a WebSocket client) asks it once; a
//      refused run is dropped (the gate counts it per identity and rule) and not looked up.
//   1. One lookup on the current snapshot (per-thread result cache).
//   2. Sinks that must not lose messages (policy `block`; peers for store commands) need
//      room for the run. If one has room for part of it, the part goes; if one has none,
//      the source parks: route() returns `parked` and the waker runs once when there is
//      room. A local publisher then waits; a connection stops reading; a store's actor
//      retries later. The core's own events never wait: a full `block` sink drops them,
//      counted under drop_newest.
//   3. Loop suppression (loop_filter.hh) for messages from peers, and the route for
//      peers: our own messages start a new route (origin = us, next sequence number, TTL
//      broker.ttl); relayed ones keep their origin with one hop more and one TTL less.
//      A message whose TTL is used up is still delivered locally, just not relayed.
//   4. Push to every matching handler except the source's own; peers only if forwarding
//      is allowed (never `<$>` topics, never back to the message's origin, never with
//      broker.disable-forwarding for messages of peers and WebSocket clients).
//
// Order: messages from one source reach one sink in publication order (a source routes its
// batches one at a time). Per origin across sources: relayed messages are checked and
// pushed under one relay lock, and our own messages get their sequence numbers and reach
// the peers under one origin lock, so a sequence number never overtakes a smaller one on
// any link. Both locks are uncontended with one I/O thread.

#include "broker/endpoint_id.hh"
#include "broker/internal/core/handler.hh"
#include "broker/internal/core/loop_filter.hh"
#include "broker/internal/core/publish_gate.hh"
#include "broker/internal/core/rcu.hh"
#include "broker/internal/core/topic_index.hh"
#include "broker/message.hh"
#include "broker/metrics.hh"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

namespace broker::internal {

/// What kind of source a batch comes from: decides waiting, forwarding and loop
/// suppression.
enum class source_kind : uint8_t {
  local,  ///< A publisher, a hub or the endpoint's own publish calls.
  store,  ///< A data store's actor.
  client, ///< A WebSocket client: not local for broker.disable-forwarding.
  remote, ///< A peering: TTL, loop suppression and forwarding rules apply.
  core,   ///< The core's status and error events: never wait, never leave the node.
};

/// Who is routing: the id of its own handler (it never receives its own messages).
struct route_source {
  uint64_t id = 0;
  source_kind kind = source_kind::local;
  /// Access control for a network source: asked once per run; null: trusted.
  publish_gate* gate = nullptr;
};

/// What route() did.
enum class route_status : uint8_t {
  done,   ///< Every message was routed.
  parked, ///< A sink lacks room; the waker runs when it has some.
  closed, ///< The endpoint shut down; nothing more will be routed.
};

/// Settings the router reads once.
struct router_options {
  endpoint_id id;
  /// Result cache slots per routing thread (broker.topic-cache-size).
  size_t topic_cache_size = 1024;
  /// broker.disable-forwarding: never relay messages from one peer to another.
  bool disable_forwarding = false;
  /// broker.ttl: the TTL of messages this node originates.
  uint16_t ttl = 16;
};

/// See the file comment.
class router {
public:
  explicit router(router_options opts);
  ~router();

  router(const router&) = delete;
  router& operator=(const router&) = delete;

  /// Routes xs[pos, n); on return `pos` is the first message not delivered. `waker` (if
  /// any) is registered with the sink that lacks room when the result is `parked`;
  /// without one, route() returns `parked` without registering anything.
  route_status route(const route_source& src, const data_message* xs, size_t n, size_t& pos,
                     const room_waker& waker = nullptr);

  /// Counters since start; handlers' own counts are kept in the handlers.
  endpoint_metrics counters() const;

  /// Called (on the routing thread) when a handler overflowed under `disconnect`.
  /// Set once, before anything routes.
  void on_disconnect(std::function<void(uint64_t handler_id)> f) { disconnect_ = std::move(f); }

  // -- writer side (the core's thread) --------------------------------------------------

  /// Makes `snap` the current index (null: nothing is routed any more).
  void publish(std::unique_ptr<const index_snapshot> snap);

  /// Frees `h` once no routing thread can still see it.
  void retire(std::shared_ptr<handler> h);

  /// Frees what no reader can see any more; true if something is left for later.
  bool collect();

  /// Unpublishes the index and frees everything (waits for readers, briefly).
  void shutdown();

  const router_options& options() const noexcept { return opts_; }

private:
  struct counts;

  void deliver(const route_source& src, const data_message* xs, size_t k,
               target_span targets, counts& cnt);
  void account(const handler& h, const push_result& res, counts& cnt);

  router_options opts_;
  rcu::cell<index_snapshot> index_;
  rcu::retire_list garbage_;
  std::mutex relay_mtx_;  // Loop suppression and delivery of relayed messages.
  std::mutex origin_mtx_; // Sequence numbers of our own messages and their peer pushes.
  loop_filter loops_;     // Guarded by relay_mtx_.
  uint64_t next_sequence_ = 0; // Guarded by origin_mtx_.
  std::function<void(uint64_t)> disconnect_;

  struct alignas(64) shared_counts {
    std::atomic<uint64_t> processed{0};
    std::atomic<uint64_t> processed_commands{0};
    std::atomic<uint64_t> unrouted{0};
    std::atomic<uint64_t> suspensions{0};
    std::atomic<uint64_t> duplicates{0};
    std::atomic<uint64_t> out_of_order{0};
    std::atomic<uint64_t> refused{0};
    std::array<std::atomic<uint64_t>, num_handler_kinds> delivered{};
    std::array<std::atomic<uint64_t>, num_handler_kinds * num_overflow_policies> dropped{};
    std::array<std::atomic<uint64_t>, num_handler_kinds> disconnects{};
  };
  shared_counts totals_;
};

} // namespace broker::internal
