#pragma once

// local_queue: the bounded queue between the core (producer) and one local consumer
// (a subscriber or hub object used by an application thread).
//
// Threads: the core actor pushes; exactly one application thread pops. Both sides take the
// mutex; the size is mirrored in an atomic so the core can check for room without locking.
//
// Readiness: an eventfd is readable exactly while the queue is non-empty or closed, so an
// application can poll() it together with its own sockets. It is written only on the
// empty -> non-empty transition and drained on the non-empty -> empty transition: one
// syscall pair per burst, not per message.
//
// Back-pressure (policy `block`): when the core parks a source on this queue it calls
// request_wakeup(); the consumer, once it has popped the queue down to the low-water mark,
// fires the room callback exactly once. The core re-checks for room after requesting the
// wakeup, so a pop that races with the request is never lost.

#include "broker/internal/core/bounded_queue.hh"
#include "broker/message.hh"
#include "broker/overflow_policy.hh"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace broker::internal {

/// Bounded single-consumer queue with an eventfd (see the file comment).
class local_queue {
public:
  local_queue(size_t capacity, overflow_policy policy);
  ~local_queue();

  local_queue(const local_queue&) = delete;
  local_queue& operator=(const local_queue&) = delete;

  size_t capacity() const noexcept { return capacity_; }
  overflow_policy policy() const noexcept { return items_.policy(); }

  /// Number of queued messages (exact under the lock, approximate outside).
  size_t size() const noexcept { return size_.load(std::memory_order_acquire); }

  /// The readiness descriptor (see the file comment).
  int fd() const noexcept { return fd_; }

  // -- producer side (core) ---------------------------------------------------

  /// Appends `xs` (moved from; left empty) under the policy. For `block` the caller has
  /// already made sure the messages fit.
  push_result push(std::vector<data_message>& xs);

  /// Sets the callback the consumer fires when a parked producer may continue.
  void on_room(std::function<void()> callback);

  /// Asks for one room callback. Returns true if there is room right now (then no callback
  /// is pending and the caller should simply continue).
  bool request_wakeup(size_t needed);

  /// No more messages will arrive; the consumer drains what is queued, then sees the end.
  void close() noexcept;

  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  // -- consumer side ----------------------------------------------------------

  /// Moves up to `max` messages into `out`; never blocks. Returns how many.
  size_t pop(std::vector<data_message>& out, size_t max);

  /// Blocks until a message is available, the queue is closed, or `timeout` passed
  /// (a negative timeout waits forever). Returns true if a message is available.
  bool wait(std::chrono::milliseconds timeout) const;

private:
  void signal_ready(); // Pre: mtx_ held.
  void clear_ready();  // Pre: mtx_ held.

  const size_t capacity_;
  const size_t low_water_;
  int fd_ = -1;
  mutable std::mutex mtx_;
  bounded_buffer<data_message> items_;
  std::atomic<size_t> size_{0};
  std::atomic<bool> closed_{false};
  std::atomic<bool> wakeup_wanted_{false};
  std::function<void()> room_callback_;
};

} // namespace broker::internal
