#pragma once

// send_queue: the bounded send queue between the core (producer) and one network
// connection (consumer, on its Asio strand): a peering or a WebSocket client.
//
// Threads: the core pushes data and routing announcements; the connection's strand takes
// everything at once and writes it with one gathered system call. The ready callback (a post
// to the strand) fires only when the connection is idle: after a take() that found
// something, the queue counts the connection as busy until a take() finds nothing, so a
// busy connection gets no posts at all, and an idle one exactly one per burst.
//
// Policies: drop_oldest, drop_newest, disconnect (peers never block anybody; doc/architecture.md,
// "Core, handlers and overflow policies").
// The one exception: data-store commands from local stores wait for room (request_wakeup),
// because a burst of replication traffic is no sign of a slow peer.
// Routing announcements (peers only) are not data: they are never dropped, and only the newest one
// matters, so a pending announcement is simply replaced.

#include "broker/internal/core/bounded_queue.hh"
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

/// See the file comment.
class send_queue {
public:
  send_queue(size_t capacity, overflow_policy policy);

  size_t capacity() const noexcept { return items_.capacity(); }
  overflow_policy policy() const noexcept { return items_.policy(); }
  size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }

  /// Sets the callback that schedules the connection to drain the queue.
  void on_ready(std::function<void()> callback);

  // -- core side ----------------------------------------------------------------

  /// Appends data under the policy; `routes` is parallel to `xs`. Both are left empty.
  push_result push(std::vector<data_message>& xs, std::vector<route_info>& routes);

  /// For store commands, which wait instead of overflowing a peer (core.cc): true if `n`
  /// more fit now; otherwise the room callback fires once at the next take().
  bool request_wakeup(size_t n);

  /// Sets the callback for request_wakeup().
  void on_room(std::function<void()> callback);

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
  bool take(send_batch& out, std::optional<filter_type>& announcement);

private:
  void notify_locked(std::function<void()>& cb); // Pre: mtx_ held.

  mutable std::mutex mtx_;
  bounded_buffer<send_item> items_;
  send_batch scratch_; // Items being pushed, reused.
  std::optional<filter_type> announcement_;
  std::atomic<size_t> size_{0};
  std::atomic<bool> closed_{false};
  std::atomic<bool> overflowed_{false};
  bool scheduled_ = false;
  bool wakeup_ = false;
  std::function<void()> ready_;
  std::function<void()> room_;
};

} // namespace broker::internal
