// Drives core_state and its router by hand (no actor, no threads) to pin down exactly which
// messages each overflow policy delivers, drops or blocks.

#include "broker/internal/core/core.hh"

#include <catch2/catch.hpp>

using namespace broker;
using namespace broker::internal;

namespace {

constexpr uint64_t pub_id = 100;

struct fixture {
  fixture() : core(id, make_router()) {
    // The router reports overflows from the routing thread; the test applies them after
    // the route() call, as the core actor would run the posted task.
    routing->on_disconnect([this](uint64_t id) { overflowed.push_back(id); });
  }

  std::shared_ptr<router> make_router() {
    router_options opts;
    opts.id = id;
    routing = std::make_shared<router>(opts);
    return routing;
  }

  std::shared_ptr<local_queue> add_sink(uint64_t hid, size_t capacity, overflow_policy policy,
                                        filter_type filter,
                                        handler_kind kind = handler_kind::subscriber) {
    auto q = std::make_shared<local_queue>(capacity, policy);
    core.add_handler(std::make_shared<local_handler>(hid, kind, q), std::move(filter));
    core.commit();
    return q;
  }

  /// Routes `xs` from `pos` as a local publisher would; applies overflows afterwards.
  route_status route(std::vector<data_message>& xs, size_t& pos) {
    auto res = routing->route(route_source{pub_id, source_kind::local}, xs.data(), xs.size(),
                              pos, [this] { ++room_signals; });
    for (auto hid : std::exchange(overflowed, {}))
      core.on_overflow(hid);
    core.commit();
    return res;
  }

  /// Publishes first..last on `topic`; returns where routing stopped.
  size_t publish_range(int first, int last, const std::string& topic = "/t") {
    pending.clear();
    for (int i = first; i <= last; ++i)
      pending.emplace_back(topic, data{i});
    pos = 0;
    route(pending, pos);
    return pos;
  }

  /// Continues a publish_range() that parked.
  route_status resume() {
    return route(pending, pos);
  }

  endpoint_id id = endpoint_id::random();
  std::shared_ptr<router> routing;
  core_state core;
  std::vector<uint64_t> overflowed;
  std::vector<data_message> pending;
  size_t pos = 0;
  int room_signals = 0;
};

std::vector<int> drain(local_queue& q) {
  std::vector<data_message> xs;
  q.pop(xs, 1000);
  std::vector<int> result;
  for (auto& x : xs)
    result.push_back(static_cast<int>(get<integer>(x.value())));
  return result;
}

std::vector<int> range(int first, int last) {
  std::vector<int> result;
  for (int i = first; i <= last; ++i)
    result.push_back(i);
  return result;
}

} // namespace

TEST_CASE("drop_oldest keeps the newest messages when the queue is full", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 8, overflow_policy::drop_oldest, {"/t"});
  f.publish_range(0, 20);
  CHECK(drain(*q) == range(13, 20));
  auto m = f.core.metrics();
  CHECK(m.dropped(handler_kind::subscriber, overflow_policy::drop_oldest) == 13);
  CHECK(m[handler_kind::subscriber].delivered == 21);
}

TEST_CASE("drop_oldest evicts across batches, keeping arrival order", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 8, overflow_policy::drop_oldest, {"/t"});
  for (int i = 0; i <= 20; ++i)
    f.publish_range(i, i);
  CHECK(drain(*q) == range(13, 20));
  CHECK(f.core.metrics().dropped(handler_kind::subscriber, overflow_policy::drop_oldest) == 13);
}

TEST_CASE("drop_newest discards the incoming message when the queue is full", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 8, overflow_policy::drop_newest, {"/t"});
  f.publish_range(0, 20);
  CHECK(drain(*q) == range(0, 7));
  CHECK(f.core.metrics().dropped(handler_kind::subscriber, overflow_policy::drop_newest) == 13);
  // Room again: later messages arrive.
  f.publish_range(21, 22);
  CHECK(drain(*q) == range(21, 22));
}

TEST_CASE("disconnect closes the subscriber after what fit and reports an error event",
          "[core]") {
  fixture f;
  auto errors = f.add_sink(2, 100, overflow_policy::drop_oldest, {topic{topic::errors}});
  auto q = f.add_sink(1, 8, overflow_policy::disconnect, {"/t"});
  f.publish_range(0, 20);
  CHECK(drain(*q) == range(0, 7));
  CHECK(q->closed());
  auto m = f.core.metrics();
  CHECK(m[handler_kind::subscriber].disconnects == 1);
  CHECK(m.dropped(handler_kind::subscriber, overflow_policy::disconnect) == 13);
  // The handler is gone: one subscriber (the error sink) is left.
  CHECK(m[handler_kind::subscriber].handlers == 1);
  std::vector<data_message> events;
  errors->pop(events, 10);
  REQUIRE(events.size() == 1);
  auto err = to_error(events[0].value());
  REQUIRE(err);
  CHECK(err->code() == ec::backpressure_overflow);
  CHECK_THAT(err->message(), Catch::Contains("exceeded its queue of 8"));
}

TEST_CASE("block parks the source when the queue is full and resumes it on room",
          "[core]") {
  fixture f;
  auto q = f.add_sink(1, 8, overflow_policy::block, {"/t"});
  auto other = f.add_sink(2, 100, overflow_policy::drop_newest, {"/t"});
  CHECK(f.publish_range(0, 20) == 8);
  CHECK(f.core.metrics().suspensions == 1);
  CHECK(q->size() == 8);
  // Per-source order: the other sink got no further than the blocked one.
  CHECK(other->size() == 8);
  // Popping down to the low-water mark (half the capacity) signals room exactly once.
  std::vector<data_message> tmp;
  q->pop(tmp, 3);
  CHECK(f.room_signals == 0);
  q->pop(tmp, 1);
  CHECK(f.room_signals == 1);
  CHECK(f.resume() == route_status::parked);
  CHECK(drain(*q) == range(4, 11));
  CHECK(f.resume() == route_status::parked);
  CHECK(drain(*q) == range(12, 19));
  CHECK(f.resume() == route_status::done);
  CHECK(drain(*q) == range(20, 20));
  CHECK(drain(*other) == range(0, 20));
  CHECK(f.core.metrics().dropped(handler_kind::subscriber, overflow_policy::block) == 0);
}

TEST_CASE("removing the handler a source is parked on wakes the source", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 2, overflow_policy::block, {"/t"});
  auto other = f.add_sink(2, 100, overflow_policy::drop_newest, {"/t"});
  f.publish_range(0, 9);
  CHECK(other->size() == 2);
  f.core.remove_handler(1);
  f.core.commit();
  CHECK(f.room_signals == 1);
  CHECK(q->closed());
  CHECK(f.resume() == route_status::done);
  CHECK(drain(*other) == range(0, 9));
}

TEST_CASE("a handler never receives messages from its own source", "[core]") {
  fixture f;
  auto own = f.add_sink(pub_id, 100, overflow_policy::block, {"/t"}, handler_kind::hub);
  auto other = f.add_sink(2, 100, overflow_policy::block, {"/t"});
  f.publish_range(0, 2);
  CHECK(own->size() == 0);
  CHECK(drain(*other) == range(0, 2));
}

TEST_CASE("overlapping subscriptions of one handler deliver one copy", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 100, overflow_policy::block, {"/t", "/t/x", ""});
  f.publish_range(0, 0, "/t/x/y");
  CHECK(drain(*q) == range(0, 0));
}

TEST_CASE("one message object is shared by every receiver", "[core]") {
  fixture f;
  auto a = f.add_sink(1, 10, overflow_policy::block, {"/t"});
  auto b = f.add_sink(2, 10, overflow_policy::block, {"/"});
  f.publish_range(0, 0);
  std::vector<data_message> xs, ys;
  a->pop(xs, 1);
  b->pop(ys, 1);
  REQUIRE(xs.size() == 1);
  REQUIRE(ys.size() == 1);
  CHECK(xs[0].same_object(ys[0]));
}

TEST_CASE("messages nobody subscribes to are counted as unrouted", "[core]") {
  fixture f;
  f.add_sink(1, 10, overflow_policy::block, {"/other"});
  f.publish_range(0, 4);
  auto m = f.core.metrics();
  CHECK(m.unrouted == 5);
  CHECK(m.processed == 5);
}

TEST_CASE("subscribe and unsubscribe at runtime change what a handler receives",
          "[core]") {
  fixture f;
  auto q = f.add_sink(1, 10, overflow_policy::block, {"/a"});
  f.publish_range(0, 0, "/b");
  CHECK(q->size() == 0);
  f.core.subscribe(1, {"/b"});
  f.core.commit();
  f.publish_range(1, 1, "/b");
  CHECK(drain(*q) == range(1, 1));
  f.core.unsubscribe(1, {"/a", "/b"});
  f.core.commit();
  f.publish_range(2, 2, "/a");
  f.publish_range(3, 3, "/b");
  CHECK(q->size() == 0);
}

TEST_CASE("a change reaches routing only when the core commits it", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 10, overflow_policy::block, {"/a"});
  f.core.subscribe(1, {"/b"});
  f.publish_range(0, 0, "/b"); // Not committed yet: the published snapshot has no /b.
  CHECK(q->size() == 0);
  f.core.commit();
  f.publish_range(1, 1, "/b");
  CHECK(drain(*q) == range(1, 1));
}

TEST_CASE("the core's filter is the minimized union without internal topics", "[core]") {
  fixture f;
  f.add_sink(1, 10, overflow_policy::block, {"/a/b", "/c"});
  f.add_sink(2, 10, overflow_policy::block, {"/a", topic{topic::statuses}});
  CHECK(f.core.filter() == filter_type{"/a", "/c"});
}

TEST_CASE("core events never block: a full block sink drops them and counts it",
          "[core]") {
  fixture f;
  auto q = f.add_sink(1, 1, overflow_policy::block, {topic{topic::errors}});
  f.core.emit_error(error{ec::unspecified, "one"});
  f.core.emit_error(error{ec::unspecified, "two"});
  f.core.commit();
  CHECK(q->size() == 1);
  CHECK(f.core.metrics().dropped(handler_kind::subscriber, overflow_policy::drop_newest) == 1);
}

TEST_CASE("after shutdown nothing routes and waiting sources are woken", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 1, overflow_policy::block, {"/t"});
  CHECK(f.publish_range(0, 3) == 1);
  f.core.shutdown();
  CHECK(f.room_signals == 1);
  CHECK(f.resume() == route_status::closed);
}

namespace {

/// Attaches a peering and returns its send queue.
std::shared_ptr<send_queue> attach_peer(core_state& core, uint64_t id, filter_type filter,
                                        endpoint_id remote = endpoint_id::random()) {
  peer_attachment att;
  att.id = id;
  att.remote = remote;
  att.filter = std::move(filter);
  att.address = "127.0.0.1";
  att.queue = std::make_shared<send_queue>(100, overflow_policy::disconnect);
  att.stats = std::make_shared<source_stats>(source_kind::remote);
  auto q = att.queue;
  core.add_peer(std::move(att));
  core.commit();
  return q;
}

/// Texts of what `q` holds: "v" for a data value, the status code for a status event.
std::vector<std::string> drain_texts(local_queue& q) {
  std::vector<data_message> xs;
  q.pop(xs, 1000);
  std::vector<std::string> result;
  for (auto& x : xs) {
    if (x.topic() == topic::statuses)
      result.push_back(to_string(get<broker::vector>(x.value()).at(1)));
    else
      result.push_back(to_string(x.value()));
  }
  return result;
}

} // namespace

TEST_CASE("a peering's arrival and end are status events", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 100, overflow_policy::block, {topic{topic::statuses}});
  attach_peer(f.core, 7, {});
  CHECK(drain_texts(*q)
        == std::vector<std::string>{"endpoint_discovered", "peer_added"});
  f.core.remove_peer(7, peer_end::lost, "test");
  f.core.commit();
  CHECK(drain_texts(*q) == std::vector<std::string>{"peer_lost", "endpoint_unreachable"});
  CHECK(f.core.peer_filters().empty());
}

TEST_CASE("a peer's routing update replaces its filter and what it receives", "[core]") {
  fixture f;
  auto out = attach_peer(f.core, 7, {"/old"});
  f.core.update_peer_filter(7, {"/new"});
  f.core.commit();
  auto filters = f.core.peer_filters();
  REQUIRE(filters.size() == 1);
  CHECK(filters[0].second == filter_type{"/new"});
  f.publish_range(0, 0, "/old/x");
  f.publish_range(1, 1, "/new/x");
  CHECK(out->size() == 1);
}

TEST_CASE("a peer hears the local subscriptions, and of a change only the news",
          "[core]") {
  fixture f;
  auto out = attach_peer(f.core, 7, {});
  send_batch items;
  std::optional<filter_type> announced;
  out->take(items, announced); // Whatever the attach announced.
  f.add_sink(1, 10, overflow_policy::block, {"/a"});
  announced.reset();
  out->take(items, announced);
  REQUIRE(announced);
  CHECK(*announced == filter_type{"/a"});
  // The same filter again (a second subscriber on /a/b, inside /a): nothing new to say.
  f.add_sink(2, 10, overflow_policy::block, {"/a/b"});
  announced.reset();
  out->take(items, announced);
  CHECK_FALSE(announced);
}

namespace {

/// Refuses topics that start with `denied`, recording each question.
struct test_gate : publish_gate {
  std::string denied;
  std::vector<std::pair<std::string, size_t>> asked;

  bool may_publish(std::string_view topic, size_t n) override {
    asked.emplace_back(std::string{topic}, n);
    return topic.substr(0, denied.size()) != denied;
  }
};

} // namespace

TEST_CASE("a source's publish gate is asked once per run; refused runs are dropped",
          "[core]") {
  fixture f;
  auto q = f.add_sink(1, 100, overflow_policy::block, {"/"});
  test_gate gate;
  gate.denied = "/deny";
  std::vector<data_message> xs;
  for (int i = 0; i < 3; ++i)
    xs.emplace_back("/ok", data{i});
  for (int i = 3; i < 5; ++i)
    xs.emplace_back("/deny/x", data{i});
  xs.emplace_back("/ok", data{5});
  size_t pos = 0;
  auto res = f.routing->route(route_source{pub_id, source_kind::client, &gate}, xs.data(),
                              xs.size(), pos);
  CHECK(res == route_status::done);
  CHECK(pos == xs.size());
  CHECK(drain(*q) == std::vector<int>{0, 1, 2, 5});
  using asked_t = std::vector<std::pair<std::string, size_t>>;
  CHECK(gate.asked == asked_t{{"/ok", 3}, {"/deny/x", 2}, {"/ok", 1}});
  auto m = f.core.metrics();
  CHECK(m.refused == 2);
  CHECK(m.processed == 4);
  CHECK(m.unrouted == 0);
  // Refused even where nobody subscribes; sources without a gate are not asked.
  std::vector<data_message> ys{data_message{"/deny/nobody", data{6}}};
  pos = 0;
  f.routing->route(route_source{pub_id, source_kind::client, &gate}, ys.data(), ys.size(), pos);
  CHECK(f.core.metrics().refused == 3);
  CHECK(f.core.metrics().unrouted == 0);
  f.publish_range(7, 8, "/deny/local");
  CHECK(drain(*q) == std::vector<int>{7, 8});
  CHECK(gate.asked.size() == 4);
}

TEST_CASE("a client's subscriptions can be replaced", "[core]") {
  fixture f;
  client_attachment att;
  att.id = 7;
  att.client = endpoint_id::random();
  att.filter = {"/a"};
  att.queue = std::make_shared<message_queue>(16, overflow_policy::drop_newest);
  f.core.add_client(att);
  f.core.commit();
  f.core.update_client_filter(7, {"/b"});
  f.core.update_client_filter(12345, {"/c"}); // Unknown: ignored.
  f.core.commit();
  CHECK(f.core.filter() == filter_type{"/b"});
}
