#pragma once

// local_queue: the bounded queue between the routing threads (producers) and one local
// consumer (a subscriber or hub object used by an application thread).
//
// Threads: any routing thread pushes (the I/O thread that read a message, a publishing
// application thread, the core for its events), in the common case without a lock
// (mpsc_ring.hh); exactly one application thread pops.
//
// Readiness: an eventfd is readable while the queue is non-empty or closed, so an
// application can poll() it together with its own sockets. It is written only on the
// empty -> non-empty transition and drained when a pop leaves the queue empty (inside the
// ring's exclusive section, where no producer can push): one syscall pair per burst, not
// per message. A pop may rarely find the descriptor readable and the queue empty (a push
// that raced with it); that pop drains the descriptor again.
//
// Back-pressure (policy `block`): a source that finds no room calls request_room() with a
// waker; the consumer, once it has popped the queue down to the low-water mark, calls every
// waiting source's waker once (outside any lock). The source registers before it looks at
// the size one more time, and the consumer looks for waiters after it shrank the queue, so
// one of them always sees the other. close() wakes every waiter too.

#include "broker/internal/core/mpsc_ring.hh"
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

  size_t capacity() const noexcept { return items_.capacity(); }
  overflow_policy policy() const noexcept { return items_.policy(); }

  /// Number of queued messages (a snapshot while others push).
  size_t size() const noexcept { return items_.size(); }

  /// Slots of memory the queue holds (for tests of the memory bound).
  size_t slots() const noexcept { return items_.slots(); }

  /// The readiness descriptor (see the file comment).
  int fd() const noexcept { return fd_; }

  // -- producer side (routing threads) -----------------------------------------

  /// Appends copies of the `n` messages at `xs` under the policy. For `block` the caller
  /// has already made sure the messages fit (concurrent producers may overfill the queue
  /// by at most one run each).
  push_result push(const data_message* xs, size_t n);

  /// Like push(), for messages whose references the caller already took (one each).
  push_result push_adopted(const data_message* xs, size_t n);

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
  bool wait(std::chrono::milliseconds timeout);

private:
  void signal_ready();
  void clear_ready();

  const size_t low_water_;
  int fd_ = -1;
  mpsc_ring<data_message> items_;
  std::atomic<bool> closed_{false};
  std::mutex mtx_; // Guards waiters_ and closing.
  std::atomic<bool> has_waiters_{false};
  room_waiters waiters_;
};

} // namespace broker::internal
