#pragma once

// subscriber: a pollable, bounded queue of the data messages matching its prefixes.
//
// Threads: one application thread consumes a subscriber; the endpoint's core fills it.
// fd() becomes readable while messages wait (or once the subscriber is closed), so it can
// be poll()ed together with the application's own descriptors.
//
// End of stream: when the endpoint shuts down, or the subscriber overflowed under the
// `disconnect` policy, the queued messages can still be read; after them get() returns a
// null data_message and closed() is true.

#include "broker/export.hh"
#include "broker/fwd.hh"
#include "broker/message.hh"
#include "broker/overflow_policy.hh"
#include "broker/status.hh"
#include "broker/time.hh"
#include "broker/topic.hh"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace broker {

namespace internal {
class local_queue;
} // namespace internal

/// See the file comment.
class BROKER_API subscriber {
public:
  subscriber(subscriber&&) noexcept;
  subscriber& operator=(subscriber&&) noexcept;
  /// Detaches from the endpoint (unsubscribes everything).
  ~subscriber();

  /// Blocks until a message arrives; a null message means the stream ended.
  data_message get();

  /// Blocks until `num` messages arrived or the stream ended (then returns fewer).
  std::vector<data_message> get(size_t num);

  /// Waits at most `timeout` for one message.
  std::optional<data_message> get(timespan timeout);

  /// Waits at most `timeout` for up to `num` messages; returns what arrived.
  std::vector<data_message> get(size_t num, timespan timeout);

  /// Everything available right now; never blocks.
  std::vector<data_message> poll();

  /// Number of messages waiting.
  size_t available() const noexcept;

  /// Readable while messages wait or the stream has ended.
  int fd() const noexcept;

  /// True once the stream ended (endpoint shut down, or disconnected by policy).
  bool closed() const noexcept;

  /// Waits at most `timeout` until a message is available; false on timeout or end.
  bool wait_for(timespan timeout) const;

  /// Adds a prefix. The subscription is active when this returns (unless the endpoint has
  /// shut down, then it returns false).
  bool add_topic(topic prefix);

  /// Removes a prefix; returns false if the endpoint has shut down.
  bool remove_topic(topic prefix);

  /// The prefixes this subscriber holds.
  const filter_type& filter() const noexcept { return filter_; }

  size_t capacity() const noexcept;
  overflow_policy policy() const noexcept;

  /// Detaches now instead of at destruction.
  void reset();

private:
  friend class endpoint;
  friend class hub;
  friend class status_subscriber;

  subscriber(std::shared_ptr<internal::endpoint_context> ctx,
             std::shared_ptr<internal::local_queue> queue, uint64_t id, filter_type filter);

  std::shared_ptr<internal::endpoint_context> ctx_;
  std::shared_ptr<internal::local_queue> queue_;
  uint64_t id_ = 0;
  filter_type filter_;
  std::vector<data_message> buf_; // Messages popped in bulk, handed out one by one.
};

/// Hands out status and error events (topic::statuses / topic::errors) as values.
class BROKER_API status_subscriber {
public:
  /// Blocks for the next event; `none` when the stream ended.
  status_variant get();

  /// Waits at most `timeout`; nullopt on timeout.
  std::optional<status_variant> get(timespan timeout);

  /// All events available now.
  std::vector<status_variant> poll();

  size_t available() const noexcept { return impl_.available(); }
  int fd() const noexcept { return impl_.fd(); }

  /// The underlying data subscriber.
  subscriber& impl() noexcept { return impl_; }

private:
  friend class endpoint;
  explicit status_subscriber(subscriber impl) : impl_(std::move(impl)) {}

  static status_variant convert(const data_message& msg);

  subscriber impl_;
};

} // namespace broker
