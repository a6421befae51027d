// The status snapshot of the core: per-handler counters, sources, the Broker-shaped split of
// waiting messages. Drives core_state by hand, like core.test.cc.

#include "broker/internal/ops/core_status.hh"

#include "broker/internal/core/core.hh"

#include <catch2/catch.hpp>

using namespace broker;
using namespace broker::internal;

namespace {

/// A source routing through the fixture's router, as a connection would (net_input.hh).
struct test_source {
  net_input in;

  test_source(std::shared_ptr<router> r, uint64_t id, source_kind kind)
    : in(std::move(r), id, kind) {}
};

struct fixture {
  endpoint_id id = endpoint_id::random();
  std::shared_ptr<router> routing = std::make_shared<router>(router_options{id});
  core_state core{id, routing};

  std::shared_ptr<test_source> add_publisher(uint64_t sid,
                                             source_kind kind = source_kind::local) {
    auto src = std::make_shared<test_source>(routing, sid, kind);
    core.add_source(sid, src->in.stats());
    return src;
  }

  std::shared_ptr<local_queue> add_sink(uint64_t id, size_t capacity, overflow_policy policy,
                                        filter_type filter,
                                        handler_kind kind = handler_kind::subscriber) {
    auto q = std::make_shared<local_queue>(capacity, policy);
    core.add_handler(std::make_shared<local_handler>(id, kind, q), std::move(filter));
    core.commit();
    return q;
  }

  void publish(test_source& src, int n, const std::string& topic,
               message_kind kind = message_kind::data) {
    for (int i = 0; i < n; ++i)
      src.in.add(data_message{new message_impl(topic, data{i}, kind)});
    src.in.flush([] {});
  }

  const handler_status& find(const core_status& st, uint64_t id) {
    for (auto& h : st.handlers)
      if (h.id == id)
        return h;
    FAIL("no handler " << id);
    throw std::logic_error("unreachable");
  }
};

} // namespace

TEST_CASE("the status counts deliveries and drops per handler, not only per kind",
          "[core_status]") {
  fixture f;
  auto pub = f.add_publisher(100);
  auto fast = f.add_sink(1, 100, overflow_policy::drop_newest, {"/t"});
  auto slow = f.add_sink(2, 4, overflow_policy::drop_newest, {"/t"});
  f.publish(*pub, 10, "/t");
  auto st = collect_core_status(f.core, 0);
  auto& a = f.find(st, 1);
  auto& b = f.find(st, 2);
  CHECK(a.delivered == 10);
  CHECK(a.dropped == 0);
  CHECK(a.buffered == 10);
  CHECK(b.delivered == 4);
  CHECK(b.dropped == 6);
  CHECK(b.buffered == 4);
  CHECK(b.capacity == 4);
  CHECK(b.policy == overflow_policy::drop_newest);
  CHECK(st.metrics.dropped(handler_kind::subscriber, overflow_policy::drop_newest) == 6);
}

TEST_CASE("the status lists handlers in id order with their subscriptions", "[core_status]") {
  fixture f;
  f.add_sink(7, 10, overflow_policy::block, {"/b", "/a"}, handler_kind::hub);
  f.add_sink(3, 10, overflow_policy::block, {"/c"});
  auto st = collect_core_status(f.core, 0);
  REQUIRE(st.handlers.size() == 2);
  CHECK(st.handlers[0].id == 3);
  CHECK(st.handlers[1].id == 7);
  CHECK(st.handlers[1].kind == handler_kind::hub);
  CHECK(st.handlers[1].filters);
  CHECK(st.handlers[1].filter == std::vector<std::string>{"/a", "/b"});
  CHECK(st.announced == std::vector<std::string>{"/a", "/b", "/c"});
}

TEST_CASE("messages routed by a hub's source count as received by that hub; others are "
          "publishers",
          "[core_status]") {
  fixture f;
  f.add_sink(5, 100, overflow_policy::block, {"/x"}, handler_kind::hub);
  auto hub_in = f.add_publisher(5);
  auto pub = f.add_publisher(100);
  f.add_sink(1, 100, overflow_policy::block, {"/t"});
  f.publish(*hub_in, 3, "/t");
  f.publish(*pub, 4, "/t");
  auto st = collect_core_status(f.core, 0);
  auto& hub = f.find(st, 5);
  CHECK(hub.has_source);
  CHECK(hub.received == 3);
  CHECK(st.publishers == 1);
  CHECK(st.published == 4);
  CHECK_FALSE(f.find(st, 1).has_source);
}

TEST_CASE("store commands count as processed commands", "[core_status]") {
  fixture f;
  auto pub = f.add_publisher(100);
  f.publish(*pub, 2, "/t");
  f.publish(*pub, 3, "/s", message_kind::command);
  auto st = collect_core_status(f.core, 0);
  CHECK(st.metrics.processed == 5);
  CHECK(st.metrics.processed_commands == 3);
}

TEST_CASE("messages of a parked source are data waiting for room", "[core_status]") {
  fixture f;
  auto pub = f.add_publisher(100);
  f.add_sink(1, 2, overflow_policy::block, {"/t"});
  f.publish(*pub, 5, "/t");
  auto st = collect_core_status(f.core, 0);
  CHECK(st.metrics.suspended_sources == 1);
  CHECK(st.waiting_data == 3);
  CHECK(st.waiting_commands == 0);
}

TEST_CASE("messages of a parked store are commands waiting for room", "[core_status]") {
  fixture f;
  auto store = f.add_publisher(100, source_kind::store);
  f.add_sink(1, 2, overflow_policy::block, {"/t"});
  f.publish(*store, 5, "/t");
  auto st = collect_core_status(f.core, 0);
  CHECK(st.waiting_commands == 3);
  CHECK(st.waiting_data == 0);
}
