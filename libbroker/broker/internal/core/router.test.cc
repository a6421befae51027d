// router: the forwarding rules between local sinks, peers and WebSocket clients, and the
// order of sequence numbers and sources when several threads route at once.

#include "broker/internal/core/router.hh"

#include "broker/internal/core/local_source.hh"
#include "broker/internal/core/routing.test.hh"
#include "broker/internal/threads.test.hh"

#include <catch2/catch.hpp>

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

using namespace broker;
using namespace broker::internal;
using namespace std::chrono_literals;
using namespace broker::internal::test;

namespace {

constexpr route_source local_src{100, source_kind::local};

constexpr uint64_t peer_a = 7;
constexpr uint64_t peer_b = 8;
constexpr uint64_t peer_c = 9;

route_info route(const endpoint_id& origin, uint64_t seq, uint16_t ttl, uint8_t hops = 0) {
  return route_info{origin, seq, hops, ttl};
}

} // namespace

// -- where messages go -------------------------------------------------------------------

TEST_CASE("a message from a peer goes neither back to that peer nor to its origin",
          "[router]") {
  node n;
  auto ra = endpoint_id::random();
  auto rb = endpoint_id::random();
  auto rc = endpoint_id::random();
  auto a = n.add_peer(peer_a, ra, {"/t"});
  auto b = n.add_peer(peer_b, rb, {"/t"});
  auto c = n.add_peer(peer_c, rc, {"/t"});
  auto sub = n.add_local(1, {"/t"});
  // Published by C, relayed to us by A.
  n.route({peer_a, source_kind::remote}, {from_peer("/t", 1, route(rc, 1, 5))});
  // Published by A itself.
  n.route({peer_a, source_kind::remote}, {from_peer("/t", 2, route(ra, 1, 5))});
  CHECK(values(take_all(*a)).empty());
  CHECK(values(take_all(*b)) == std::vector<int>{1, 2});
  CHECK(values(take_all(*c)) == std::vector<int>{2});
  CHECK(drain(*sub) == std::vector<int>{1, 2});
}

TEST_CASE("a relayed message keeps origin and sequence, one hop more and one TTL less",
          "[router]") {
  node n;
  auto origin = endpoint_id::random();
  n.add_peer(peer_a, endpoint_id::random(), {"/t"});
  auto b = n.add_peer(peer_b, endpoint_id::random(), {"/t"});
  n.route({peer_a, source_kind::remote}, {from_peer("/t", 1, route(origin, 42, 5, 2))});
  auto items = take_all(*b);
  REQUIRE(items.size() == 1);
  CHECK(items[0].route.origin == origin);
  CHECK(items[0].route.sequence == 42);
  CHECK(items[0].route.hops == 3);
  CHECK(items[0].route.ttl == 4);
}

TEST_CASE("a message whose TTL is used up is delivered locally but not relayed",
          "[router]") {
  node n;
  auto origin = endpoint_id::random();
  n.add_peer(peer_a, endpoint_id::random(), {"/t"});
  auto b = n.add_peer(peer_b, endpoint_id::random(), {"/t"});
  auto sub = n.add_local(1, {"/t"});
  auto client = n.add_client(2, {"/t"});
  n.route({peer_a, source_kind::remote},
          {from_peer("/t", 1, route(origin, 1, 2)), from_peer("/t", 2, route(origin, 2, 1)),
           from_peer("/t", 3, route(origin, 3, 0)), from_peer("/t", 4, route(origin, 4, 3))});
  // TTL 2 arrives at B with 1; TTL 1 and 0 end here.
  auto items = take_all(*b);
  CHECK(values(items) == std::vector<int>{1, 4});
  REQUIRE(items.size() == 2);
  CHECK(items[0].route.ttl == 1);
  CHECK(items[1].route.ttl == 2);
  CHECK(drain(*sub) == std::vector<int>{1, 2, 3, 4});
  CHECK(values(take_all(*client)) == std::vector<int>{1, 2, 3, 4});
}

TEST_CASE("our own messages leave with our origin, rising sequence numbers and broker.ttl",
          "[router]") {
  node n{false, 9};
  auto a = n.add_peer(peer_a, endpoint_id::random(), {"/t"});
  n.route(local_src, {local_msg("/t", 1), local_msg("/t", 2)});
  n.route(local_src, {local_msg("/t", 3)});
  auto items = take_all(*a);
  REQUIRE(items.size() == 3);
  for (size_t i = 0; i < items.size(); ++i) {
    CHECK(items[i].route.origin == n.self);
    CHECK(items[i].route.sequence == i + 1);
    CHECK(items[i].route.hops == 0);
    CHECK(items[i].route.ttl == 9);
  }
}

TEST_CASE("a Broker peer's message gets our origin and the next sequence when relayed",
          "[router]") {
  // Broker peers send no origin: entering our overlay, the message becomes ours, so that
  // our nodes can tell its copies apart. It shares the sequence with our own messages.
  node n;
  n.add_peer(peer_a, endpoint_id::random(), {"/t"});
  auto b = n.add_peer(peer_b, endpoint_id::random(), {"/t"});
  auto sub = n.add_local(1, {"/t"});
  n.route(local_src, {local_msg("/t", 0)});
  n.route({peer_a, source_kind::remote},
          {from_peer("/t", 1, route(endpoint_id{}, 0, 5)),
           from_peer("/t", 2, route(endpoint_id{}, 0, 5, 1))});
  n.route(local_src, {local_msg("/t", 3)});
  auto items = take_all(*b);
  REQUIRE(items.size() == 4);
  for (size_t i = 0; i < items.size(); ++i) {
    CHECK(items[i].route.origin == n.self);
    CHECK(items[i].route.sequence == i + 1);
  }
  CHECK(items[1].route.ttl == 4);
  CHECK(items[2].route.hops == 2);
  CHECK(items[3].route.ttl == 16);
  // Without an origin there is no loop suppression: the same message twice is delivered
  // twice (only its TTL ends a loop).
  n.route({peer_a, source_kind::remote}, {from_peer("/t", 1, route(endpoint_id{}, 0, 5))});
  CHECK(drain(*sub) == std::vector<int>{0, 1, 2, 3, 1});
}

TEST_CASE("copies of a message from another path and stale ones are routed no further",
          "[router]") {
  node n;
  auto origin = endpoint_id::random();
  n.add_peer(peer_a, endpoint_id::random(), {"/t"});
  n.add_peer(peer_b, endpoint_id::random(), {"/t"});
  auto c = n.add_peer(peer_c, endpoint_id::random(), {"/t"});
  auto sub = n.add_local(1, {"/t"});
  n.route({peer_a, source_kind::remote}, {from_peer("/t", 5, route(origin, 5, 9))});
  n.route({peer_b, source_kind::remote}, {from_peer("/t", 5, route(origin, 5, 9))});
  n.route({peer_b, source_kind::remote}, {from_peer("/t", 3, route(origin, 3, 9))});
  // Our own message coming back around a cycle.
  n.route({peer_b, source_kind::remote}, {from_peer("/t", 99, route(n.self, 1, 9))});
  CHECK(drain(*sub) == std::vector<int>{5});
  CHECK(values(take_all(*c)) == std::vector<int>{5});
  auto m = n.routing->counters();
  CHECK(m.duplicates == 2);
  CHECK(m.out_of_order == 1);
}

TEST_CASE("reserved topics never reach peers, even those subscribed to everything",
          "[router]") {
  node n;
  auto a = n.add_peer(peer_a, endpoint_id::random(), {"", "<$>"});
  auto b = n.add_peer(peer_b, endpoint_id::random(), {""});
  auto sub = n.add_local(1, {"<$>/x"});
  n.route(local_src, {local_msg("<$>/x/y", 1)});
  n.route({peer_a, source_kind::remote},
          {from_peer("<$>/x/z", 2, route(endpoint_id::random(), 1, 5))});
  n.route(local_src, {local_msg("/public", 3)});
  CHECK(drain(*sub) == std::vector<int>{1, 2});
  CHECK(values(take_all(*a)) == std::vector<int>{3});
  CHECK(values(take_all(*b)) == std::vector<int>{3});
}

TEST_CASE("the core's own events reach local subscribers and never peers", "[router]") {
  node n;
  auto a = n.add_peer(peer_a, endpoint_id::random(), {""});
  auto sub = n.add_local(1, {"/evt"});
  n.route({0, source_kind::core}, {local_msg("/evt", 1)});
  CHECK(drain(*sub) == std::vector<int>{1});
  CHECK(take_all(*a).empty());
}

TEST_CASE("disable-forwarding stops relaying peers' and clients' messages, not ours",
          "[router]") {
  node n{true};
  auto a = n.add_peer(peer_a, endpoint_id::random(), {"/t"});
  auto b = n.add_peer(peer_b, endpoint_id::random(), {"/t"});
  auto sub = n.add_local(1, {"/t"});
  auto other_client = n.add_client(2, {"/t"});
  n.route({peer_a, source_kind::remote},
          {from_peer("/t", 1, route(endpoint_id::random(), 1, 5))});
  n.route({3, source_kind::client}, {local_msg("/t", 2)});
  n.route(local_src, {local_msg("/t", 3)});
  n.route({4, source_kind::store}, {local_msg("/t", 4)});
  CHECK(values(take_all(*a)) == std::vector<int>{3, 4});
  CHECK(values(take_all(*b)) == std::vector<int>{3, 4});
  CHECK(drain(*sub) == std::vector<int>{1, 2, 3, 4});
  CHECK(values(take_all(*other_client)) == std::vector<int>{1, 2, 3, 4});
}

TEST_CASE("without disable-forwarding, clients' messages reach peers", "[router]") {
  node n;
  auto a = n.add_peer(peer_a, endpoint_id::random(), {"/t"});
  n.route({3, source_kind::client}, {local_msg("/t", 2)});
  auto items = take_all(*a);
  REQUIRE(items.size() == 1);
  CHECK(items[0].route.origin == n.self);
}

TEST_CASE("store commands wait for room in a peer instead of overflowing it", "[router]") {
  node n;
  auto a = n.add_peer(peer_a, endpoint_id::random(), {"/s"}, 2);
  std::vector<data_message> xs;
  for (int i = 0; i < 3; ++i)
    xs.push_back(data_message{
      new message_impl("/s", data{i}, message_kind::command)});
  size_t pos = 0;
  int woken = 0;
  auto res = n.routing->route({5, source_kind::store}, xs.data(), xs.size(), pos,
                              [&] { ++woken; });
  CHECK(res == route_status::parked);
  CHECK(pos == 2);
  CHECK_FALSE(a->closed()); // Not disconnected.
  CHECK(values(take_all(*a)) == std::vector<int>{0, 1});
  CHECK(woken == 1);
  res = n.routing->route({5, source_kind::store}, xs.data(), xs.size(), pos);
  CHECK(res == route_status::done);
  CHECK(values(take_all(*a)) == std::vector<int>{2});
}

// -- several threads ---------------------------------------------------------------------

TEST_CASE("store commands never overflow a small peer while its consumer takes at once",
          "[router]") {
  // The consumer (a peering's strand, or a thread writing through) may take between the
  // router's look at the room and its registration as a waiter: then only what fits may
  // go, not the whole batch (which would overflow the queue and cut the peering off).
  constexpr int total = 20000;
  node n;
  auto a = n.add_peer(peer_a, endpoint_id::random(), {"/s"}, 4);
  std::vector<int> got;
  {
    bounded_thread consumer{"consumer", [&] {
                              send_batch batch;
                              std::optional<filter_type> ann;
                              while (got.size() < static_cast<size_t>(total) && !a->closed()) {
                                batch.clear();
                                a->take(batch, ann);
                                for (auto& x : values(batch))
                                  got.push_back(x);
                                std::this_thread::yield();
                              }
                            }};
    std::vector<data_message> xs;
    for (int i = 0; i < total; ++i)
      xs.push_back(data_message{new message_impl("/s", data{i}, message_kind::command)});
    size_t pos = 0;
    std::atomic<int> woken{0};
    while (pos < xs.size() && !a->closed()) {
      auto end = std::min(xs.size(), pos + 8);
      std::vector<data_message> batch(xs.begin() + pos, xs.begin() + end);
      size_t at = 0;
      int seen = woken.load();
      auto res = n.routing->route({5, source_kind::store}, batch.data(), batch.size(), at,
                                  [&] { ++woken; });
      pos += at;
      if (res == route_status::parked)
        while (woken.load() == seen && !a->closed())
          std::this_thread::yield();
    }
  }
  CHECK_FALSE(a->closed());
  CHECK_FALSE(a->overflowed());
  CHECK(n.overflowed.empty());
  REQUIRE(got.size() == static_cast<size_t>(total));
  int out_of_order = 0;
  for (int i = 0; i < total; ++i)
    out_of_order += got[static_cast<size_t>(i)] != i;
  CHECK(out_of_order == 0);
}


TEST_CASE("sequence numbers on a link rise strictly while four threads publish at once",
          "[router]") {
  // Each thread publishes through its own local_source; the origin lock must keep the
  // numbering and the pushes to the peer in one order.
  constexpr int threads = 4;
  constexpr int per_thread = 3000;
  node n;
  auto a = n.add_peer(peer_a, endpoint_id::random(), {"/t"}, threads * per_thread + 10);
  auto b = n.add_peer(peer_b, endpoint_id::random(), {"/t"}, threads * per_thread + 10);
  {
    std::vector<bounded_thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back("publisher", [&n, t] {
        local_source src{n.routing, static_cast<uint64_t>(200 + t)};
        std::vector<data_message> xs;
        int next = 0;
        while (next < per_thread) {
          xs.clear();
          for (int k = 0; k < 1 + next % 5 && next < per_thread; ++k, ++next)
            xs.push_back(local_msg("/t", tagged(t, next)));
          src.publish(xs, -1ms);
        }
      });
  }
  for (auto& q : {a, b}) {
    auto items = take_all(*q);
    REQUIRE(items.size() == static_cast<size_t>(threads * per_thread));
    int not_rising = 0;
    per_source_order order{threads};
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].route.sequence != i + 1) // Rising by one: none lost, none reordered.
        ++not_rising;
      order.see(static_cast<int>(get<integer>(items[i].msg.value())));
    }
    CHECK(not_rising == 0);
    CHECK(order.out_of_order == 0);
  }
}

TEST_CASE("four sources publishing into one small block sink keep their own order",
          "[router]") {
  // The sink holds 8; the sources park on it and are woken as one consumer pops, so
  // every source is parked and resumed many times.
  constexpr int sources = 4;
  constexpr int per_source = 3000;
  node n;
  auto q = n.add_local(1, {"/t"}, 8, overflow_policy::block);
  std::vector<int> failed(sources, 0);
  std::vector<bounded_thread> ts;
  for (int s = 0; s < sources; ++s)
    ts.emplace_back("publisher", [&n, &failed, s] {
      local_source src{n.routing, static_cast<uint64_t>(300 + s)};
      for (int i = 0; i < per_source;) {
        std::vector<data_message> xs;
        for (int k = 0; k < 1 + i % 6 && i < per_source; ++k, ++i)
          xs.push_back(local_msg("/t", tagged(s, i)));
        if (!src.publish(xs, std::chrono::milliseconds{wait_bound}))
          ++failed[s];
      }
    });
  per_source_order order{sources};
  bool stalled = false;
  while (order.received < sources * per_source) {
    if (!q->wait(std::chrono::milliseconds{wait_bound})) {
      stalled = true;
      break;
    }
    order.see(pop(*q, 3));
  }
  for (auto& t : ts)
    t.join();
  CHECK_FALSE(stalled);
  CHECK(failed == std::vector<int>(sources, 0));
  CHECK(order.out_of_order == 0);
  CHECK(order.complete(per_source));
  CHECK(n.routing->counters().suspensions > 0);
}
