// local_queue: readiness of the eventfd, room requests and their wakers, close, and
// concurrent producers with one consumer.

#include "broker/internal/core/local_queue.hh"

#include "broker/internal/core/messages.test.hh"
#include "broker/internal/threads.test.hh"

#include <catch2/catch.hpp>

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

using namespace broker;
using namespace broker::internal;
using namespace std::chrono_literals;
using namespace broker::internal::test;

namespace {

bool readable(const local_queue& q) {
  pollfd pfd{q.fd(), POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) != 0;
}

push_result push(local_queue& q, int first, int last) {
  auto xs = local_msgs(first, last);
  return q.push(xs);
}

/// What a waiting source waits on: set by its waker, on any thread.
struct wake_state {
  std::mutex mtx;
  std::condition_variable cv;
  bool woken = false;

  void reset() {
    std::lock_guard<std::mutex> guard{mtx};
    woken = false;
  }

  void wake() {
    std::lock_guard<std::mutex> guard{mtx};
    woken = true;
    cv.notify_all();
  }

  /// False if nobody woke us within the bound.
  bool wait() {
    std::unique_lock<std::mutex> guard{mtx};
    return cv.wait_for(guard, wait_bound, [this] { return woken; });
  }
};

} // namespace

TEST_CASE("a new local queue is empty, open and not readable", "[local_queue]") {
  local_queue q{4, overflow_policy::block};
  CHECK(q.fd() >= 0);
  CHECK(q.size() == 0);
  CHECK_FALSE(q.closed());
  CHECK_FALSE(readable(q));
  CHECK(pop(q, 10).empty());
  CHECK_FALSE(q.wait(0ms));
}

TEST_CASE("the eventfd is readable exactly while the queue is not empty", "[local_queue]") {
  local_queue q{8, overflow_policy::block};
  push(q, 0, 0);
  CHECK(readable(q));
  push(q, 1, 2);
  CHECK(readable(q));
  CHECK(pop(q, 2) == range(0, 1));
  CHECK(readable(q)); // One left.
  CHECK(pop(q, 2) == range(2, 2));
  CHECK_FALSE(readable(q));
  // And again for the next burst.
  push(q, 3, 3);
  CHECK(readable(q));
  CHECK(q.wait(0ms));
  CHECK(pop(q, 5) == range(3, 3));
  CHECK_FALSE(readable(q));
}

TEST_CASE("popping an empty queue changes nothing, and the next burst is seen",
          "[local_queue]") {
  // pop() of an empty queue returns before touching the descriptor (a node polls its
  // event subscriber before every wait); the readiness must stay right around it.
  local_queue q{8, overflow_policy::block};
  CHECK(pop(q, 4).empty());
  CHECK_FALSE(readable(q));
  push(q, 0, 1);
  CHECK(pop(q, 4) == range(0, 1));
  CHECK(pop(q, 4).empty());
  CHECK_FALSE(readable(q));
  CHECK_FALSE(q.wait(0ms));
  push(q, 2, 2);
  CHECK(readable(q));
  CHECK(q.wait(0ms));
  CHECK(pop(q, 4) == range(2, 2));
  q.close();
  CHECK(pop(q, 4).empty());
  CHECK(readable(q)); // Closed: readable for good, so consumers see the end.
}

TEST_CASE("the eventfd is written once per burst, not once per push", "[local_queue]") {
  local_queue q{8, overflow_policy::block};
  push(q, 0, 0);
  push(q, 1, 1);
  push(q, 2, 3);
  // The counter says how often it was written since the last drain.
  uint64_t counter = 0;
  REQUIRE(::read(q.fd(), &counter, sizeof(counter)) == sizeof(counter));
  CHECK(counter == 1);
}

TEST_CASE("pushes that drop everything leave the readiness as it was", "[local_queue]") {
  local_queue q{2, overflow_policy::drop_newest};
  push(q, 0, 1);
  auto res = push(q, 2, 4);
  CHECK(res.accepted == 0);
  CHECK(res.dropped == 3);
  CHECK(pop(q, 10) == range(0, 1));
  CHECK_FALSE(readable(q));
  CHECK(q.size() == 0);
}

TEST_CASE("close keeps the eventfd readable and the queue drains to the end",
          "[local_queue]") {
  SECTION("closed while empty") {
    local_queue q{4, overflow_policy::block};
    q.close();
    CHECK(q.closed());
    CHECK(readable(q));
    CHECK(pop(q, 10).empty());
    CHECK(readable(q));
    CHECK_FALSE(q.wait(0ms)); // Nothing to read: the end.
  }
  SECTION("closed with messages queued") {
    local_queue q{4, overflow_policy::block};
    push(q, 0, 2);
    q.close();
    CHECK(readable(q));
    CHECK(q.wait(0ms));
    CHECK(pop(q, 10) == range(0, 2));
    CHECK(readable(q)); // Still readable: the consumer must notice the end.
    CHECK_FALSE(q.wait(0ms));
  }
  SECTION("closed twice") {
    local_queue q{4, overflow_policy::block};
    q.close();
    q.close();
    CHECK(readable(q));
  }
}

TEST_CASE("pushes after close are ignored and count as nothing", "[local_queue]") {
  local_queue q{4, overflow_policy::drop_newest};
  push(q, 0, 0);
  q.close();
  auto res = push(q, 1, 3);
  CHECK(res.accepted == 0);
  CHECK(res.dropped == 0);
  CHECK_FALSE(res.disconnected);
  CHECK(q.size() == 1);
  CHECK(pop(q, 10) == range(0, 0));
}

TEST_CASE("an overflow under disconnect closes the queue after what fit", "[local_queue]") {
  local_queue q{3, overflow_policy::disconnect};
  auto res = push(q, 0, 4);
  CHECK(res.accepted == 3);
  CHECK(res.dropped == 2);
  CHECK(res.disconnected);
  CHECK(q.closed());
  CHECK(push(q, 5, 5).accepted == 0);
  CHECK(pop(q, 10) == range(0, 2));
  CHECK(readable(q));
}

TEST_CASE("request_room says yes at once when the messages fit", "[local_queue]") {
  local_queue q{4, overflow_policy::block};
  int woken = 0;
  push(q, 0, 1);
  CHECK(q.request_room(2, [&] { ++woken; }));
  push(q, 2, 3);
  CHECK_FALSE(q.request_room(1, [&] { ++woken; }));
  CHECK(pop(q, 4).size() == 4);
  // Only the waker of the refused request runs.
  CHECK(woken == 1);
}

TEST_CASE("each waiter is woken once when the consumer pops down to the low-water mark",
          "[local_queue]") {
  local_queue q{8, overflow_policy::block}; // Low-water mark: 4.
  push(q, 0, 7);
  int a = 0;
  int b = 0;
  int c = 0;
  CHECK_FALSE(q.request_room(1, [&] { ++a; }));
  CHECK_FALSE(q.request_room(1, [&] { ++b; }));
  CHECK_FALSE(q.request_room(3, [&] { ++c; }));
  CHECK(pop(q, 3).size() == 3); // 5 left: above the mark.
  CHECK(a + b + c == 0);
  CHECK(pop(q, 1).size() == 1); // 4 left: at the mark.
  CHECK(a == 1);
  CHECK(b == 1);
  CHECK(c == 1);
  CHECK(pop(q, 4).size() == 4);
  CHECK(a == 1); // Once only.
  CHECK(b == 1);
  CHECK(c == 1);
}

TEST_CASE("a capacity-1 queue wakes its waiter when it is popped empty", "[local_queue]") {
  local_queue q{1, overflow_policy::block};
  push(q, 0, 0);
  int woken = 0;
  CHECK_FALSE(q.request_room(1, [&] { ++woken; }));
  CHECK(pop(q, 1) == range(0, 0));
  CHECK(woken == 1);
  CHECK(q.request_room(1, [&] { ++woken; }));
}

TEST_CASE("close wakes every waiter once, and later requests succeed at once",
          "[local_queue]") {
  local_queue q{2, overflow_policy::block};
  push(q, 0, 1);
  int a = 0;
  int b = 0;
  CHECK_FALSE(q.request_room(1, [&] { ++a; }));
  CHECK_FALSE(q.request_room(1, [&] { ++b; }));
  q.close();
  CHECK(a == 1);
  CHECK(b == 1);
  CHECK(readable(q));
  q.close();
  pop(q, 10);
  CHECK(a == 1);
  CHECK(b == 1);
  int c = 0;
  CHECK(q.request_room(100, [&] { ++c; }));
  CHECK(c == 0);
}

TEST_CASE("wait returns once another thread pushes or closes", "[local_queue]") {
  local_queue q{4, overflow_policy::block};
  SECTION("a push") {
    bounded_thread producer{"producer", [&] { push(q, 0, 0); }};
    CHECK(q.wait(std::chrono::milliseconds{wait_bound}));
    producer.join();
    CHECK(pop(q, 1) == range(0, 0));
  }
  SECTION("a close") {
    bounded_thread closer{"closer", [&] { q.close(); }};
    CHECK_FALSE(q.wait(std::chrono::milliseconds{wait_bound}));
    closer.join();
    CHECK(q.closed());
  }
}

TEST_CASE("concurrent producers lose nothing and keep their own order", "[local_queue]") {
  // Four producers push runs of 1..7 messages into a small `block` queue, waiting for room
  // as a source does (request_room, then the waker); one consumer pops. Any lost wake-up
  // stalls a producer (a failed bounded wait); any loss or reordering shows in the values.
  constexpr int producers = 4;
  constexpr int per_producer = 5000;
  local_queue q{16, overflow_policy::block};
  std::vector<int> stalls(producers, 0);
  std::vector<bounded_thread> ts;
  for (int p = 0; p < producers; ++p)
    ts.emplace_back("producer", [&, p] {
      // Shared with the wakers: a waker the queue still holds must not outlive it.
      auto st = std::make_shared<wake_state>();
      int next = 0;
      while (next < per_producer) {
        auto k = std::min(1 + (next % 7), per_producer - next);
        st->reset();
        if (!q.request_room(static_cast<size_t>(k), [st] { st->wake(); })) {
          if (!st->wait()) {
            ++stalls[p];
            return;
          }
          continue; // Woken: ask again.
        }
        std::vector<data_message> xs;
        for (int i = 0; i < k; ++i)
          xs.push_back(local_msg("/t", tagged(p, next + i)));
        q.push(xs);
        next += k;
      }
    });
  per_source_order order{producers};
  bool stalled = false;
  while (order.received < producers * per_producer) {
    if (!q.wait(std::chrono::milliseconds{wait_bound})) {
      stalled = true;
      break;
    }
    order.see(pop(q, 5));
  }
  q.close(); // Releases producers should the consumer have given up.
  for (auto& t : ts)
    t.join();
  CHECK_FALSE(stalled);
  CHECK(stalls == std::vector<int>(producers, 0));
  CHECK(order.out_of_order == 0);
  CHECK(order.received == producers * per_producer);
  CHECK(order.complete(per_producer));
  CHECK(q.size() == 0);
}
