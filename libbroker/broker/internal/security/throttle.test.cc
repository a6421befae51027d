#include "broker/internal/security/throttle.hh"

#include <catch2/catch.hpp>

#include <string>

using namespace broker::internal::security;
using namespace std::chrono_literals;

TEST_CASE("the throttle allows a burst of failures, then one per refill", "[security][throttle]") {
  auth_throttle t{3, 10s};
  auto t0 = auth_throttle::clock::time_point{} + 1000s;
  CHECK(t.wait_seconds("a", t0) == 0);
  t.failed("a", t0);
  t.failed("a", t0 + 1s);
  CHECK(t.wait_seconds("a", t0 + 1s) == 0);
  t.failed("a", t0 + 2s);
  // Three failures: locked until the first attempt is earned back, 10 s after the first.
  CHECK(t.wait_seconds("a", t0 + 2s) == 8);
  CHECK(t.wait_seconds("a", t0 + 9500ms) == 1);
  CHECK(t.wait_seconds("b", t0 + 2s) == 0);
  CHECK(t.wait_seconds("a", t0 + 10s) == 0);
  t.failed("a", t0 + 10s);
  CHECK(t.wait_seconds("a", t0 + 10s) == 10);
  // A long quiet spell refills the whole burst.
  CHECK(t.wait_seconds("a", t0 + 100s) == 0);
  t.failed("a", t0 + 100s);
  t.failed("a", t0 + 100s);
  CHECK(t.wait_seconds("a", t0 + 100s) == 0);
}

TEST_CASE("the throttle tracks a bounded number of addresses", "[security][throttle]") {
  auth_throttle t{2, 10s, 100};
  auto t0 = auth_throttle::clock::time_point{} + 1000s;
  t.failed("victim", t0);
  t.failed("victim", t0);
  CHECK(t.wait_seconds("victim", t0) > 0);
  for (int i = 0; i < 1000; ++i)
    t.failed("10.0.0." + std::to_string(i), t0 + 1s);
  CHECK(t.tracked() <= 100);
  // The oldest entry made room first: the victim is forgotten (fails open for it, never
  // closed for others).
  CHECK(t.wait_seconds("victim", t0 + 1s) == 0);
  // Recovered addresses make room before locked ones.
  auth_throttle u{1, 10s, 2};
  u.failed("old", t0);
  u.failed("locked", t0 + 15s);
  u.failed("new", t0 + 16s); // "old" has recovered by now and goes.
  CHECK(u.wait_seconds("locked", t0 + 16s) > 0);
  CHECK(u.tracked() == 2);
}
