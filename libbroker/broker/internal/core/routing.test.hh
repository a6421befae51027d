#pragma once

// A node's routing, driven by hand for the router and source tests: a core_state (the
// single writer of the index) with its router, local sinks on local_queues, and peers and
// WebSocket clients on send_queues, so a test can look at every route_info a peer gets.
// Tests call core methods on their own thread only; any thread may route.

#include "broker/internal/core/core.hh"
#include "broker/internal/core/messages.test.hh"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace broker::internal::test {

/// See the file comment.
struct node {
  explicit node(bool disable_forwarding = false, uint16_t ttl = 16)
    : self(endpoint_id::random()),
      routing(make_router(self, disable_forwarding, ttl)),
      core(self, routing) {
    // The router reports overflows from the routing thread; the core applies them.
    routing->on_disconnect([this](uint64_t id) { overflowed.push_back(id); });
  }

  static std::shared_ptr<router> make_router(const endpoint_id& self, bool disable_forwarding,
                                             uint16_t ttl) {
    router_options opts;
    opts.id = self;
    opts.disable_forwarding = disable_forwarding;
    opts.ttl = ttl;
    return std::make_shared<router>(opts);
  }

  /// A subscriber (or hub) on a local_queue.
  std::shared_ptr<local_queue> add_local(uint64_t id, filter_type filter, size_t capacity = 1000,
                                         overflow_policy policy = overflow_policy::block,
                                         handler_kind kind = handler_kind::subscriber) {
    auto q = std::make_shared<local_queue>(capacity, policy);
    core.add_handler(std::make_shared<local_handler>(id, kind, q), std::move(filter));
    core.commit();
    return q;
  }

  /// A peering whose remote endpoint is `remote`.
  std::shared_ptr<send_queue> add_peer(uint64_t id, const endpoint_id& remote,
                                       filter_type filter, size_t capacity = 1000,
                                       overflow_policy policy = overflow_policy::disconnect) {
    peer_attachment att;
    att.id = id;
    att.remote = remote;
    att.filter = std::move(filter);
    att.address = "127.0.0.1";
    att.queue = std::make_shared<send_queue>(capacity, policy);
    auto q = att.queue;
    core.add_peer(std::move(att));
    core.commit();
    take_all(*q); // The announcement of the attach: later takes show data only.
    return q;
  }

  /// A WebSocket client.
  std::shared_ptr<message_queue> add_client(uint64_t id, filter_type filter) {
    client_attachment att;
    att.id = id;
    att.client = endpoint_id::random();
    att.filter = std::move(filter);
    att.address = "127.0.0.1";
    att.queue = std::make_shared<message_queue>(1000, overflow_policy::disconnect);
    auto q = att.queue;
    core.add_client(std::move(att));
    core.commit();
    return q;
  }

  /// Routes all of `xs` from `src` (without a waker); returns the result.
  route_status route(route_source src, const std::vector<data_message>& xs) {
    size_t pos = 0;
    return routing->route(src, xs.data(), xs.size(), pos);
  }

  endpoint_id self;
  std::shared_ptr<router> routing;
  core_state core;
  std::vector<uint64_t> overflowed;
};

} // namespace broker::internal::test
