#pragma once

// send_queue: the bounded send queue between the routing threads (producers) and one
// network connection (consumer, on its Asio strand): a peering or a WebSocket client.
//
// Threads: any routing thread pushes data, in the common case without a lock
// (mpsc_ring.hh); the core pushes routing announcements; the connection's strand takes
// everything at once and writes it with one gathered system call. The ready callback (a
// post to the strand) fires only when the connection is idle: after a take() that found
// something, the queue counts the connection as busy until a take() finds nothing, so a
// busy connection gets no posts at all, and an idle one exactly one per burst.
//
// Policies: drop_oldest, drop_newest, disconnect (peers never block anybody;
// doc/architecture.md, "Core, handlers and overflow policies"). The one exception:
// data-store commands wait for room (request_room), because a burst of replication traffic
// is no sign of a slow peer. Routing announcements (peers only) are not data: they are never
// dropped, and only the newest one matters, so a pending announcement is simply replaced.

#include "broker/internal/core/mpsc_ring.hh"
#include "broker/internal/core/room_waiters.hh"
#include "broker/message.hh"
#include "broker/overflow_policy.hh"
#include "broker/topic.hh"

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace broker::internal {

/// One message to send, with what goes into its frame header.
struct send_item {
  data_message msg;
  route_info route;
};

/// Messages taken from a send queue in one go.
using send_batch = std::vector<send_item>;

/// See the file comment. `Item` is send_item for peers (a route for every message's frame
/// header) and data_message for WebSocket clients (no route: a sixth of the memory per
/// queued message).
template <class Item>
class basic_send_queue {
public:
  basic_send_queue(size_t capacity, overflow_policy policy);

  size_t capacity() const noexcept { return items_.capacity(); }
  overflow_policy policy() const noexcept { return items_.policy(); }
  size_t size() const noexcept { return items_.size(); }

  /// Slots of memory the queue holds (for tests of the memory bound).
  size_t slots() const noexcept { return items_.slots(); }

  /// Sets the callback that schedules the connection to drain the queue.
  void on_ready(std::function<void()> callback);

  /// Also fires the ready callback when a push makes the queue reach `n` messages, even
  /// if the connection is scheduled already: a connection that holds its writes
  /// (broker.peer-write-delay) lets a burst go at once instead of overflowing. 0: never.
  void wake_at(size_t n) noexcept { wake_at_.store(n, std::memory_order_relaxed); }

  // -- producer side ------------------------------------------------------------

  /// Appends copies of `n` messages under the policy; `routes` (may be null) is parallel
  /// to `xs`. Any thread.
  push_result push(const data_message* xs, const route_info* routes, size_t n);

  /// Like push(), for messages whose references the caller already took (one each): the
  /// queue keeps those of the items it takes and returns the others.
  push_result push_adopted(const data_message* xs, const route_info* routes, size_t n);

  /// Convenience for tests: pushes `xs` with `routes` and clears both.
  push_result push(std::vector<data_message>& xs, std::vector<route_info>& routes);

  /// For store commands, which wait instead of overflowing a peer (router.hh): true if `n`
  /// more fit now; otherwise `waker` runs once at the next take() (or close()).
  bool request_room(size_t n, room_waiters::waker waker);

  /// Replaces the pending routing announcement.
  void announce(filter_type filter);

  /// Stops the queue; the connection notices on its next drain and closes.
  void close();
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  /// True if the queue closed because it overflowed under `disconnect`.
  bool overflowed() const noexcept { return overflowed_.load(std::memory_order_acquire); }

  // -- connection side ----------------------------------------------------------

  /// Moves everything pending into `out` / `announcement`. When there is nothing, the queue
  /// counts the connection as idle again, so the next push fires the ready callback.
  /// Returns false once the queue is closed and drained.
  bool take(std::vector<Item>& out, std::optional<filter_type>& announcement);

private:
  /// Fires the ready callback unless the connection is already scheduled.
  void schedule();

  template <class Make>
  push_result push_impl(size_t n, Make&& make);

  mpsc_ring<Item> items_;
  std::atomic<bool> scheduled_{false}; // The connection will take (or is taking).
  std::atomic<bool> closed_{false};
  std::atomic<bool> overflowed_{false};
  std::atomic<bool> has_extra_{false}; // An announcement or waiters: look under the lock.
  std::atomic<size_t> wake_at_{0};
  mutable std::mutex mtx_;             // Guards the members below.
  std::optional<filter_type> announcement_;
  std::function<void()> ready_;
  room_waiters waiters_;
};

extern template class basic_send_queue<send_item>;
extern template class basic_send_queue<data_message>;

/// A peering's send queue.
using send_queue = basic_send_queue<send_item>;

/// A WebSocket client's send queue.
using message_queue = basic_send_queue<data_message>;

} // namespace broker::internal
