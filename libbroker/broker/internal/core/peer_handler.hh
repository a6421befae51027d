#pragma once

// peer_handler: the handler of one peering; its sink is the peering connection's send
// queue, drained by the connection's strand in gathered writes.
//
// Ownership and threads: see handler.hh.

#include "broker/endpoint_id.hh"
#include "broker/internal/core/handler.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/status.hh"

#include <memory>

namespace broker::internal {

/// A handler whose sink is the send queue of a peering connection.
class peer_handler : public handler {
public:
  peer_handler(uint64_t id, endpoint_id remote, std::shared_ptr<send_queue> queue)
    : handler(id, handler_kind::peer, queue->policy(), queue->capacity()),
      remote_(remote),
      queue_(std::move(queue)) {
    wants_route(true);
    accepted_kinds(kind_bit(message_kind::data) | kind_bit(message_kind::command));
  }

  /// The peer's endpoint id.
  const endpoint_id& remote() const noexcept { return remote_; }

  size_t buffered() const noexcept override { return queue_->size(); }

  /// Only store commands wait for a peer (core_state::must_wait).
  bool request_wakeup(size_t n) override { return queue_->request_wakeup(n); }

  void close() override {
    handler::close();
    queue_->close();
  }

  const std::shared_ptr<send_queue>& queue() const noexcept { return queue_; }

  /// The filter we last announced to this peer (to send routing updates only on change).
  filter_type& announced() noexcept { return announced_; }

  /// Where the peer is, for status events.
  network_info& network() noexcept { return network_; }

protected:
  push_result do_flush(std::vector<data_message>& xs, std::vector<route_info>& routes) override {
    return queue_->push(xs, routes);
  }

private:
  endpoint_id remote_;
  std::shared_ptr<send_queue> queue_;
  filter_type announced_;
  network_info network_;
};

} // namespace broker::internal
