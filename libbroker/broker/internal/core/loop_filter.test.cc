// loop_filter: fresh, duplicate and stale per origin, across the window and its wrap.

#include "broker/internal/core/loop_filter.hh"

#include <catch2/catch.hpp>

using namespace broker;
using namespace broker::internal;

namespace {

using sighting = loop_filter::sighting;

constexpr uint64_t window = loop_filter::window;

route_info from(const endpoint_id& origin, uint64_t sequence) {
  return route_info{origin, sequence, 1, 10};
}

} // namespace

TEST_CASE("messages without an origin always pass and are not remembered",
          "[loop_filter]") {
  loop_filter f{endpoint_id::random()};
  CHECK(f.check(from(endpoint_id{}, 0)) == sighting::fresh);
  CHECK(f.check(from(endpoint_id{}, 0)) == sighting::fresh);
  CHECK(f.check(from(endpoint_id{}, 5)) == sighting::fresh);
  CHECK(f.check(from(endpoint_id{}, 1)) == sighting::fresh);
  CHECK(f.origins() == 0);
}

TEST_CASE("our own messages coming back are duplicates", "[loop_filter]") {
  auto self = endpoint_id::random();
  loop_filter f{self};
  CHECK(f.check(from(self, 1)) == sighting::duplicate);
  CHECK(f.check(from(self, 1000000)) == sighting::duplicate);
  CHECK(f.origins() == 0);
}

TEST_CASE("a new sequence number is fresh, the same one again a duplicate",
          "[loop_filter]") {
  loop_filter f{endpoint_id::random()};
  auto a = endpoint_id::random();
  CHECK(f.check(from(a, 1)) == sighting::fresh);
  CHECK(f.check(from(a, 1)) == sighting::duplicate);
  CHECK(f.check(from(a, 2)) == sighting::fresh);
  CHECK(f.check(from(a, 3)) == sighting::fresh);
  CHECK(f.check(from(a, 2)) == sighting::duplicate);
  CHECK(f.check(from(a, 1)) == sighting::duplicate);
  CHECK(f.origins() == 1);
}

TEST_CASE("a message older than one already routed is stale, and its copy a duplicate",
          "[loop_filter]") {
  loop_filter f{endpoint_id::random()};
  auto a = endpoint_id::random();
  CHECK(f.check(from(a, 1)) == sighting::fresh);
  CHECK(f.check(from(a, 4)) == sighting::fresh); // A gap: 2 and 3 took a slower path.
  CHECK(f.check(from(a, 3)) == sighting::stale); // Dropped for order...
  CHECK(f.check(from(a, 3)) == sighting::duplicate); // ...and its copy is no new loss.
  CHECK(f.check(from(a, 2)) == sighting::stale);
  CHECK(f.check(from(a, 5)) == sighting::fresh);
}

TEST_CASE("origins are tracked independently", "[loop_filter]") {
  loop_filter f{endpoint_id::random()};
  auto a = endpoint_id::random();
  auto b = endpoint_id::random();
  CHECK(f.check(from(a, 10)) == sighting::fresh);
  CHECK(f.check(from(b, 1)) == sighting::fresh); // Lower than a's: no matter.
  CHECK(f.check(from(b, 10)) == sighting::fresh);
  CHECK(f.check(from(a, 10)) == sighting::duplicate);
  CHECK(f.check(from(b, 5)) == sighting::stale);
  CHECK(f.origins() == 2);
}

TEST_CASE("the window remembers the last 4096 sequence numbers and no more",
          "[loop_filter]") {
  loop_filter f{endpoint_id::random()};
  auto a = endpoint_id::random();
  for (uint64_t s = 1; s <= window + 10; ++s)
    REQUIRE(f.check(from(a, s)) == sighting::fresh);
  auto highest = window + 10;
  // Inside the window: seen, so duplicates.
  CHECK(f.check(from(a, highest)) == sighting::duplicate);
  CHECK(f.check(from(a, highest - (window - 1))) == sighting::duplicate);
  // Just outside: too old to tell, so stale (never routed again).
  CHECK(f.check(from(a, highest - window)) == sighting::stale);
  CHECK(f.check(from(a, 1)) == sighting::stale);
}

TEST_CASE("sequence numbers exactly a window apart do not mistake each other",
          "[loop_filter]") {
  // s and s + 4096 share a bit of the ring.
  loop_filter f{endpoint_id::random()};
  auto a = endpoint_id::random();
  CHECK(f.check(from(a, 7)) == sighting::fresh);
  CHECK(f.check(from(a, 7 + window)) == sighting::fresh); // Not taken for 7's bit.
  CHECK(f.check(from(a, 7 + window)) == sighting::duplicate);
  CHECK(f.check(from(a, 7)) == sighting::stale); // Now outside the window.
  CHECK(f.check(from(a, 8)) == sighting::stale); // Inside, never seen: stale.
  CHECK(f.check(from(a, 8)) == sighting::duplicate);
}

TEST_CASE("a jump ahead forgets what the skipped numbers' bits held", "[loop_filter]") {
  loop_filter f{endpoint_id::random()};
  auto a = endpoint_id::random();
  SECTION("a jump of more than the window") {
    CHECK(f.check(from(a, 100)) == sighting::fresh);
    auto far = 100 + 2 * window + 50;
    CHECK(f.check(from(a, far)) == sighting::fresh);
    // 100 + 2 * window uses 100's bit and is inside the window: never seen, so stale,
    // not a duplicate.
    CHECK(f.check(from(a, 100 + 2 * window)) == sighting::stale);
    CHECK(f.check(from(a, far - 1)) == sighting::stale);
    CHECK(f.check(from(a, far)) == sighting::duplicate);
  }
  SECTION("a jump of less than the window keeps the bits still inside it") {
    CHECK(f.check(from(a, 1000)) == sighting::fresh);
    CHECK(f.check(from(a, 999)) == sighting::stale); // Now remembered as seen.
    CHECK(f.check(from(a, 5000)) == sighting::fresh); // 4000 ahead.
    CHECK(f.check(from(a, 1000)) == sighting::duplicate);
    CHECK(f.check(from(a, 999)) == sighting::duplicate);
    CHECK(f.check(from(a, 4999)) == sighting::stale); // Skipped over: cleared.
    CHECK(f.check(from(a, 5096)) == sighting::fresh); // The window moves past 1000.
    CHECK(f.check(from(a, 1000)) == sighting::stale);
    CHECK(f.check(from(a, 5000)) == sighting::duplicate);
    // 5095 shares 999's bit and was skipped by the move: cleared, so stale.
    CHECK(f.check(from(a, 999 + window)) == sighting::stale);
  }
}

TEST_CASE("after the window wrapped many times, the recent past is still exact",
          "[loop_filter]") {
  loop_filter f{endpoint_id::random()};
  auto a = endpoint_id::random();
  // Every third number, far beyond several windows.
  uint64_t last = 0;
  for (uint64_t s = 3; s <= 5 * window; s += 3) {
    REQUIRE(f.check(from(a, s)) == sighting::fresh);
    last = s;
  }
  int wrong = 0;
  for (uint64_t s = last - window + 1; s <= last; ++s) {
    auto expected = s % 3 == 0 ? sighting::duplicate : sighting::stale;
    wrong += f.check(from(a, s)) == expected ? 0 : 1;
  }
  CHECK(wrong == 0);
}
