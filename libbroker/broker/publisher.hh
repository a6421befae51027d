#pragma once

// publisher: publishes on one topic through a bounded window.
//
// The window (capacity) bounds the messages that are queued for, or being routed by, the
// core. publish() blocks while the window is full; that happens when a subscriber with the
// `block` policy is full, so back-pressure reaches the publishing thread. try_publish()
// never blocks. A publisher's messages reach each sink in publication order.

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
class source_inbox;
} // namespace internal

/// See the file comment.
class BROKER_API publisher {
public:
  publisher(publisher&&) noexcept;
  publisher& operator=(publisher&&) noexcept;
  /// Whatever was published is still delivered; then the publisher detaches.
  ~publisher();

  /// Publishes one value; blocks while the window is full. Fails (ec::shutting_down) only
  /// after the endpoint shut down.
  error publish(data value);

  /// Publishes several values in order, as one batch where the window allows.
  error publish(std::vector<data> values);

  /// Publishes if the window has room; returns false (and publishes nothing) otherwise.
  bool try_publish(data value);

  /// The window size and its free part.
  size_t capacity() const noexcept;
  size_t free_capacity() const;

  /// Messages queued or in flight.
  size_t buffered() const;

  const topic& get_topic() const noexcept { return topic_; }

  /// Detaches now instead of at destruction.
  void reset();

private:
  friend class endpoint;

  publisher(std::shared_ptr<internal::endpoint_context> ctx,
            std::shared_ptr<internal::source_inbox> inbox, topic t);

  std::shared_ptr<internal::endpoint_context> ctx_;
  std::shared_ptr<internal::source_inbox> inbox_;
  topic topic_;
};

} // namespace broker
