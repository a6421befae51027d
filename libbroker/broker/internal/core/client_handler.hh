#pragma once

// client_handler: the handler of one WebSocket client; its sink is the session's send
// queue, drained by the session's strand in gathered writes.
//
// Ownership and threads: see handler.hh.

#include "broker/endpoint_id.hh"
#include "broker/internal/core/handler.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/status.hh"

#include <memory>

namespace broker::internal {

/// A handler whose sink is the send queue of a WebSocket client.
class client_handler : public handler {
public:
  client_handler(uint64_t id, endpoint_id client, std::shared_ptr<send_queue> queue)
    : handler(id, handler_kind::web_socket, queue->policy(), queue->capacity()),
      client_(client),
      queue_(std::move(queue)) {}

  /// The random id the node gave this client (status events name it).
  const endpoint_id& client() const noexcept { return client_; }

  size_t buffered() const noexcept override { return queue_->size(); }

  bool request_wakeup(size_t) override { return true; } // Clients never use `block`.

  /// Where the client connected from, for the status page.
  network_info& network() noexcept { return network_; }

  void close() override {
    handler::close();
    queue_->close();
  }

protected:
  push_result do_flush(std::vector<data_message>& xs, std::vector<route_info>& routes) override {
    return queue_->push(xs, routes);
  }

private:
  endpoint_id client_;
  std::shared_ptr<send_queue> queue_;
  network_info network_;
};

} // namespace broker::internal
