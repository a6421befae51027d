// Drives core_state by hand (no actor, no threads) to pin down exactly which messages each
// overflow policy delivers, drops or blocks.

#include "broker/internal/core/core.hh"

#include <catch2/catch.hpp>

using namespace broker;
using namespace broker::internal;

namespace {

constexpr uint64_t pub_id = 100;

struct fixture {
  core_state core{core_options{endpoint_id::random(), 1024}};
  std::shared_ptr<source_inbox> inbox = std::make_shared<source_inbox>(pub_id, 1000);
  int room_signals = 0;

  fixture() { core.add_source(inbox); }

  std::shared_ptr<local_queue> add_sink(uint64_t id, size_t capacity, overflow_policy policy,
                                        filter_type filter,
                                        handler_kind kind = handler_kind::subscriber) {
    auto q = std::make_shared<local_queue>(capacity, policy);
    q->on_room([this] { ++room_signals; });
    core.add_handler(std::make_unique<local_handler>(id, kind, q), std::move(filter));
    return q;
  }

  void publish_range(int first, int last, const std::string& topic = "/t") {
    std::vector<data_message> xs;
    for (int i = first; i <= last; ++i)
      xs.emplace_back(topic, data{i});
    inbox->push(xs, std::chrono::milliseconds{0});
    core.on_wake(pub_id);
  }
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
  f.publish_range(0, 20);
  auto m = f.core.metrics();
  CHECK(m.suspended_sources == 1);
  CHECK(q->size() == 8);
  // Per-source order: the other sink got no further than the blocked one.
  CHECK(other->size() == 8);
  // The source's window still holds what was not delivered.
  CHECK(f.inbox->buffered() == 13);
  // Popping down to the low-water mark signals room exactly once.
  std::vector<data_message> tmp;
  q->pop(tmp, 3);
  CHECK(f.room_signals == 0);
  q->pop(tmp, 1);
  CHECK(f.room_signals == 1);
  f.core.on_room(1);
  CHECK(q->size() == 8);
  auto got = drain(*q);
  CHECK(got == range(4, 11));
  f.core.on_room(1);
  got = drain(*q);
  CHECK(got == range(12, 19));
  f.core.on_room(1);
  CHECK(drain(*q) == range(20, 20));
  CHECK(f.core.metrics().suspended_sources == 0);
  CHECK(drain(*other) == range(0, 20));
  CHECK(f.inbox->buffered() == 0);
  CHECK(f.core.metrics().dropped(handler_kind::subscriber, overflow_policy::block) == 0);
}

TEST_CASE("a wake for a parked source is remembered and served after it resumes",
          "[core]") {
  fixture f;
  auto q = f.add_sink(1, 4, overflow_policy::block, {"/t"});
  f.publish_range(0, 5);   // 0..3 delivered, parked at 4.
  f.publish_range(6, 7);   // Arrives while parked.
  CHECK(drain(*q) == range(0, 3));
  f.core.on_room(1);
  CHECK(drain(*q) == range(4, 7));
  CHECK(f.core.metrics().suspended_sources == 0);
}

TEST_CASE("removing the handler a source is parked on resumes the source", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 2, overflow_policy::block, {"/t"});
  auto other = f.add_sink(2, 100, overflow_policy::drop_newest, {"/t"});
  f.publish_range(0, 9);
  CHECK(other->size() == 2);
  f.core.remove_handler(1);
  CHECK(drain(*other) == range(0, 9));
  CHECK(q->closed());
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
  CHECK(f.inbox->buffered() == 0);
}

TEST_CASE("subscribe and unsubscribe at runtime change what a handler receives",
          "[core]") {
  fixture f;
  auto q = f.add_sink(1, 10, overflow_policy::block, {"/a"});
  f.publish_range(0, 0, "/b");
  CHECK(q->size() == 0);
  f.core.subscribe(1, {"/b"});
  f.publish_range(1, 1, "/b");
  CHECK(drain(*q) == range(1, 1));
  f.core.unsubscribe(1, {"/a", "/b"});
  f.publish_range(2, 2, "/a");
  f.publish_range(3, 3, "/b");
  CHECK(q->size() == 0);
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
  f.core.settle();
  CHECK(q->size() == 1);
  CHECK(f.core.metrics().dropped(handler_kind::subscriber, overflow_policy::drop_newest) == 1);
}

TEST_CASE("a removed source still delivers what it had pending", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 100, overflow_policy::block, {"/t"});
  std::vector<data_message> xs;
  for (int i = 0; i < 5; ++i)
    xs.emplace_back("/t", data{i});
  f.inbox->push(xs, std::chrono::milliseconds{0});
  f.core.remove_source(pub_id);
  CHECK(drain(*q) == range(0, 4));
}

namespace {

/// Attaches a peering whose input goes through `inbox` (one road) and returns its id.
uint64_t attach_peer(core_state& core, uint64_t id, std::shared_ptr<source_inbox> inbox,
                     filter_type filter) {
  peer_attachment att;
  att.id = id;
  att.remote = endpoint_id::random();
  att.filter = std::move(filter);
  att.address = "127.0.0.1";
  att.queue = std::make_shared<send_queue>(100, overflow_policy::disconnect);
  att.inbox = std::move(inbox);
  core.add_peer(std::move(att));
  core.settle();
  return id;
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

TEST_CASE("a peering's end is applied after the messages it delivered", "[core]") {
  fixture f;
  auto q = f.add_sink(1, 100, overflow_policy::block, {"/t", topic{topic::statuses}});
  auto inbox = std::make_shared<source_inbox>(7, 100);
  attach_peer(f.core, 7, inbox, {});
  drain_texts(*q); // endpoint_discovered, peer_added
  input_batch in;
  for (int i = 0; i < 3; ++i)
    in.msgs.emplace_back("/t", data{i});
  in.add_event(source_event::make_detach(peer_end::lost, "test"));
  inbox->push_final(in);
  f.core.on_wake(7);
  CHECK(drain_texts(*q) == std::vector<std::string>{"0", "1", "2", "peer_lost",
                                                    "endpoint_unreachable"});
}

TEST_CASE("a peer's routing update takes effect exactly where it stands in its input",
          "[core]") {
  fixture f;
  auto inbox = std::make_shared<source_inbox>(7, 100);
  attach_peer(f.core, 7, inbox, {"/old"});
  auto before = f.core.metrics().processed;
  input_batch in;
  in.msgs.emplace_back("/t", data{1});
  in.add_event(source_event::make_filter({"/new"}));
  in.msgs.emplace_back("/t", data{2});
  REQUIRE(inbox->try_push_some(in));
  f.core.on_wake(7);
  auto filters = f.core.peer_filters();
  REQUIRE(filters.size() == 1);
  CHECK(filters[0].second == filter_type{"/new"});
  // The update sits between the two messages, which both went through.
  CHECK(f.core.metrics().processed == before + 2);
}
