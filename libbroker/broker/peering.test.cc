// Peering between endpoints in one process, over real loopback TCP.

#include "broker/endpoint.hh"
#include "broker/endpoint.test.hh"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

using namespace broker;
using namespace std::chrono_literals;
using broker::test::connect;
using broker::test::eventually;

namespace {

bool has_prefix(const filter_type& xs, const std::string& prefix) {
  for (auto& x : xs)
    if (x.string() == prefix)
      return true;
  return false;
}

std::vector<int> drain_ints(subscriber& sub, size_t n) {
  std::vector<int> result;
  for (auto& msg : sub.get(n, 10s))
    result.push_back(static_cast<int>(get<integer>(msg.value())));
  return result;
}

} // namespace

TEST_CASE("two peered endpoints exchange messages by subscription", "[peering]") {
  endpoint a, b;
  auto sub_b = b.make_subscriber({"/b"});
  auto sub_a = a.make_subscriber({"/a"});
  connect(a, b);
  REQUIRE(eventually([&] { return has_prefix(a.peer_subscriptions(), "/b"); }));
  REQUIRE(eventually([&] { return has_prefix(b.peer_subscriptions(), "/a"); }));
  for (int i = 0; i < 100; ++i) {
    a.publish("/b/x", data{i});
    b.publish("/a/y", data{i});
    a.publish("/nobody", data{i});
  }
  std::vector<int> expected;
  for (int i = 0; i < 100; ++i)
    expected.push_back(i);
  CHECK(drain_ints(sub_b, 100) == expected);
  CHECK(drain_ints(sub_a, 100) == expected);
  CHECK(!sub_a.get(50ms));
}

TEST_CASE("a subscription made after peering reaches the peer as a routing update",
          "[peering]") {
  endpoint a, b;
  connect(a, b);
  auto sub = b.make_subscriber({"/late"});
  REQUIRE(eventually([&] { return has_prefix(a.peer_subscriptions(), "/late"); }));
  a.publish("/late/1", data{1});
  auto msg = sub.get(10s);
  REQUIRE(msg);
  CHECK(msg->topic() == "/late/1");
}

TEST_CASE("status events report peer_added and peer_lost", "[peering]") {
  endpoint a;
  auto statuses = a.make_status_subscriber(true);
  auto b = std::make_unique<endpoint>();
  connect(a, *b);
  auto added = false;
  REQUIRE(eventually([&] {
    for (auto& ev : statuses.poll())
      if (auto* st = std::get_if<status>(&ev); st && st->code() == sc::peer_added)
        added = st->context().node == b->node_id();
    return added;
  }));
  b.reset(); // Shuts down: BYE, then close.
  bool gone = false;
  REQUIRE(eventually([&] {
    for (auto& ev : statuses.poll())
      if (auto* st = std::get_if<status>(&ev);
          st && (st->code() == sc::peer_lost || st->code() == sc::peer_removed))
        gone = true;
    return gone;
  }));
  CHECK(a.peers().empty());
}

TEST_CASE("messages cross a line of three nodes", "[peering]") {
  endpoint a, b, c;
  auto sub = c.make_subscriber({"/line"});
  connect(a, b);
  connect(b, c);
  // a learns about /line through b's announcement (b forwards for c).
  REQUIRE(eventually([&] { return has_prefix(a.peer_subscriptions(), "/line"); }));
  for (int i = 0; i < 50; ++i)
    a.publish("/line/x", data{i});
  std::vector<int> expected;
  for (int i = 0; i < 50; ++i)
    expected.push_back(i);
  CHECK(drain_ints(sub, 50) == expected);
}

TEST_CASE("a triangle delivers each message exactly once at each node", "[peering]") {
  endpoint a, b, c;
  auto sub_b = b.make_subscriber({"/tri"});
  auto sub_c = c.make_subscriber({"/tri"});
  connect(a, b);
  connect(b, c);
  connect(c, a);
  REQUIRE(eventually([&] { return has_prefix(a.peer_subscriptions(), "/tri"); }));
  for (int i = 0; i < 20; ++i)
    a.publish("/tri", data{i});
  std::vector<int> expected;
  for (int i = 0; i < 20; ++i)
    expected.push_back(i);
  auto got_b = drain_ints(sub_b, 20);
  auto got_c = drain_ints(sub_c, 20);
  std::sort(got_b.begin(), got_b.end());
  std::sort(got_c.begin(), got_c.end());
  CHECK(got_b == expected);
  CHECK(got_c == expected);
  // Nothing else arrives: copies over the other path were suppressed.
  CHECK(!sub_b.get(300ms));
  CHECK(!sub_c.get(10ms));
  CHECK(b.metrics().duplicates + c.metrics().duplicates > 0);
}

TEST_CASE("unpeer ends a peering gracefully", "[peering]") {
  endpoint a, b;
  auto port = b.listen("127.0.0.1", 0);
  REQUIRE(port);
  REQUIRE(a.peer("127.0.0.1", *port, 0s));
  REQUIRE(eventually([&] { return b.peers().size() == 1; }));
  CHECK(a.unpeer("127.0.0.1", *port));
  REQUIRE(eventually([&] { return a.peers().empty() && b.peers().empty(); }));
  CHECK(!a.unpeer("127.0.0.1", *port));
}

TEST_CASE("peering with a closed port fails without retry", "[peering]") {
  endpoint a;
  auto statuses = a.make_status_subscriber();
  // Grab an ephemeral port and release it so nobody listens there.
  uint16_t port;
  {
    endpoint tmp;
    auto p = tmp.listen("127.0.0.1", 0);
    REQUIRE(p);
    port = *p;
  }
  CHECK(!a.peer("127.0.0.1", port, 0s));
  // The application also learns about it as an error event.
  auto ev = statuses.get(10s);
  REQUIRE(ev);
  auto* err = std::get_if<error>(&*ev);
  REQUIRE(err != nullptr);
  CHECK(*err == ec::peer_unavailable);
  CHECK_THAT(err->message(), Catch::Contains(std::to_string(port)));
}
