#pragma once

// local_handler: the handler of a subscriber or hub of this process; its sink is a
// local_queue that an application thread pops (and polls through its eventfd).
//
// Ownership and threads: see handler.hh.

#include "broker/internal/core/handler.hh"
#include "broker/internal/core/local_queue.hh"

#include <memory>

namespace broker::internal {

/// A handler whose sink is a local_queue (subscribers and hubs).
class local_handler : public handler {
public:
  local_handler(uint64_t id, handler_kind kind, std::shared_ptr<local_queue> queue)
    : handler(id, kind, queue->policy(), queue->capacity()), queue_(std::move(queue)) {}

  size_t buffered() const noexcept override { return queue_->size(); }

  const std::shared_ptr<local_queue>& queue() const noexcept { return queue_; }

  bool request_room(size_t n, room_waker waker) override {
    return queue_->request_room(n, std::move(waker));
  }

  void close() override {
    handler::close();
    queue_->close();
  }

protected:
  push_result do_push(const data_message* xs, const route_info*, size_t n) override {
    return queue_->push(xs, n);
  }

  push_result do_push_adopted(const data_message* xs, const route_info*,
                              size_t n) override {
    return queue_->push_adopted(xs, n);
  }

private:
  std::shared_ptr<local_queue> queue_;
};

} // namespace broker::internal
