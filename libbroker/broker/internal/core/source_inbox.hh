#pragma once

// source_inbox: the bounded, ordered path from one message source into the core actor: a
// publisher, a hub, the endpoint's own publish calls, a store, a peering or a WebSocket
// client.
//
// One road: a network source sends everything the core must know about it through its
// inbox, in the order it happened: data messages, and between them the events that change
// the source (a peer's routing update, the end of the connection). So a routing update that
// arrives before a message is applied before that message is routed, and the end of a
// connection is processed after the last message it delivered.
//
// Threads: any number of threads push; the core takes. A push appends under the mutex and,
// only when the inbox goes from idle to pending, fires the wake callback (one CAF message to
// the core per burst, not per message). The core takes everything pending at once and keeps
// taking until it finds the inbox empty; only then does the inbox count as idle again.
//
// Credit: `capacity` bounds pending + in-flight items (messages and events), and for a
// network source set_byte_limit() also bounds their wire bytes (broker.max-input-bytes), so
// that a client sending large messages cannot hold more than that in the node. In-flight
// items are those the core took but has not yet delivered; they are released only after
// delivery. When a `block` sink is full the core parks the source and releases nothing, so
// the window fills up and push() blocks the publishing thread: that is how back-pressure
// reaches a local publisher. A network source uses try_push_some() instead and stops
// reading its socket until the release callback says there is room.

#include "broker/error.hh"
#include "broker/message.hh"
#include "broker/topic.hh"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace broker::internal {

/// Why a peering or client connection ended, for its status event.
enum class peer_end : uint8_t {
  removed, ///< We unpeered (or shut down, or the peer overflowed under `disconnect`).
  lost,    ///< The connection failed or the peer closed it.
};

/// An event of a network source that travels between its messages (see the file comment).
struct source_event {
  enum class kind : uint8_t {
    filter, ///< A peer's routing update: its new filter.
    error,  ///< An error event to publish (e.g. a budget the connection exceeded).
    detach, ///< The connection ended; the last item of its inbox.
  };
  kind what = kind::filter;
  filter_type filter;
  peer_end why = peer_end::lost;
  std::string reason;
  broker::error err;           ///< kind error.
  bool limit = false;          ///< detach: the connection exceeded a budget.

  static source_event make_filter(filter_type f) {
    source_event ev;
    ev.what = kind::filter;
    ev.filter = std::move(f);
    return ev;
  }

  static source_event make_detach(peer_end why, std::string reason, bool limit = false) {
    source_event ev;
    ev.what = kind::detach;
    ev.why = why;
    ev.reason = std::move(reason);
    ev.limit = limit;
    return ev;
  }

  static source_event make_error(broker::error err) {
    source_event ev;
    ev.what = kind::error;
    ev.err = std::move(err);
    return ev;
  }
};

/// An event and the number of messages before it in the same batch.
using positioned_event = std::pair<size_t, source_event>;

/// Input a network source decoded but has not yet handed to its inbox: messages and the
/// events between them, in arrival order.
struct input_batch {
  std::vector<data_message> msgs;
  std::vector<uint32_t> sizes;          ///< Wire bytes of each message (for the byte budget).
  std::vector<positioned_event> events; ///< Ascending positions into `msgs`.
  size_t msg_pos = 0;                   ///< msgs[0, msg_pos) are handed over.
  size_t event_pos = 0;                 ///< events[0, event_pos) are handed over.

  /// Appends a message that took `wire_size` bytes on the wire.
  void add(data_message msg, size_t wire_size) {
    msgs.push_back(std::move(msg));
    sizes.push_back(static_cast<uint32_t>(std::min<size_t>(wire_size, UINT32_MAX)));
  }

  /// Appends an event after the messages so far.
  void add_event(source_event ev) { events.emplace_back(msgs.size(), std::move(ev)); }

  bool done() const noexcept { return msg_pos == msgs.size() && event_pos == events.size(); }

  void clear() noexcept {
    msgs.clear();
    sizes.clear();
    events.clear();
    msg_pos = 0;
    event_pos = 0;
  }
};

/// Bounded multi-producer inbox of one source (see the file comment).
class source_inbox {
public:
  using callback = std::shared_ptr<const std::function<void()>>;

  source_inbox(uint64_t id, size_t capacity);

  uint64_t id() const noexcept { return id_; }
  size_t capacity() const noexcept { return capacity_; }

  /// Sets the callback that schedules the core to take this inbox.
  void on_wake(std::function<void()> f);

  /// Also bounds the wire bytes of pending + in-flight input (0: no byte bound). Only
  /// try_push_some(input_batch&) and push_final() carry sizes. Call before the first push.
  void set_byte_limit(size_t bytes) noexcept { max_bytes_ = bytes; }

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
  /// is how a reader stops reading instead of blocking its thread.
  size_t try_push_some(std::vector<data_message>& xs, size_t from);

  /// Hands over as much of `in` as the window has room for, messages and events in order;
  /// never blocks. Returns true if everything went in; otherwise the release callback fires
  /// once when room frees up. A detach event always goes in: it ends the source.
  bool try_push_some(input_batch& in);

  /// Hands over all of `in`, ignoring the window: the last input of a connection that
  /// ended (at most what it decoded from its last read), ending with its detach event.
  void push_final(input_batch& in);

  /// Sets the callback for try_push_some() (see there).
  void on_release(std::function<void()> f);

  /// Free slots in the window right now.
  size_t free_capacity() const;

  /// Items pending or in flight.
  size_t buffered() const;

  /// Events (routing updates, the end) pending, i.e. not yet taken by the core.
  size_t pending_events() const;

  /// Wakes blocked publishers; later pushes fail.
  void close();
  bool closed() const;

  // -- core side ----------------------------------------------------------------

  /// Moves every pending message to the end of `msgs` and every pending event to `events`
  /// (positions relative to `msgs` as it was passed in plus the messages before them), and
  /// counts them as in flight. Returns the number of items taken; 0 makes the inbox idle,
  /// so that the next push wakes the core again.
  size_t take(std::vector<data_message>& msgs, std::vector<positioned_event>& events);

  /// Marks `n` in-flight items as delivered, making room for publishers.
  void release(size_t n);

  /// Messages (not events) the core took so far. Core thread only, like take().
  uint64_t taken() const noexcept { return taken_; }

private:
  bool schedule_locked(); // Pre: mtx_ held. Returns true if the caller must wake.
  size_t room_locked() const noexcept {
    auto used = pending_.size() + events_.size() + in_flight_;
    return used < capacity_ ? capacity_ - used : 0;
  }
  bool bytes_full_locked() const noexcept { return max_bytes_ > 0 && bytes_ >= max_bytes_; }
  void track_locked(size_t size) { // Pre: max_bytes_ > 0.
    sizes_.push_back(static_cast<uint32_t>(size));
    bytes_ += size;
  }

  const uint64_t id_;
  const size_t capacity_;
  mutable std::mutex mtx_;
  std::condition_variable room_;
  std::vector<data_message> pending_;
  std::vector<positioned_event> events_;
  size_t in_flight_ = 0;
  bool scheduled_ = false;
  bool closed_ = false;
  bool release_wanted_ = false;
  size_t max_bytes_ = 0;
  size_t bytes_ = 0;            // Wire bytes pending or in flight (with a byte limit).
  std::deque<uint32_t> sizes_;  // Their sizes, in the order the core releases them.
  uint64_t taken_ = 0; // Written by take() under mtx_, read on the same (core) thread.
  callback wake_;
  callback released_;
};

} // namespace broker::internal
