#pragma once

// client_handler: the handler of one WebSocket client; its sink is the session's send
// queue, drained by the session's strand in gathered writes.
//
// Ownership and threads: see handler.hh.

#include "broker/internal/core/handler.hh"
#include "broker/internal/core/send_queue.hh"

#include <memory>

namespace broker::internal {

/// A handler whose sink is the send queue of a WebSocket client.
class client_handler : public handler {
public:
  client_handler(uint64_t id, std::shared_ptr<message_queue> queue)
    : handler(id, handler_kind::web_socket, queue->policy(), queue->capacity()),
      queue_(std::move(queue)) {}

  size_t buffered() const noexcept override { return queue_->size(); }

  bool request_room(size_t, room_waker) override { return true; } // Never `block`.

  void close() override {
    handler::close();
    queue_->close();
  }

protected:
  push_result do_push(const data_message* xs, const route_info*, size_t n) override {
    return queue_->push(xs, nullptr, n);
  }

  push_result do_push_adopted(const data_message* xs, const route_info*,
                              size_t n) override {
    return queue_->push_adopted(xs, nullptr, n);
  }

private:
  std::shared_ptr<message_queue> queue_;
};

} // namespace broker::internal
