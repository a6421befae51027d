#include "broker/internal/security/audit.hh"

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace broker::internal::security;

TEST_CASE("audit slots are stable and listed in order", "[security][audit]") {
  audit_log audit;
  auto& a = audit.slot("worker", "deny publish \"/x/\"");
  auto& b = audit.slot("worker", "");
  auto& again = audit.slot("worker", "deny publish \"/x/\"");
  CHECK(&a == &again);
  CHECK(&a != &b);
  // Many more slots do not move the first ones.
  for (int i = 0; i < 1000; ++i)
    audit.slot("id" + std::to_string(i), "");
  CHECK(&audit.slot("worker", "") == &b);
  a.refused_publishes += 3;
  b.refused_subscriptions += 1;
  auto rows = audit.rows();
  REQUIRE(rows.size() == 1002);
  CHECK(rows.back().identity == "worker");
  CHECK(rows.back().rule == "deny publish \"/x/\"");
  CHECK(rows.back().refused_publishes == 3);
  CHECK(rows[rows.size() - 2].rule.empty());
  CHECK(rows[rows.size() - 2].refused_subscriptions == 1);
}

TEST_CASE("audit counters take increments from many threads", "[security][audit]") {
  audit_log audit;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&audit] {
      for (int i = 0; i < 10000; ++i)
        audit.slot("w", "r").refused_publishes.fetch_add(1, std::memory_order_relaxed);
    });
  for (auto& t : threads)
    t.join();
  CHECK(audit.rows().front().refused_publishes == 40000);
}

TEST_CASE("auth_failure_log writes a burst per period, then counts", "[security][audit]") {
  std::vector<std::string> lines;
  auth_failure_log log{[&lines](std::string_view line) { lines.emplace_back(line); }, 3,
                       std::chrono::seconds{10}};
  auto t0 = auth_failure_log::clock::now();
  CHECK(log.failed("token", "10.0.0.7:51234", "the credential belongs to no identity", t0));
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "authentication failed (token) from 10.0.0.7:51234: the credential "
                    "belongs to no identity");
  CHECK(log.failed("token", "a", "r", t0));
  CHECK(log.failed("token", "a", "r", t0 + std::chrono::seconds{1}));
  for (int i = 0; i < 100; ++i)
    CHECK_FALSE(log.failed("token", "a", "r", t0 + std::chrono::seconds{9}));
  CHECK(lines.size() == 3);
  CHECK(log.suppressed() == 100);
  // A new period: the first line reports what was left out.
  CHECK(log.failed("certificate", "b", "r", t0 + std::chrono::seconds{10}));
  REQUIRE(lines.size() == 4);
  CHECK(lines[3] == "authentication failed (certificate) from b: r (100 more failures were "
                    "not logged before this one)");
  CHECK(log.failed("certificate", "b", "r", t0 + std::chrono::seconds{11}));
  CHECK(lines[4].find("more failures") == std::string::npos);
}

TEST_CASE("auth_failure_log escapes what came from the network", "[security][audit]") {
  std::vector<std::string> lines;
  auth_failure_log log{[&lines](std::string_view line) { lines.emplace_back(line); }};
  log.failed("token", "evil\nfake log line\x1b[31m", "r");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find('\n') == std::string::npos);
  CHECK(lines[0].find("evil\\x0afake log line\\x1b[31m") != std::string::npos);
  CHECK(printable(std::string(300, 'x')).size() == 203);
  CHECK(printable("a\\b") == "a\\\\b");
}
