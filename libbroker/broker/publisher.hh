#pragma once

// publisher: publishes on one topic.
//
// publish() routes on the calling thread: when it returns, the messages are in the queues
// of every matching receiver (local subscribers, peers, WebSocket clients). It blocks while
// a receiver with the `block` policy is full, so back-pressure reaches the publishing
// thread; try_publish() never blocks. A publisher's messages reach each receiver in
// publication order.

#include "broker/error.hh"
#include "broker/export.hh"
#include "broker/fwd.hh"
#include "broker/message.hh"
#include "broker/topic.hh"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace broker {

namespace internal {
class local_source;
} // namespace internal

/// See the file comment.
class BROKER_API publisher {
public:
  publisher(publisher&&) noexcept;
  publisher& operator=(publisher&&) noexcept;
  /// Whatever was published is still delivered; then the publisher detaches.
  ~publisher();

  /// Publishes one value; blocks while a `block` receiver is full. Fails
  /// (ec::shutting_down) only after the endpoint shut down.
  error publish(data value);

  /// Publishes several values in order, as one batch (one lookup per run of them).
  error publish(std::vector<data> values);

  /// Publishes if no `block` receiver is full; returns false (and publishes nothing)
  /// otherwise.
  bool try_publish(data value);

  /// What make_publisher() was given (default broker.publisher-buffer-size), as in
  /// Broker's API. Messages are routed when published, so nothing waits in a window:
  /// free_capacity() is capacity() minus buffered().
  size_t capacity() const noexcept;
  size_t free_capacity() const;

  /// Messages of a blocked publish() call that still wait for room.
  size_t buffered() const;

  const topic& get_topic() const noexcept { return topic_; }

  /// Detaches now instead of at destruction.
  void reset();

private:
  friend class endpoint;

  publisher(std::shared_ptr<internal::endpoint_context> ctx,
            std::shared_ptr<internal::local_source> src, topic t, size_t capacity);

  std::shared_ptr<internal::endpoint_context> ctx_;
  std::shared_ptr<internal::local_source> src_;
  topic topic_;
  size_t capacity_ = 0;
};

} // namespace broker
