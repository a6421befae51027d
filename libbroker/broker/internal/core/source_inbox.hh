#pragma once

// source_inbox: the bounded path from one message source (a publisher, a hub, the
// endpoint's own publish calls) into the core actor.
//
// Threads: any number of application threads push; the core actor takes. A push appends
// under the mutex and, only when the inbox goes from idle to pending, fires the wake
// callback (one CAF message to the core per burst, not per message). The core takes the
// whole pending batch at once.
//
// Credit: `capacity` bounds pending + in-flight messages. In-flight messages are those the
// core took but has not yet delivered; they are released only after delivery. When a
// `block` sink is full the core parks the source and releases nothing, so the window fills
// up and push() blocks the publishing thread: that is how back-pressure reaches a local
// publisher.

#include "broker/message.hh"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace broker::internal {

/// Bounded multi-producer inbox of one source (see the file comment).
class source_inbox {
public:
  source_inbox(uint64_t id, size_t capacity);

  uint64_t id() const noexcept { return id_; }
  size_t capacity() const noexcept { return capacity_; }

  /// Sets the callback that schedules the core to take this inbox.
  void on_wake(std::function<void()> callback);

  /// Appends `xs` (moved from), waiting for room while the window is full. A batch larger
  /// than the window goes in chunks. Returns false if the inbox was closed (the messages
  /// not yet appended are discarded) or `timeout` (if non-negative) expired; `pushed`
  /// then tells how many went in.
  bool push(std::vector<data_message>& xs, std::chrono::milliseconds timeout,
            size_t* pushed = nullptr);

  /// Appends one message, waiting for room while the window is full (a negative timeout
  /// waits forever). Returns false if the inbox was closed or the timeout expired.
  bool push_one(data_message x, std::chrono::milliseconds timeout);

  /// Appends one message if the window has room; never blocks.
  bool try_push(data_message x);

  /// Appends as many of xs[from..] as the window has room for and returns how many; never
  /// blocks. If some did not fit, the release callback fires once when room frees up: this
  /// is how a socket reader stops reading instead of blocking its I/O thread.
  size_t try_push_some(std::vector<data_message>& xs, size_t from);

  /// Sets the callback for try_push_some() (see there).
  void on_release(std::function<void()> callback);

  /// Free slots in the window right now.
  size_t free_capacity() const;

  /// Messages pending or in flight.
  size_t buffered() const;

  /// Wakes blocked publishers; later pushes fail.
  void close();
  bool closed() const;

  // -- core side ----------------------------------------------------------------

  /// Moves every pending message to the end of `out` and counts them as in flight.
  size_t take(std::vector<data_message>& out);

  /// Marks `n` in-flight messages as delivered, making room for publishers.
  void release(size_t n);

private:
  bool schedule_locked(); // Pre: mtx_ held. Returns true if the caller must wake.

  const uint64_t id_;
  const size_t capacity_;
  mutable std::mutex mtx_;
  std::condition_variable room_;
  std::vector<data_message> pending_;
  size_t in_flight_ = 0;
  bool scheduled_ = false;
  bool closed_ = false;
  bool release_wanted_ = false;
  std::function<void()> wake_;
  std::function<void()> released_;
};

} // namespace broker::internal
