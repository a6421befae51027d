#include "broker/internal/security/policy.hh"

#include "broker/internal/security/rules_file.hh"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace broker::internal::security;

namespace {

std::shared_ptr<const rule_set> rules(const std::string& text,
                                      std::shared_ptr<audit_log> audit = nullptr) {
  auto result = load_rules(text, "rules.conf", std::move(audit));
  if (!result)
    FAIL(result.error_value().message());
  return *result;
}

const std::string token_rules = "identity.d.tokens = [\"" + hash_token("t1")
                                + "\"]\nidentity.d.publish = [\"/a/\"]\n"
                                  "identity.d.subscribe = [\"/s/\"]\n";

} // namespace

TEST_CASE("a store starts allowing everything and publishes whole sets", "[security][policy]") {
  policy_store store;
  CHECK_FALSE(store.current()->enforcing());
  auto g0 = store.generation();
  auto rs = rules(token_rules);
  store.publish(rs);
  CHECK(store.generation() == g0 + 1);
  CHECK(store.current() == rs);
  store.publish(nullptr);
  CHECK_FALSE(store.current()->enforcing());
}

TEST_CASE("a view sees a publish at its next refresh only", "[security][policy]") {
  policy_store store;
  policy_view view{store};
  const auto* before = &view.rules();
  CHECK_FALSE(view.refresh());
  store.publish(rules(token_rules));
  CHECK(&view.rules() == before); // Not yet.
  CHECK(view.refresh());
  CHECK(&view.rules() != before);
  CHECK(view.rules().enforcing());
  CHECK_FALSE(view.refresh());
}

TEST_CASE("a guard checks, counts refusals and follows reloads", "[security][policy]") {
  auto audit = std::make_shared<audit_log>();
  policy_store store{rules(token_rules, audit)};
  guard g{store, credential::from_token("t1")};
  CHECK(g.status() == auth_status::ok);
  CHECK(g.identity() == "d");
  CHECK(g.check_publish("/a/x").allowed);
  auto v = g.check_publish("/b");
  CHECK_FALSE(v.allowed);
  CHECK(v.by->counters->refused_publishes == 1);
  CHECK(g.rules().identity_counters(g.rules().find("d")).refused_publishes == 1);
  auto subs = g.check_subscribe({"/s/", "/x/"});
  CHECK(subs[0].outcome == subscribe_outcome::allowed);
  CHECK(subs[1].outcome == subscribe_outcome::refused);
  CHECK(g.rules().identity_counters(g.rules().find("d")).refused_subscriptions == 1);
  CHECK(g.check_receive("/s/y").allowed);
  CHECK_FALSE(g.check_receive("/elsewhere").allowed);
  CHECK(g.rules().identity_counters(g.rules().find("d")).refused_deliveries == 1);
  SECTION("new rules apply to the live guard at its next check") {
    store.publish(rules(token_rules + "identity.d.deny-publish = [\"/a/secret\"]\n", audit));
    CHECK_FALSE(g.check_publish("/a/secret").allowed);
    CHECK(g.check_publish("/a/x").allowed);
    CHECK_FALSE(g.revoked());
    // The counters continued where they were.
    CHECK(g.check_publish("/b").by->counters->refused_publishes == 2);
  }
  SECTION("a revoked token loses everything and says so") {
    store.publish(rules("identity.d.tokens = [\"" + hash_token("t2")
                          + "\"]\nidentity.d.publish = [\"/a/\"]\n",
                        audit));
    CHECK_FALSE(g.check_publish("/a/x").allowed);
    CHECK(g.revoked());
    CHECK(g.status() == auth_status::unknown);
    CHECK(g.identity().empty());
  }
  SECTION("poll_reload reports each reload once, so that subscriptions can be redone") {
    CHECK_FALSE(g.poll_reload());
    store.publish(rules(token_rules + "identity.d.deny-subscribe = [\"/s/x\"]\n", audit));
    CHECK(g.poll_reload());
    CHECK_FALSE(g.poll_reload());
    auto again = g.check_subscribe({"/s/"});
    REQUIRE(again.size() == 1);
    CHECK(again[0].granted.front().filtered);
    // A check that picks up a reload leaves it for poll_reload(); two reloads are one.
    store.publish(rules(token_rules, audit));
    CHECK(g.check_publish("/a/x").allowed);
    store.publish(rules(token_rules, audit));
    CHECK(g.poll_reload());
    CHECK_FALSE(g.poll_reload());
  }
  SECTION("rules removed altogether allow everything again") {
    store.publish(nullptr);
    CHECK(g.check_publish("/anything").allowed);
    CHECK_FALSE(g.revoked());
  }
}

TEST_CASE("an unknown credential is refused from the start, not revoked", "[security][policy]") {
  policy_store store{rules(token_rules)};
  guard g{store, credential::from_token("wrong")};
  CHECK(g.status() == auth_status::unknown);
  CHECK_FALSE(g.revoked());
  auto v = g.check_publish("/a/x");
  CHECK_FALSE(v.allowed);
  CHECK(v.by->kind == rule::origin::unknown_identity);
}

TEST_CASE("readers keep checking while a writer reloads", "[security][policy]") {
  auto audit = std::make_shared<audit_log>();
  auto allow = rules("identity.anonymous.publish = [\"/a/\"]\n", audit);
  auto deny = rules("identity.anonymous.deny-publish = [\"/a/\"]\n", audit);
  policy_store store{allow};
  std::atomic<bool> done{false};
  std::atomic<bool> wrong{false};
  std::atomic<uint64_t> checks{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i)
    readers.emplace_back([&] {
      guard g{store, credential::anonymous()};
      while (!done.load()) {
        auto v = g.check_publish("/a/x");
        // Either set decides by its own "/a/" rule: never a default, never garbage.
        if (v.by == nullptr || v.by->prefix != "/a/" || v.allowed != (v.by->eff == effect::allow))
          wrong = true;
        checks.fetch_add(1);
      }
    });
  // Swap sets until the readers have done plenty of checks across the swaps (bounded).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  int swaps = 0;
  while ((checks.load() < 20000 || swaps < 2000) && std::chrono::steady_clock::now() < deadline)
    store.publish(++swaps % 2 == 0 ? allow : deny);
  done = true;
  for (auto& t : readers)
    t.join();
  CHECK_FALSE(wrong.load());
  CHECK(swaps >= 2000);
  CHECK(checks.load() > 0);
}
