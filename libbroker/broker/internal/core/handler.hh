#pragma once

// handler: one output sink in the core's index (doc/architecture.md, "Core, handlers and
// overflow policies").
//
// Ownership and threads: the core creates handlers, puts them into the index and removes
// them; a removed handler lives on until no routing thread can still see it (core/rcu.hh).
// Any routing thread may push() into a handler at any time, concurrently with others: its
// sink (a local queue, a connection's send queue, a store's mailbox) is multi-producer, and
// every member used on the routing path is thread-safe. The core alone touches what it
// keeps per handler (filters, announcements: core.hh).
//
// Flow, for a run of messages from one source (core/router.hh):
//   1. The router looks the topic up once and, for each matching handler that must not
//      lose messages (policy `block`; peers for store commands), checks room().
//   2. push() hands the whole run to the sink: one lock or reservation per handler per
//      run; the drop policies apply there, and the counters below are updated once.
//   3. A sink wakes its consumer only when it goes from empty to non-empty.

#include "broker/endpoint_id.hh"
#include "broker/internal/core/mpsc_ring.hh"
#include "broker/internal/core/topic_index.hh"
#include "broker/message.hh"
#include "broker/metrics.hh"

#include <atomic>
#include <cstdint>
#include <functional>

namespace broker::internal {

/// Called once, on any thread, when a sink that lacked room has some again.
using room_waker = std::function<void()>;

/// Base class of all output handlers (see the file comment).
class handler : public index_target {
public:
  handler(uint64_t id, handler_kind kind, overflow_policy policy, size_t capacity)
    : id_(id), kind_(kind), policy_(policy), capacity_(capacity == 0 ? 1 : capacity) {}

  uint64_t id() const noexcept { return id_; }
  handler_kind kind() const noexcept { return kind_; }
  overflow_policy policy() const noexcept { return policy_; }
  size_t capacity() const noexcept { return capacity_; }

  /// Peers: the remote endpoint (the router never sends a message back to its origin).
  /// Nil for every other kind.
  const endpoint_id& remote() const noexcept { return remote_; }

  /// True if this handler puts route_info on the wire (peers).
  bool wants_route() const noexcept { return wants_route_; }

  /// True if messages of kind `x` are for this handler: data for applications and
  /// WebSocket clients, commands for stores, both for peers.
  bool accepts(message_kind x) const noexcept {
    return (accepted_kinds_ & kind_bit(x)) != 0;
  }

  /// Messages waiting in the sink (approximate while others push).
  virtual size_t buffered() const noexcept = 0;

  /// Free slots now (approximate while others push).
  size_t room() const noexcept {
    auto n = buffered();
    return n < capacity_ ? capacity_ - n : 0;
  }

  /// Hands `n` messages to the sink under its policy; `routes` is parallel to `xs` for
  /// handlers that want routes (may be null otherwise). Thread-safe. A handler that
  /// overflows under `disconnect` closes itself; the result says so.
  push_result push(const data_message* xs, const route_info* routes, size_t n) {
    if (closed())
      return {};
    auto result = do_push(xs, routes, n);
    if (result.accepted > 0)
      delivered_.fetch_add(result.accepted, std::memory_order_relaxed);
    if (result.dropped > 0)
      dropped_.fetch_add(result.dropped, std::memory_order_relaxed);
    if (result.disconnected)
      closed_.store(true, std::memory_order_release);
    return result;
  }

  /// Like push(), for messages whose references the caller already took, one per message
  /// for this handler (message_impl::ref(n) once for a whole fan-out): the sink keeps the
  /// references of what it takes and returns the others.
  push_result push_adopted(const data_message* xs, const route_info* routes, size_t n) {
    if (closed()) {
      for (size_t i = 0; i < n; ++i)
        xs[i].impl().deref();
      return {};
    }
    auto result = do_push_adopted(xs, routes, n);
    if (result.accepted > 0)
      delivered_.fetch_add(result.accepted, std::memory_order_relaxed);
    if (result.dropped > 0)
      dropped_.fetch_add(result.dropped, std::memory_order_relaxed);
    if (result.disconnected)
      closed_.store(true, std::memory_order_release);
    return result;
  }

  /// For sources that must wait (policy `block`, or store commands to a peer): true if `n`
  /// more fit now; otherwise `waker` runs once when the sink has room again (or closes).
  virtual bool request_room(size_t n, room_waker waker) = 0;

  /// Stops accepting messages; the consumer sees the end of the stream, and sources
  /// waiting for room are woken.
  virtual void close() { closed_.store(true, std::memory_order_release); }

  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  /// Messages the sink accepted since the handler was added (drop_oldest: every offered
  /// one; its evictions count as drops).
  uint64_t delivered() const noexcept { return delivered_.load(std::memory_order_relaxed); }

  /// Messages the sink's overflow policy dropped since the handler was added.
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  /// Counts `n` messages a full `block` sink could not take from the core's own events
  /// (status and errors never wait; core.hh).
  void count_dropped(size_t n) noexcept { dropped_.fetch_add(n, std::memory_order_relaxed); }

protected:
  /// Moves `xs` into the sink (see push()).
  virtual push_result do_push(const data_message* xs, const route_info* routes,
                              size_t n) = 0;

  /// See push_adopted(). The default copies and returns the adopted references.
  virtual push_result do_push_adopted(const data_message* xs, const route_info* routes,
                                      size_t n) {
    auto result = do_push(xs, routes, n);
    for (size_t i = 0; i < n; ++i)
      xs[i].impl().deref();
    return result;
  }

  void remote(const endpoint_id& x) noexcept { remote_ = x; }

  /// Network handlers set this to receive route_info with every message.
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
  endpoint_id remote_;
  bool wants_route_ = false;
  uint8_t accepted_kinds_ = kind_bit(message_kind::data);
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> delivered_{0};
  std::atomic<uint64_t> dropped_{0};
};

} // namespace broker::internal
