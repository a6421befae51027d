#pragma once

// hub: a subscriber and a publisher in one, for components that both consume and produce
// (Broker's hub). A hub never receives its own messages back.

#include "broker/error.hh"
#include "broker/export.hh"
#include "broker/fwd.hh"
#include "broker/subscriber.hh"

#include <memory>
#include <optional>
#include <vector>

namespace broker {

/// See the file comment.
class BROKER_API hub {
public:
  hub(hub&&) noexcept;
  hub& operator=(hub&&) noexcept;
  ~hub();

  // -- consuming (as subscriber) --------------------------------------------------

  data_message get() { return sub_.get(); }
  std::vector<data_message> get(size_t num) { return sub_.get(num); }
  std::optional<data_message> get(timespan timeout) { return sub_.get(timeout); }
  std::vector<data_message> poll() { return sub_.poll(); }
  size_t available() const noexcept { return sub_.available(); }
  int read_fd() const noexcept { return sub_.fd(); }
  bool subscribe(topic prefix) { return sub_.add_topic(std::move(prefix)); }
  bool unsubscribe(topic prefix) { return sub_.remove_topic(std::move(prefix)); }
  const filter_type& filter() const noexcept { return sub_.filter(); }

  // -- producing ------------------------------------------------------------------

  /// Publishes on any (non-reserved) topic; blocks while a `block` receiver is full.
  error publish(topic t, data value);

  /// Publishes a batch in order.
  error publish(std::vector<data_message> batch);

  /// Detaches now instead of at destruction.
  void reset();

private:
  friend class endpoint;

  hub(subscriber sub, std::shared_ptr<internal::local_source> src);

  subscriber sub_;
  std::shared_ptr<internal::local_source> src_;
};

} // namespace broker
