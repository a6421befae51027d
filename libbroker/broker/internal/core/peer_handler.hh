#pragma once

// peer_handler: the handler of one peering; its sink is the peering connection's send
// queue, drained by the connection's strand in gathered writes.
//
// Ownership and threads: see handler.hh. What the core keeps about a peering (its filter,
// what we announced to it, where it is) lives in the core's table (core.hh).

#include "broker/endpoint_id.hh"
#include "broker/internal/core/handler.hh"
#include "broker/internal/core/send_queue.hh"

#include <memory>

namespace broker::internal {

/// A handler whose sink is the send queue of a peering connection.
class peer_handler : public handler {
public:
  peer_handler(uint64_t id, endpoint_id remote_id, std::shared_ptr<send_queue> queue)
    : handler(id, handler_kind::peer, queue->policy(), queue->capacity()),
      queue_(std::move(queue)) {
    remote(remote_id);
    wants_route(true);
    accepted_kinds(kind_bit(message_kind::data) | kind_bit(message_kind::command));
  }

  size_t buffered() const noexcept override { return queue_->size(); }

  /// Only store commands wait for a peer (router.hh).
  bool request_room(size_t n, room_waker waker) override {
    return queue_->request_room(n, std::move(waker));
  }

  void close() override {
    handler::close();
    queue_->close();
  }

  const std::shared_ptr<send_queue>& queue() const noexcept { return queue_; }

protected:
  push_result do_push(const data_message* xs, const route_info* routes, size_t n) override {
    return queue_->push(xs, routes, n);
  }

  push_result do_push_adopted(const data_message* xs, const route_info* routes,
                              size_t n) override {
    return queue_->push_adopted(xs, routes, n);
  }

private:
  std::shared_ptr<send_queue> queue_;
};

} // namespace broker::internal
