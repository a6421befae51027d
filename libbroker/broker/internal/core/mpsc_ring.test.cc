// mpsc_ring, single-threaded: the overflow policies, what a push builds, pops, growth and
// shrinking (the concurrent side is tested through local_queue and send_queue).

#include "broker/internal/core/mpsc_ring.hh"

#include "broker/internal/core/messages.test.hh"

#include <catch2/catch.hpp>

#include <memory>
#include <vector>

using namespace broker;
using namespace broker::internal;
using broker::internal::test::range;

namespace {

/// The ring with the vocabulary of these tests.
class buffer {
public:
  buffer(size_t capacity, overflow_policy policy) : ring_(capacity, policy) {}

  size_t capacity() const noexcept { return ring_.capacity(); }
  size_t size() const noexcept { return ring_.size(); }
  bool empty() const noexcept { return size() == 0; }
  size_t room() const noexcept { return capacity() > size() ? capacity() - size() : 0; }
  size_t slots() const noexcept { return ring_.slots(); }

  template <class F>
  push_result push_n(size_t n, F&& make) {
    bool was_empty = false;
    return ring_.push(n, std::forward<F>(make), was_empty);
  }

  size_t pop(std::vector<int>& out, size_t max) { return ring_.pop(out, max); }
  size_t take_all(std::vector<int>& out) { return ring_.pop(out, SIZE_MAX); }
  void clear() { ring_.clear(); }

private:
  mpsc_ring<int> ring_;
};

/// Offers first, first+1, ..., first+n-1; records which items push_n built, in order.
push_result offer(buffer& b, int first, size_t n, std::vector<int>* built = nullptr) {
  return b.push_n(n, [&](size_t i) {
    auto x = first + static_cast<int>(i);
    if (built != nullptr)
      built->push_back(x);
    return x;
  });
}

std::vector<int> take(buffer& b) {
  std::vector<int> out;
  b.take_all(out);
  return out;
}

bool same(const push_result& x, size_t accepted, size_t dropped, bool disconnected) {
  return x.accepted == accepted && x.dropped == dropped && x.disconnected == disconnected;
}

} // namespace

TEST_CASE("a capacity of 0 means 1", "[mpsc_ring]") {
  buffer b{0, overflow_policy::drop_newest};
  CHECK(b.capacity() == 1);
  CHECK(same(offer(b, 0, 2), 1, 1, false));
  CHECK(take(b) == range(0, 0));
}

TEST_CASE("an empty push changes nothing under any policy", "[mpsc_ring]") {
  for (auto p : {overflow_policy::block, overflow_policy::drop_oldest,
                 overflow_policy::drop_newest, overflow_policy::disconnect}) {
    buffer b{2, p};
    offer(b, 0, 2);
    CHECK(same(offer(b, 10, 0), 0, 0, false));
    CHECK(take(b) == range(0, 1));
  }
}

TEST_CASE("room is what is left of the capacity and 0 when full", "[mpsc_ring]") {
  buffer b{4, overflow_policy::block};
  CHECK(b.room() == 4);
  CHECK(b.empty());
  offer(b, 0, 3);
  CHECK(b.room() == 1);
  CHECK(b.size() == 3);
  offer(b, 3, 3); // block: the producer made sure; the buffer takes even more.
  CHECK(b.size() == 6);
  CHECK(b.room() == 0);
}

TEST_CASE("block appends every offered item, also beyond the capacity", "[mpsc_ring]") {
  buffer b{2, overflow_policy::block};
  std::vector<int> built;
  CHECK(same(offer(b, 0, 5, &built), 5, 0, false));
  CHECK(built == range(0, 4));
  CHECK(take(b) == range(0, 4));
}

TEST_CASE("drop_newest appends what fits and drops the rest of the batch",
          "[mpsc_ring]") {
  buffer b{4, overflow_policy::drop_newest};
  std::vector<int> built;
  SECTION("a batch smaller than the room") {
    CHECK(same(offer(b, 0, 3, &built), 3, 0, false));
    CHECK(built == range(0, 2));
    CHECK(same(offer(b, 3, 3, &built), 1, 2, false));
    CHECK(built == range(0, 3)); // 4 and 5 were never built.
    CHECK(take(b) == range(0, 3));
  }
  SECTION("a batch larger than the capacity") {
    CHECK(same(offer(b, 0, 10, &built), 4, 6, false));
    CHECK(built == range(0, 3));
    CHECK(take(b) == range(0, 3));
  }
  SECTION("a full buffer takes nothing and builds nothing") {
    offer(b, 0, 4);
    CHECK(same(offer(b, 4, 2, &built), 0, 2, false));
    CHECK(built.empty());
    CHECK(take(b) == range(0, 3));
  }
}

TEST_CASE("drop_oldest evicts the oldest items to make room for the whole batch",
          "[mpsc_ring]") {
  buffer b{4, overflow_policy::drop_oldest};
  std::vector<int> built;
  SECTION("a batch that fits evicts nothing") {
    CHECK(same(offer(b, 0, 4, &built), 4, 0, false));
    CHECK(take(b) == range(0, 3));
  }
  SECTION("a batch smaller than the capacity evicts as many as it lacks room for") {
    offer(b, 0, 3);
    CHECK(same(offer(b, 3, 3, &built), 3, 2, false));
    CHECK(built == range(3, 5));
    CHECK(take(b) == range(2, 5));
  }
  SECTION("a batch larger than the capacity keeps its newest, builds only those, and "
          "evicts everything queued") {
    offer(b, 100, 2);
    // 6 of the batch never enter, 2 queued ones are evicted: 8 drops. Every offered item
    // counts as accepted (evictions count as drops), so accepted - dropped is what the
    // size grew by: 10 - 8 = 2.
    CHECK(same(offer(b, 0, 10, &built), 10, 8, false));
    CHECK(built == range(6, 9));
    CHECK(take(b) == range(6, 9));
  }
  SECTION("capacity 1 keeps only the newest item") {
    buffer one{1, overflow_policy::drop_oldest};
    CHECK(same(offer(one, 0, 1), 1, 0, false));
    CHECK(same(offer(one, 1, 1), 1, 1, false));
    CHECK(same(offer(one, 2, 3, &built), 3, 3, false));
    CHECK(built == range(4, 4));
    CHECK(take(one) == range(4, 4));
  }
}

TEST_CASE("drop_oldest destroys evicted items at once", "[mpsc_ring]") {
  // The items may hold the last reference to a message: it must not linger in the buffer.
  mpsc_ring<std::shared_ptr<int>> b{2, overflow_policy::drop_oldest};
  bool was_empty = false;
  auto first = std::make_shared<int>(1);
  std::weak_ptr<int> watch = first;
  std::vector<std::shared_ptr<int>> xs{std::move(first), std::make_shared<int>(2)};
  b.push(xs.size(), [&](size_t i) { return std::move(xs[i]); }, was_empty);
  xs = {std::make_shared<int>(3)};
  b.push(xs.size(), [&](size_t i) { return std::move(xs[i]); }, was_empty);
  CHECK(watch.expired());
  CHECK(b.size() == 2);
}

TEST_CASE("disconnect appends what fits and reports the overflow", "[mpsc_ring]") {
  buffer b{4, overflow_policy::disconnect};
  std::vector<int> built;
  SECTION("a batch that fits exactly is no overflow") {
    CHECK(same(offer(b, 0, 4), 4, 0, false));
  }
  SECTION("a batch larger than the room") {
    offer(b, 0, 2);
    CHECK(same(offer(b, 2, 5, &built), 2, 3, true));
    CHECK(built == range(2, 3));
    CHECK(take(b) == range(0, 3));
  }
  SECTION("a batch larger than the capacity") {
    CHECK(same(offer(b, 0, 9, &built), 4, 5, true));
    CHECK(built == range(0, 3));
  }
  SECTION("capacity 1") {
    buffer one{1, overflow_policy::disconnect};
    CHECK(same(offer(one, 0, 1), 1, 0, false));
    CHECK(same(offer(one, 1, 1), 0, 1, true));
    CHECK(take(one) == range(0, 0));
  }
}

TEST_CASE("push builds only the items that enter", "[mpsc_ring]") {
  mpsc_ring<std::unique_ptr<int>> b{3, overflow_policy::drop_newest};
  std::vector<std::unique_ptr<int>> xs;
  for (int i = 0; i < 4; ++i)
    xs.push_back(std::make_unique<int>(i));
  bool was_empty = false;
  auto res = b.push(xs.size(), [&](size_t i) { return std::move(xs[i]); }, was_empty);
  CHECK(res.accepted == 3);
  CHECK(xs[0] == nullptr);
  CHECK(xs[2] == nullptr);
  CHECK(xs[3] != nullptr); // Dropped: never moved from.
  std::vector<std::unique_ptr<int>> out;
  b.pop(out, SIZE_MAX);
  REQUIRE(out.size() == 3);
  CHECK(*out[2] == 2);
}

TEST_CASE("pop takes at most max items from the front and appends them to out",
          "[mpsc_ring]") {
  buffer b{10, overflow_policy::block};
  offer(b, 0, 5);
  std::vector<int> out{-1};
  CHECK(b.pop(out, 0) == 0);
  CHECK(b.pop(out, 2) == 2);
  CHECK(out == std::vector<int>{-1, 0, 1});
  CHECK(b.size() == 3);
  CHECK(b.pop(out, 100) == 3);
  CHECK(out == std::vector<int>{-1, 0, 1, 2, 3, 4});
  CHECK(b.empty());
  CHECK(b.pop(out, 1) == 0);
}

TEST_CASE("take_all hands over everything and the buffer works on", "[mpsc_ring]") {
  buffer b{10, overflow_policy::drop_newest};
  offer(b, 0, 3);
  std::vector<int> out;
  CHECK(b.take_all(out) == 3); // Fast path: a swap.
  CHECK(out == range(0, 2));
  CHECK(b.empty());
  CHECK(b.room() == 10);
  offer(b, 3, 2);
  CHECK(b.take_all(out) == 2); // `out` not empty: appended.
  CHECK(out == range(0, 4));
  std::vector<int> after_pop;
  offer(b, 5, 4);
  b.pop(after_pop, 1); // A moved head: appended, not swapped.
  CHECK(b.take_all(after_pop) == 3);
  CHECK(after_pop == range(5, 8));
  CHECK(b.empty());
}

TEST_CASE("order survives many pops and pushes as the ring wraps and grows",
          "[mpsc_ring]") {
  // Popping one at a time moves the head around the ring; pushing grows it while items
  // sit on both sides of the wrap.
  buffer b{1000, overflow_policy::block};
  int next_in = 0;
  int next_out = 0;
  std::vector<int> out;
  for (int round = 0; round < 50; ++round) {
    offer(b, next_in, 100);
    next_in += 100;
    for (int i = 0; i < 70 + round % 30; ++i) {
      out.clear();
      REQUIRE(b.pop(out, 1) == 1);
      REQUIRE(out.front() == next_out);
      ++next_out;
    }
    REQUIRE(b.size() == static_cast<size_t>(next_in - next_out));
    REQUIRE(b.room() == 1000 - b.size());
  }
  out.clear();
  b.take_all(out);
  CHECK(out == range(next_out, next_in - 1));
}

TEST_CASE("a popped item leaves no reference behind in the ring", "[mpsc_ring]") {
  mpsc_ring<std::shared_ptr<int>> b{10, overflow_policy::block};
  std::vector<std::shared_ptr<int>> xs{std::make_shared<int>(0), std::make_shared<int>(1)};
  std::weak_ptr<int> watch = xs[0];
  bool was_empty = false;
  b.push(xs.size(), [&](size_t i) { return xs[i]; }, was_empty);
  xs.clear();
  std::vector<std::shared_ptr<int>> out;
  b.pop(out, 1);
  out.clear();
  CHECK(watch.expired());
  CHECK(b.size() == 1);
}

TEST_CASE("clear empties the buffer and restores the room", "[mpsc_ring]") {
  buffer b{4, overflow_policy::disconnect};
  offer(b, 0, 4);
  std::vector<int> out;
  b.pop(out, 1);
  b.clear();
  CHECK(b.empty());
  CHECK(b.room() == 4);
  CHECK(same(offer(b, 10, 4), 4, 0, false));
  CHECK(take(b) == range(10, 13));
}

TEST_CASE("the ring grows in powers of two and shrinks back when it stays idle",
          "[mpsc_ring]") {
  buffer b{1000, overflow_policy::drop_newest};
  CHECK(b.slots() == 0); // An idle sink holds no slots.
  offer(b, 0, 300);
  CHECK(b.slots() == 512);
  take(b);
  CHECK(b.slots() == 512); // One small take is no reason to shrink.
  for (int i = 0; i < 64 * 6; ++i) {
    offer(b, i, 1);
    take(b);
  }
  CHECK(b.slots() == mpsc_ring<int>::min_slots);
  // A burst beyond the capacity still keeps only the capacity.
  CHECK(same(offer(b, 0, 1500), 1000, 500, false));
  CHECK(b.slots() == 1024);
}
