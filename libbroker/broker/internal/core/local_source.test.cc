// Sources on a full `block` sink: net_input (a connection's input) parks and resumes from
// the right message; local_source::publish() waits for the consumer, gives up at close,
// shutdown or its timeout; try_publish() never waits and then publishes nothing.

#include "broker/internal/core/local_source.hh"
#include "broker/internal/core/net_input.hh"

#include "broker/internal/core/routing.test.hh"
#include "broker/internal/threads.test.hh"

#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

using namespace broker;
using namespace broker::internal;
using namespace std::chrono_literals;
using namespace broker::internal::test;

namespace {

/// A thread that publishes 0..9 on "/t" through `src`, waiting as long as it takes.
struct waiting_publisher {
  explicit waiting_publisher(local_source& src)
    : thread("publisher", [this, &src] {
        auto xs = local_msgs(0, 9);
        result = src.publish(xs.data(), xs.size(), -1ms, &routed);
        returned = true;
      }) {}

  bool result = false;
  size_t routed = 0;
  std::atomic<bool> returned{false};
  bounded_thread thread; // Last: starts once the members above exist.
};

} // namespace

// -- net_input -------------------------------------------------------------------------

TEST_CASE("a connection's input with nothing pending is flushed at once", "[net_input]") {
  node n;
  net_input in{n.routing, 7, source_kind::remote};
  int woken = 0;
  CHECK(in.flush([&] { ++woken; }));
  CHECK(in.pending() == 0);
  CHECK(woken == 0);
}

TEST_CASE("a connection parks on a full block sink and resumes from the first message "
          "that did not fit",
          "[net_input]") {
  node n;
  auto sink = n.add_local(1, {"/t"}, 4, overflow_policy::block);
  auto other = n.add_local(2, {"/t"}, 100, overflow_policy::drop_newest);
  net_input in{n.routing, 7, source_kind::remote};
  for (auto& x : local_msgs(0, 9))
    in.add(x);
  int woken = 0;
  auto waker = [&] { ++woken; };
  CHECK_FALSE(in.flush(waker));
  CHECK(in.pending() == 6);
  CHECK(in.stats()->parked.load());
  CHECK(in.stats()->pending.load() == 6);
  CHECK(in.stats()->routed.load() == 4);
  // The other sink got no further: a source's messages reach all sinks in one order.
  CHECK(other->size() == 4);
  // Room above the low-water mark (2 of 4) wakes nobody.
  CHECK(pop(*sink, 1) == range(0, 0));
  CHECK(woken == 0);
  CHECK(pop(*sink, 1) == range(1, 1));
  CHECK(woken == 1);
  // Two fit now; then it parks again.
  CHECK_FALSE(in.flush(waker));
  CHECK(in.pending() == 4);
  CHECK(pop(*sink, 10) == range(2, 5));
  CHECK(woken == 2);
  CHECK(in.flush(waker));
  CHECK(in.pending() == 0);
  CHECK(pop(*sink, 10) == range(6, 9));
  CHECK(drain(*other) == range(0, 9));
  CHECK_FALSE(in.stats()->parked.load());
  CHECK(in.stats()->pending.load() == 0);
  CHECK(in.stats()->routed.load() == 10);
  // Reused for the next read.
  for (auto& x : local_msgs(10, 11))
    in.add(x);
  CHECK(in.flush(waker));
  CHECK(pop(*sink, 10) == range(10, 11));
}

TEST_CASE("a parked connection is woken at shutdown and then discards what is pending",
          "[net_input]") {
  node n;
  auto sink = n.add_local(1, {"/t"}, 2, overflow_policy::block);
  net_input in{n.routing, 7, source_kind::remote};
  for (auto& x : local_msgs(0, 4))
    in.add(x);
  int woken = 0;
  CHECK_FALSE(in.flush([&] { ++woken; }));
  n.core.shutdown();
  CHECK(woken == 1);
  CHECK(in.flush([&] { ++woken; }));
  CHECK(in.pending() == 0);
  CHECK(pop(*sink, 10) == range(0, 1));
}

// -- local_source ----------------------------------------------------------------------

TEST_CASE("publish returns at once when everything fits", "[local_source]") {
  node n;
  auto sink = n.add_local(1, {"/t"}, 10, overflow_policy::block);
  local_source src{n.routing, 100};
  auto xs = local_msgs(0, 4);
  size_t routed = 0;
  CHECK(src.publish(xs.data(), xs.size(), 0ms, &routed));
  CHECK(routed == 5);
  CHECK(src.stats()->routed.load() == 5);
  CHECK(pop(*sink, 10) == range(0, 4));
}

TEST_CASE("publish waits on a full block sink until the consumer pops", "[local_source]") {
  node n;
  auto sink = n.add_local(1, {"/t"}, 4, overflow_policy::block);
  local_source src{n.routing, 100};
  waiting_publisher publisher{src};
  REQUIRE(eventually([&] { return src.stats()->parked.load(); }));
  CHECK(sink->size() == 4);
  CHECK(src.stats()->pending.load() == 6);
  CHECK_FALSE(publisher.returned);
  std::vector<int> got;
  while (got.size() < 10) {
    REQUIRE(sink->wait(std::chrono::milliseconds{wait_bound}));
    for (auto v : pop(*sink, 1))
      got.push_back(v);
  }
  publisher.thread.join();
  CHECK(got == range(0, 9));
  CHECK(publisher.result);
  CHECK(publisher.routed == 10);
  CHECK_FALSE(src.stats()->parked.load());
}

TEST_CASE("publish gives up at its timeout and says how many went", "[local_source]") {
  node n;
  auto sink = n.add_local(1, {"/t"}, 4, overflow_policy::block);
  local_source src{n.routing, 100};
  auto xs = local_msgs(0, 9);
  size_t routed = 99;
  CHECK_FALSE(src.publish(xs.data(), xs.size(), 0ms, &routed));
  CHECK(routed == 4);
  CHECK(pop(*sink, 10) == range(0, 3));
  CHECK_FALSE(src.stats()->parked.load());
}

TEST_CASE("close makes a waiting publish return false, and later ones at once",
          "[local_source]") {
  node n;
  auto sink = n.add_local(1, {"/t"}, 4, overflow_policy::block);
  local_source src{n.routing, 100};
  waiting_publisher publisher{src};
  REQUIRE(eventually([&] { return src.stats()->parked.load(); }));
  src.close();
  publisher.thread.join();
  CHECK_FALSE(publisher.result);
  CHECK(publisher.routed == 4);
  CHECK(src.closed());
  CHECK(pop(*sink, 10) == range(0, 3));
  auto ys = local_msgs(10, 10);
  size_t routed = 99;
  CHECK_FALSE(src.publish(ys.data(), ys.size(), -1ms, &routed));
  CHECK(routed == 0);
  CHECK_FALSE(src.try_publish(ys[0]));
  CHECK(sink->size() == 0);
}

TEST_CASE("a waiting publish returns false when the endpoint shuts down",
          "[local_source]") {
  node n;
  n.add_local(1, {"/t"}, 4, overflow_policy::block);
  local_source src{n.routing, 100};
  waiting_publisher publisher{src};
  REQUIRE(eventually([&] { return src.stats()->parked.load(); }));
  // Stop routing first, then close the sinks (which wakes the publisher): it must find
  // routing stopped. (core_state::shutdown() closes first; a publisher woken before the
  // router stops sees only closed sinks and routes the rest to nobody.)
  n.routing->shutdown();
  n.core.shutdown();
  publisher.thread.join();
  CHECK_FALSE(publisher.result);
  CHECK(publisher.routed == 4);
  auto ys = local_msgs(10, 10);
  CHECK_FALSE(src.publish(ys, -1ms));
}

TEST_CASE("try_publish never waits and publishes nothing when a sink is full",
          "[local_source]") {
  node n;
  auto full = n.add_local(1, {"/t"}, 2, overflow_policy::block);
  auto other = n.add_local(2, {"/t"}, 10, overflow_policy::block);
  local_source src{n.routing, 100};
  CHECK(src.try_publish(local_msg("/t", 0)));
  CHECK(src.try_publish(local_msg("/t", 1)));
  CHECK_FALSE(src.try_publish(local_msg("/t", 2))); // `full` is full.
  CHECK(full->size() == 2);
  CHECK(other->size() == 2); // Nothing went anywhere.
  CHECK(src.stats()->routed.load() == 2);
  CHECK(pop(*full, 10) == range(0, 1));
  CHECK(src.try_publish(local_msg("/t", 3)));
  CHECK(pop(*full, 10) == range(3, 3));
  CHECK(drain(*other) == std::vector<int>{0, 1, 3});
  // A full sink with a drop policy does not stop it.
  auto dropping = n.add_local(3, {"/t"}, 1, overflow_policy::drop_newest);
  CHECK(src.try_publish(local_msg("/t", 4)));
  CHECK(src.try_publish(local_msg("/t", 5)));
  CHECK(drain(*dropping) == std::vector<int>{4});
  n.core.shutdown();
  CHECK_FALSE(src.try_publish(local_msg("/t", 6)));
}

TEST_CASE("threads sharing one local_source each keep their order through a small sink",
          "[local_source]") {
  constexpr int threads = 3;
  constexpr int per_thread = 2000;
  node n;
  auto sink = n.add_local(1, {"/t"}, 5, overflow_policy::block);
  local_source src{n.routing, 100};
  std::vector<int> failed(threads, 0);
  std::vector<bounded_thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back("publisher", [&, t] {
      for (int i = 0; i < per_thread;) {
        std::vector<data_message> xs;
        for (int k = 0; k < 1 + i % 4 && i < per_thread; ++k, ++i)
          xs.push_back(local_msg("/t", tagged(t, i)));
        if (!src.publish(xs, std::chrono::milliseconds{wait_bound}))
          ++failed[t];
      }
    });
  per_source_order order{threads};
  bool stalled = false;
  while (order.received < threads * per_thread) {
    if (!sink->wait(std::chrono::milliseconds{wait_bound})) {
      stalled = true;
      break;
    }
    order.see(pop(*sink, 2));
  }
  src.close(); // Releases the publishers should the consumer have given up.
  for (auto& t : ts)
    t.join();
  CHECK_FALSE(stalled);
  CHECK(failed == std::vector<int>(threads, 0));
  CHECK(order.out_of_order == 0);
  CHECK(order.complete(per_thread));
}
