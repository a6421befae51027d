#pragma once

// handler: one output sink in the core's index (doc/architecture.md, "Core, handlers and
// overflow policies").
//
// Ownership: the core owns every handler; only the core thread calls these members. The
// sink behind a handler (a local queue, or a connection's send queue) is shared with the
// thread that drains it.
//
// Flow per batch of input messages:
//   1. The core looks the topic up once and, for each matching handler that is not the
//      message's own source, checks has_room() if the policy is `block`.
//   2. offer() stages the message: no lock, one reference-count increment.
//   3. After the batch, flush() hands everything staged to the sink under one lock, where
//      the drop policies apply, and reports what was accepted, dropped or disconnected.

#include "broker/internal/core/bounded_queue.hh"
#include "broker/message.hh"
#include "broker/internal/core/topic_index.hh"
#include "broker/metrics.hh"
#include "broker/status.hh"
#include "broker/topic.hh"

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

namespace broker::internal {

/// What offer() did with a message.
enum class offer_result : uint8_t {
  ok,       ///< Staged for the next flush.
  skipped,  ///< Not for this handler (its own message).
  overflow, ///< A `block` handler without room: the source must wait.
  closed,   ///< The handler no longer accepts messages.
};

/// Base class of all output handlers.
class handler : public index_target {
public:
  handler(uint64_t id, handler_kind kind, overflow_policy policy, size_t capacity)
    : id_(id), kind_(kind), policy_(policy), capacity_(capacity == 0 ? 1 : capacity) {}

  uint64_t id() const noexcept { return id_; }
  handler_kind kind() const noexcept { return kind_; }
  overflow_policy policy() const noexcept { return policy_; }
  size_t capacity() const noexcept { return capacity_; }

  /// The prefixes this handler is subscribed to (kept by the core), sorted.
  std::set<topic>& filter() noexcept { return filter_; }
  const std::set<topic>& filter() const noexcept { return filter_; }

  /// Messages waiting in the sink, not counting staged ones.
  virtual size_t buffered() const noexcept = 0;

  /// True if `n` more messages fit, counting staged ones.
  bool has_room(size_t n = 1) const noexcept {
    return buffered() + staged_.size() + n <= capacity_;
  }

  /// Stages `msg` from source `source_id` (see the file comment). `route` is what a network
  /// handler puts on the wire (origin, sequence, hops, ttl); local handlers ignore it.
  offer_result offer(const data_message& msg, uint64_t source_id, const route_info& route) {
    if (source_id == id_ || !accepts(msg.kind()))
      return offer_result::skipped;
    if (closed_)
      return offer_result::closed;
    if (policy_ == overflow_policy::block && !has_room())
      return offer_result::overflow;
    staged_.push_back(msg);
    if (wants_route_)
      staged_routes_.push_back(route);
    return offer_result::ok;
  }

  /// Stages a run of `k` messages whose references the caller already took (one each).
  /// `routes` (k entries) is what a network handler puts on the wire. Returns false, and
  /// stages nothing, if the messages are the handler's own or the handler is closed; the
  /// caller then returns the references. Pre: a `block` handler has room for all k.
  bool offer_run(const data_message* xs, size_t k, uint64_t source_id,
                 const route_info* routes) {
    if (source_id == id_ || closed_ || !accepts(xs[0].kind()))
      return false;
    for (size_t i = 0; i < k; ++i)
      staged_.push_back(data_message::adopt(xs[i].impl()));
    if (wants_route_)
      staged_routes_.insert(staged_routes_.end(), routes, routes + k);
    return true;
  }

  bool has_staged() const noexcept { return !staged_.empty(); }

  /// True if messages of kind `x` are for this handler: data for applications and
  /// WebSocket clients, commands for stores, both for peers.
  bool accepts(message_kind x) const noexcept {
    return (accepted_kinds_ & kind_bit(x)) != 0;
  }

  /// Moves the staged messages into the sink.
  push_result flush() {
    auto result = do_flush(staged_, staged_routes_);
    delivered_ += result.accepted; // Per batch, for the status page and per-peer metrics.
    dropped_ += result.dropped;
    staged_.clear();
    staged_routes_.clear();
    if (result.disconnected)
      closed_ = true;
    return result;
  }

  /// For `block`: asks the sink to report when it has room for `n` more. Returns true if
  /// it already has room (no report will follow).
  virtual bool request_wakeup(size_t n) = 0;

  /// Stops accepting messages; the consumer sees the end of the stream.
  virtual void close() {
    closed_ = true;
  }

  bool closed() const noexcept { return closed_; }

  /// Messages the sink accepted since the handler was added (drop_oldest: every offered
  /// one; its evictions count as drops).
  uint64_t delivered() const noexcept { return delivered_; }

  /// Messages the sink's overflow policy dropped since the handler was added.
  uint64_t dropped() const noexcept { return dropped_; }

protected:
  /// Moves `xs` into the sink. `routes` is parallel to `xs` if wants_route() else empty.
  virtual push_result do_flush(std::vector<data_message>& xs,
                               std::vector<route_info>& routes) = 0;

  /// Network handlers set this to receive route_info with every staged message.
  void wants_route(bool value) noexcept { wants_route_ = value; }

  static constexpr uint8_t kind_bit(message_kind x) noexcept {
    return static_cast<uint8_t>(1u << static_cast<unsigned>(x));
  }

  /// A bit set of kind_bit() values; data only unless a subclass says otherwise.
  void accepted_kinds(uint8_t bits) noexcept { accepted_kinds_ = bits; }

private:
  uint64_t id_;
  handler_kind kind_;
  overflow_policy policy_;
  size_t capacity_;
  bool closed_ = false;
  bool wants_route_ = false;
  uint8_t accepted_kinds_ = kind_bit(message_kind::data);
  uint64_t delivered_ = 0;
  uint64_t dropped_ = 0;
  std::set<topic> filter_;
  std::vector<data_message> staged_;
  std::vector<route_info> staged_routes_;
};

} // namespace broker::internal
