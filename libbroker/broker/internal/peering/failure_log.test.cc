#include "broker/internal/peering/failure_log.hh"

#include <catch2/catch.hpp>

using namespace broker::internal;
using namespace std::chrono_literals;

namespace {

const std::string refused = "cannot connect to 127.0.0.1:1: Connection refused";

} // namespace

TEST_CASE("a failing dial logs its first failure and then one summary per interval",
          "[failure_log]") {
  failure_log log{60s};
  failure_log::clock::time_point t0{};
  auto first = log.failed(refused, "retrying every 1 s", t0);
  REQUIRE(first);
  CHECK(*first == refused + "; retrying every 1 s (repeats are summarized every 60 s)");
  int lines = 0;
  std::string last;
  for (int i = 1; i <= 119; ++i)
    if (auto line = log.failed(refused, "retrying every 1 s", t0 + i * 1s)) {
      ++lines;
      last = *line;
    }
  CHECK(lines == 1); // At 60 s.
  CHECK(last == "still failing after 61 attempts (60 since the last line): " + refused
                  + "; retrying every 1 s");
  CHECK(log.failures() == 120);
  CHECK(log.last_logged() == t0 + 60s);
}

TEST_CASE("a new reason is logged at once", "[failure_log]") {
  failure_log log{60s};
  failure_log::clock::time_point t0{};
  CHECK(log.failed(refused, "retrying every 1 s", t0));
  CHECK_FALSE(log.failed(refused, "retrying every 1 s", t0 + 1s));
  auto other = log.failed("peering with 127.0.0.1:1 failed: handshake timed out",
                          "retrying every 1 s", t0 + 2s);
  REQUIRE(other);
  CHECK(*other == "peering with 127.0.0.1:1 failed: handshake timed out; retrying every 1 s "
                  "(attempt 3)");
  CHECK_FALSE(log.failed("peering with 127.0.0.1:1 failed: handshake timed out",
                         "retrying every 1 s", t0 + 3s));
}

TEST_CASE("a success after failures is logged once and starts over", "[failure_log]") {
  failure_log log{60s};
  failure_log::clock::time_point t0{};
  CHECK_FALSE(log.succeeded("peering with 127.0.0.1:1"));
  log.failed(refused, "retrying every 1 s", t0);
  log.failed(refused, "retrying every 1 s", t0 + 1s);
  auto line = log.succeeded("peering with 127.0.0.1:1");
  REQUIRE(line);
  CHECK(*line == "peering with 127.0.0.1:1 succeeded after 2 failed attempts");
  CHECK(log.failures() == 0);
  CHECK_FALSE(log.succeeded("peering with 127.0.0.1:1"));
  // The next failure is a first failure again.
  auto again = log.failed(refused, "retrying every 1 s", t0 + 5s);
  REQUIRE(again);
  CHECK(again->find("repeats are summarized") != std::string::npos);
}

TEST_CASE("a failure without a next step says nothing about retries", "[failure_log]") {
  failure_log log;
  auto line = log.failed(refused, "", {});
  REQUIRE(line);
  CHECK(*line == refused);
}
