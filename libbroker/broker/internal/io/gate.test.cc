// gate: pass() runs only while open; close() waits for the passes in progress.

#include "broker/internal/io/gate.hh"

#include "broker/internal/threads.test.hh"

#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

using namespace broker::internal;
using broker::internal::test::bounded_thread;
using broker::internal::test::eventually;

TEST_CASE("a closed gate runs nothing and says so", "[gate]") {
  gate g;
  g.close();
  int runs = 0;
  CHECK_FALSE(g.pass([&] { ++runs; }));
  CHECK(runs == 0);
  CHECK_FALSE(g.is_open());
}

TEST_CASE("an open gate runs the function once per pass and says so", "[gate]") {
  gate g;
  CHECK(g.is_open());
  int runs = 0;
  CHECK(g.pass([&] { ++runs; }));
  CHECK(g.pass([&] { ++runs; }));
  CHECK(runs == 2);
}

TEST_CASE("closing a gate twice is harmless and it stays closed", "[gate]") {
  gate g;
  g.close();
  g.close();
  int runs = 0;
  CHECK_FALSE(g.pass([&] { ++runs; }));
  CHECK(runs == 0);
}

TEST_CASE("a pass may nest another pass of the same gate", "[gate]") {
  gate g;
  int inner = 0;
  CHECK(g.pass([&] { CHECK(g.pass([&] { ++inner; })); }));
  CHECK(inner == 1);
  // Both passes ended: close() must not wait for anything.
  g.close();
  CHECK_FALSE(g.is_open());
}

TEST_CASE("close waits until a pass in progress on another thread has ended", "[gate]") {
  gate g;
  std::atomic<bool> inside{false};
  std::atomic<bool> release{false};
  std::atomic<bool> pass_finished{false};
  std::atomic<bool> close_returned{false};
  std::atomic<bool> finished_before_close_returned{false};
  std::atomic<bool> late_pass_ran{false};
  bounded_thread passer{"passer", [&] {
    g.pass([&] {
      inside = true;
      eventually([&] { return release.load(); });
      pass_finished = true;
    });
  }};
  REQUIRE(eventually([&] { return inside.load(); }));
  bounded_thread closer{"closer", [&] {
    g.close();
    finished_before_close_returned = pass_finished.load();
    close_returned = true;
  }};
  // The closer has shut the gate, but is still waiting for the pass in progress.
  REQUIRE(eventually([&] { return !g.is_open(); }));
  for (int i = 0; i < 1000; ++i)
    std::this_thread::yield();
  CHECK_FALSE(close_returned);
  // A pass that comes now is refused, while close() is still waiting.
  CHECK_FALSE(g.pass([&] { late_pass_ran = true; }));
  CHECK_FALSE(late_pass_ran);
  release = true;
  closer.join();
  passer.join();
  CHECK(close_returned);
  CHECK(finished_before_close_returned);
}

TEST_CASE("many threads pass concurrently, and nothing runs after close returns", "[gate]") {
  constexpr int threads = 4;
  // Each thread passes until it is refused (at most this often, should close() not work).
  constexpr int max_passes = 10'000'000;
  gate g;
  std::atomic<int> ran{0};
  std::vector<int> accepted(threads, 0);
  std::vector<int> refused(threads, 0); // Not vector<bool>: threads write their own element.
  std::vector<bounded_thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back("passer", [&, t] {
      for (int i = 0; i < max_passes; ++i) {
        if (!g.pass([&] { ran.fetch_add(1); })) {
          refused[t] = 1;
          break;
        }
        ++accepted[t];
      }
    });
  // Close while all of them pass.
  REQUIRE(eventually([&] { return ran.load() >= 1000; }));
  g.close();
  auto ran_at_close = ran.load();
  for (auto& t : ts)
    t.join();
  int total_accepted = 0;
  for (int t = 0; t < threads; ++t) {
    CHECK(refused[t] == 1);
    total_accepted += accepted[t];
  }
  // Whatever passed ran exactly once, and nothing ran after close() returned.
  CHECK(ran.load() == total_accepted);
  CHECK(ran.load() == ran_at_close);
}
