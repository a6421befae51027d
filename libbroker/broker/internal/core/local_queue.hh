#pragma once

// local_queue: the bounded queue between the routing threads (producers) and one local
// consumer (a subscriber or hub object used by an application thread).
//
// Threads: any routing thread pushes (the I/O thread that read a message, a publishing
// application thread, the core for its events); exactly one application thread pops. Both
// sides take the mutex once per batch; the size is mirrored in an atomic so that routers
// can check for room without locking.
//
// Readiness: an eventfd is readable exactly while the queue is non-empty or closed, so an
// application can poll() it together with its own sockets. It is written only on the
// empty -> non-empty transition and drained on the non-empty -> empty transition: one
// syscall pair per burst, not per message.
//
// Back-pressure (policy `block`): a source that finds no room calls request_room() with a
// waker; the consumer, once it has popped the queue down to the low-water mark, calls every
// waiting source's waker once (outside the lock). request_room() checks for room under the
// same mutex the consumer pops under, so a pop that races with the request is never lost.
// close() wakes every waiter too.

#include "broker/internal/core/bounded_queue.hh"
#include "broker/internal/core/room_waiters.hh"
#include "broker/message.hh"
#include "broker/overflow_policy.hh"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace broker::internal {

using room_waiter_fn = room_waiters::waker;

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

  // -- producer side (routing threads) -----------------------------------------

  /// Appends copies of the `n` messages at `xs` under the policy. For `block` the caller
  /// has already made sure the messages fit (concurrent producers may overfill the queue
  /// by at most one run each).
  push_result push(const data_message* xs, size_t n);

  /// Convenience for tests: pushes `xs` and clears it.
  push_result push(std::vector<data_message>& xs);

  /// Returns true if `needed` more fit now (or the queue is closed); otherwise `waker`
  /// runs once when the consumer has made room or the queue closes.
  bool request_room(size_t needed, room_waiter_fn waker);

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
  room_waiters waiters_;
};

} // namespace broker::internal
