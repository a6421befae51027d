#include "broker/internal/security/rule_set.hh"

#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace broker::internal::security;

namespace {

/// A builder with shorthand for the tests.
struct rules {
  rule_set_builder b;
  int line = 0;

  identity_handle id(const std::string& name) {
    return b.add_identity(name, "t:" + std::to_string(++line) + ":1");
  }

  rules& allow(const std::string& who, action act, std::string prefix) {
    auto x = id(who); // Before src(): argument order is unspecified.
    b.add_rule(x, act, effect::allow, std::move(prefix), src());
    return *this;
  }

  rules& deny(const std::string& who, action act, std::string prefix) {
    auto x = id(who);
    b.add_rule(x, act, effect::deny, std::move(prefix), src());
    return *this;
  }

  std::string src() { return "t:" + std::to_string(++line) + ":3"; }

  std::shared_ptr<const rule_set> build() {
    auto result = b.build();
    REQUIRE(result);
    return *result;
  }
};

constexpr auto pub = action::publish;
constexpr auto sub = action::subscribe;

bool may_publish(const rule_set& rs, const std::string& who, std::string_view topic) {
  return rs.check_publish(rs.find(who), topic).allowed;
}

std::vector<std::string> granted(const subscribe_verdict& v) {
  std::vector<std::string> result;
  for (auto& g : v.granted)
    result.push_back(g.prefix + (g.filtered ? " (filtered)" : ""));
  return result;
}

using strings = std::vector<std::string>;

} // namespace

TEST_CASE("without identities everything is allowed, except publishing on <$>",
          "[security][rules]") {
  auto rs = rule_set::allow_all();
  CHECK_FALSE(rs->enforcing());
  CHECK(rs->check_publish(no_identity, "/anything").allowed);
  CHECK(rs->check_publish(no_identity, "").allowed);
  CHECK(rs->check_publish(no_identity, "/anything").by == nullptr);
  auto reserved = rs->check_publish(no_identity, "<$>/local/data/statuses");
  CHECK_FALSE(reserved.allowed);
  REQUIRE(reserved.by != nullptr);
  CHECK(reserved.by->kind == rule::origin::reserved);
  auto v = rs->check_subscribe(no_identity, "");
  CHECK(v.outcome == subscribe_outcome::allowed);
  CHECK(granted(v) == strings{""});
  CHECK(rs->check_receive(no_identity, "<$>/local/data/statuses").allowed);
  CHECK(rs->authenticate(credential::from_token("x")).status == auth_status::ok);
}

TEST_CASE("deny_all refuses everything to everyone", "[security][rules]") {
  auto rs = rule_set::deny_all();
  CHECK(rs->enforcing());
  CHECK_FALSE(rs->check_publish(rs->anonymous(), "/a").allowed);
  CHECK(rs->check_subscribe(rs->anonymous(), "").outcome == subscribe_outcome::refused);
  CHECK_FALSE(rs->check_receive(rs->anonymous(), "/a").allowed);
  CHECK(rs->authenticate(credential::from_token("x")).status == auth_status::unknown);
}

TEST_CASE("with rules, no matching rule means deny, and the refusal names the default",
          "[security][rules]") {
  rules r;
  r.allow("worker", pub, "/zeek/");
  auto rs = r.build();
  CHECK(rs->enforcing());
  CHECK(may_publish(*rs, "worker", "/zeek/x"));
  auto v = rs->check_publish(rs->find("worker"), "/other");
  CHECK_FALSE(v.allowed);
  REQUIRE(v.by != nullptr);
  CHECK(v.by->kind == rule::origin::default_deny);
  CHECK(v.by->identity == "worker");
  CHECK(describe(*v.by) == "no publish rule of identity \"worker\" matches: denied by default "
                           "(identity defined at t:1:1)");
  // Subscribing has no rule at all.
  CHECK(rs->check_subscribe(rs->find("worker"), "/zeek/").outcome
        == subscribe_outcome::refused);
}

TEST_CASE("longest prefix wins; the empty prefix covers everything", "[security][rules]") {
  rules r;
  r.allow("w", pub, "").deny("w", pub, "/zeek/").allow("w", pub, "/zeek/logs/");
  r.deny("w", pub, "/zeek/logs/secret");
  auto rs = r.build();
  CHECK(may_publish(*rs, "w", ""));
  CHECK(may_publish(*rs, "w", "/other"));
  CHECK_FALSE(may_publish(*rs, "w", "/zeek/"));
  CHECK_FALSE(may_publish(*rs, "w", "/zeek/events"));
  CHECK(may_publish(*rs, "w", "/zeek/logs/conn"));
  CHECK_FALSE(may_publish(*rs, "w", "/zeek/logs/secret"));
  CHECK_FALSE(may_publish(*rs, "w", "/zeek/logs/secrets")); // Raw prefix.
  CHECK(may_publish(*rs, "w", "/zeek")); // Shorter than "/zeek/": the "" rule decides.
  auto v = rs->check_publish(rs->find("w"), "/zeek/events");
  REQUIRE(v.by != nullptr);
  CHECK(v.by->prefix == "/zeek/");
  CHECK(v.by->source == "t:4:3");
  CHECK(describe(*v.by) == "deny publish \"/zeek/\" for identity \"w\" (t:4:3)");
}

TEST_CASE("a prefix both allowed and denied: deny wins, with a note", "[security][rules]") {
  rules r;
  r.allow("w", pub, "/a/").deny("w", pub, "/a/").allow("w", sub, "/a/");
  auto rs = r.build();
  CHECK_FALSE(may_publish(*rs, "w", "/a/x"));
  REQUIRE(rs->notes().size() == 1);
  CHECK(rs->notes()[0] == "t:4:3: identity \"w\": publish prefix \"/a/\" is both allowed "
                          "(t:2:3) and denied (t:4:3): deny wins");
  // The same prefix for the other action is no tie.
  CHECK(rs->check_receive(rs->find("w"), "/a/x").allowed);
  // Listed twice with the same effect: one rule, one note.
  rules twice;
  twice.allow("w", pub, "/a/").allow("w", pub, "/a/");
  auto rs2 = twice.build();
  CHECK(rs2->configured_rules() == 1);
  REQUIRE(rs2->notes().size() == 1);
  CHECK(rs2->notes()[0].find("is listed twice") != std::string::npos);
}

TEST_CASE("publishing on <$> is refused even where a rule allows everything",
          "[security][rules]") {
  rules r;
  r.allow("w", pub, "");
  auto rs = r.build();
  auto v = rs->check_publish(rs->find("w"), "<$>/local/data/errors");
  CHECK_FALSE(v.allowed);
  CHECK(v.by->kind == rule::origin::reserved);
  CHECK(may_publish(*rs, "w", "<$"));    // Not the reserved prefix.
  CHECK(may_publish(*rs, "w", "x<$>/")); // Only at the start.
}

TEST_CASE("unknown identities are refused by the built-in rule", "[security][rules]") {
  rules r;
  r.allow("w", pub, "");
  auto rs = r.build();
  CHECK(rs->find("nobody") == no_identity);
  for (auto id : {no_identity, identity_handle{12345}}) {
    auto v = rs->check_publish(id, "/a");
    CHECK_FALSE(v.allowed);
    CHECK(v.by->kind == rule::origin::unknown_identity);
    CHECK_FALSE(rs->check_receive(id, "/a").allowed);
    auto s = rs->check_subscribe(id, "/a");
    CHECK(s.outcome == subscribe_outcome::refused);
    CHECK(s.by->kind == rule::origin::unknown_identity);
  }
  CHECK(rs->name_of(no_identity).empty());
}

TEST_CASE("the anonymous identity exists when enforcing and is denied by default",
          "[security][rules]") {
  rules r;
  r.allow("w", pub, "");
  auto rs = r.build();
  auto anon = rs->anonymous();
  REQUIRE(anon != no_identity);
  CHECK(rs->name_of(anon) == "anonymous");
  CHECK(rs->identity_count() == 2);
  auto result = rs->authenticate(credential::anonymous());
  CHECK(result.status == auth_status::ok);
  CHECK(result.id == anon);
  auto v = rs->check_publish(anon, "/a");
  CHECK_FALSE(v.allowed);
  CHECK(v.by->kind == rule::origin::default_deny);
  CHECK(v.by->source == "implicit anonymous identity");
  // Named and given rules.
  rules named;
  named.b.anonymous_identity("guest", "t:0:1");
  named.allow("guest", sub, "/public/").allow("w", pub, "");
  auto rs2 = named.build();
  CHECK(rs2->name_of(rs2->anonymous()) == "guest");
  CHECK(rs2->check_subscribe(rs2->anonymous(), "/public/x").outcome
        == subscribe_outcome::allowed);
  CHECK(rs2->find("anonymous") == no_identity);
}

TEST_CASE("check_subscribe: allowed, filtered, narrowed and refused", "[security][rules]") {
  rules r;
  r.allow("w", sub, "/zeek/").deny("w", sub, "/zeek/secret/");
  r.allow("w", sub, "/zeek/secret/ok/");
  r.allow("w", sub, "/pub/a/").allow("w", sub, "/pub/b/").allow("w", sub, "/pub/b/c/");
  r.deny("w", sub, "/pub/b/c/d/");
  auto rs = r.build();
  auto w = rs->find("w");
  SECTION("inside an allow without denies below: allowed as is") {
    auto v = rs->check_subscribe(w, "/zeek/logs/");
    CHECK(v.outcome == subscribe_outcome::allowed);
    CHECK(granted(v) == strings{"/zeek/logs/"});
    CHECK(v.by == nullptr);
  }
  SECTION("an allow with a deny below: allowed, deliveries filtered") {
    auto v = rs->check_subscribe(w, "/zeek/");
    CHECK(v.outcome == subscribe_outcome::allowed);
    CHECK(granted(v) == strings{"/zeek/ (filtered)"});
    CHECK(rs->check_receive(w, "/zeek/logs/x").allowed);
    CHECK_FALSE(rs->check_receive(w, "/zeek/secret/x").allowed);
    CHECK(rs->check_receive(w, "/zeek/secret/ok/x").allowed);
  }
  SECTION("a deny with allows below: narrowed to the topmost allowed prefixes") {
    auto v = rs->check_subscribe(w, "/pub/");
    CHECK(v.outcome == subscribe_outcome::narrowed);
    CHECK(granted(v) == strings{"/pub/a/", "/pub/b/ (filtered)"});
    REQUIRE(v.by != nullptr);
    CHECK(v.by->kind == rule::origin::default_deny);
    auto root = rs->check_subscribe(w, "");
    CHECK(root.outcome == subscribe_outcome::narrowed);
    CHECK(granted(root) == strings{"/pub/a/", "/pub/b/ (filtered)", "/zeek/ (filtered)"});
  }
  SECTION("a denied prefix with an allow deeper down, inside an edge") {
    auto v = rs->check_subscribe(w, "/zeek/secret/o");
    CHECK(v.outcome == subscribe_outcome::narrowed);
    CHECK(granted(v) == strings{"/zeek/secret/ok/"});
    CHECK(v.by->prefix == "/zeek/secret/");
  }
  SECTION("nothing allowed under it: refused, naming the deny") {
    auto v = rs->check_subscribe(w, "/zeek/secret/x");
    CHECK(v.outcome == subscribe_outcome::refused);
    CHECK(v.granted.empty());
    CHECK(v.by->prefix == "/zeek/secret/");
    CHECK(v.by->eff == effect::deny);
    CHECK(rs->check_subscribe(w, "/elsewhere").outcome == subscribe_outcome::refused);
  }
  SECTION("several prefixes at once, in order") {
    auto vs = rs->check_subscribe(w, strings{"/zeek/logs/", "/nope", "/pub/"});
    REQUIRE(vs.size() == 3);
    CHECK(vs[0].outcome == subscribe_outcome::allowed);
    CHECK(vs[1].outcome == subscribe_outcome::refused);
    CHECK(vs[2].outcome == subscribe_outcome::narrowed);
    CHECK(vs[2].requested == "/pub/");
  }
}

TEST_CASE("subscriptions to <$> topics follow the rules", "[security][rules]") {
  rules r;
  r.allow("ops", sub, "<$>/local/data/statuses").allow("w", sub, "/zeek/");
  auto rs = r.build();
  CHECK(rs->check_subscribe(rs->find("ops"), "<$>/local/data/statuses").outcome
        == subscribe_outcome::allowed);
  CHECK(rs->check_subscribe(rs->find("w"), "<$>/local/data/statuses").outcome
        == subscribe_outcome::refused);
}

TEST_CASE("authentication by token, certificate and CURVE key", "[security][rules]") {
  rules r;
  auto w = r.id("worker");
  auto m = r.id("manager");
  auto d = r.id("dashboard");
  REQUIRE_FALSE(r.b.add_certificate_name(w, "cn:worker-1", "t:9:1"));
  REQUIRE_FALSE(r.b.add_certificate_name(w, "dns:worker-1.zeek", "t:9:2"));
  REQUIRE_FALSE(r.b.add_certificate_name(m, "cn:manager", "t:9:3"));
  REQUIRE_FALSE(r.b.add_token(d, *parse_token_hash(hash_token("s3cret")), "t:9:4"));
  REQUIRE_FALSE(r.b.add_token(m, *parse_token_hash(hash_token("other")), "t:9:5"));
  REQUIRE_FALSE(r.b.add_curve_key(w, std::string(40, 'a'), "t:9:6"));
  auto rs = r.build();
  auto expect = [&](const credential& c, auth_status status, const std::string& who) {
    auto result = rs->authenticate(c);
    CHECK(result.status == status);
    CHECK(rs->name_of(result.id) == who);
  };
  expect(credential::from_token("s3cret"), auth_status::ok, "dashboard");
  expect(credential::from_token("other"), auth_status::ok, "manager");
  expect(credential::from_token("s3cret "), auth_status::unknown, "");
  expect(credential::from_token(""), auth_status::unknown, "");
  expect(credential::from_certificate({"cn:worker-1"}), auth_status::ok, "worker");
  expect(credential::from_certificate({"cn:unknown", "dns:worker-1.zeek"}), auth_status::ok,
         "worker");
  expect(credential::from_certificate({"cn:worker-1", "dns:worker-1.zeek"}), auth_status::ok,
         "worker");
  expect(credential::from_certificate({"cn:worker-1", "cn:manager"}), auth_status::ambiguous,
         "");
  expect(credential::from_certificate({}), auth_status::unknown, "");
  expect(credential::from_curve_key(std::string(40, 'a')), auth_status::ok, "worker");
  expect(credential::from_curve_key(std::string(40, 'b')), auth_status::unknown, "");
  auto unusable = credential::from_token("x");
  unusable.usable = false;
  expect(unusable, auth_status::unusable, "");
}

TEST_CASE("a credential belongs to one identity; the anonymous one has none",
          "[security][rules]") {
  rules r;
  auto a = r.id("a");
  auto b = r.id("b");
  auto hash = *parse_token_hash(hash_token("t"));
  REQUIRE_FALSE(r.b.add_token(a, hash, "f:1:1"));
  auto err = r.b.add_token(b, hash, "f:2:1");
  REQUIRE(err);
  CHECK(err.message() == "f:2:1: token hash: it already belongs to identity \"a\" (f:1:1)");
  REQUIRE_FALSE(r.b.add_certificate_name(a, "cn:x", "f:3:1"));
  err = r.b.add_certificate_name(a, "cn:x", "f:4:1");
  REQUIRE(err);
  CHECK(err.message() == "f:4:1: certificate name \"cn:x\": it is listed twice for identity "
                         "\"a\" (f:3:1)");
  REQUIRE_FALSE(r.b.add_curve_key(a, std::string(40, 'k'), "f:5:1"));
  CHECK(r.b.add_curve_key(b, std::string(40, 'k'), "f:6:1"));
  rules anon;
  auto id = anon.id("anonymous");
  REQUIRE_FALSE(anon.b.add_token(id, hash, "f:7:1"));
  auto built = anon.b.build();
  REQUIRE_FALSE(built);
  CHECK(built.error_value().message().find("f:7:1: identity \"anonymous\" is the identity of "
                                           "unauthenticated connections")
        == 0);
}

TEST_CASE("counters live in the audit log and survive a rebuild", "[security][rules]") {
  auto audit = std::make_shared<audit_log>();
  auto build = [&audit](int extra_rules) {
    rule_set_builder b{audit};
    auto w = b.add_identity("w", "f:1:1");
    for (int i = 0; i < extra_rules; ++i)
      b.add_rule(w, pub, effect::allow, "/extra/" + std::to_string(i), "f:2:1");
    b.add_rule(w, pub, effect::deny, "/x/", "f:3:1");
    return *b.build();
  };
  auto first = build(0);
  auto v = first->check_publish(first->find("w"), "/x/y");
  REQUIRE_FALSE(v.allowed);
  v.by->counters->refused_publishes += 2;
  // The same rule in a new set, at another index and line: the same counters.
  auto second = build(5);
  auto v2 = second->check_publish(second->find("w"), "/x/y");
  CHECK(v2.by != v.by);
  CHECK(v2.by->counters == v.by->counters);
  CHECK(v2.by->counters->refused_publishes == 2);
  CHECK(&second->identity_counters(second->find("w")) == &first->identity_counters(first->find("w")));
  bool found = false;
  for (auto& row : audit->rows())
    if (row.identity == "w" && row.rule == "deny publish \"/x/\"") {
      found = true;
      CHECK(row.refused_publishes == 2);
    }
  CHECK(found);
}

TEST_CASE("a huge rule set agrees with a naive evaluation", "[security][rules]") {
  // 200 identities with 500 rules each (100 000 rules), random prefixes over a small
  // alphabet so that they nest and overlap.
  std::mt19937 rng{7};
  std::uniform_int_distribution<int> ch(0, 3), len(0, 6), coin(0, 1);
  auto text = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
      s += "/ab\x80"[ch(rng)];
    return s;
  };
  rule_set_builder b;
  std::vector<std::map<std::string, effect>> naive(200);
  for (int who = 0; who < 200; ++who) {
    auto id = b.add_identity("id" + std::to_string(who), "f:1:1");
    for (int i = 0; i < 500; ++i) {
      auto prefix = text(len(rng));
      auto eff = coin(rng) ? effect::allow : effect::deny;
      b.add_rule(id, pub, eff, prefix, "f:2:1");
      auto& m = naive[static_cast<size_t>(who)];
      if (auto it = m.find(prefix); it == m.end())
        m.emplace(prefix, eff);
      else if (eff == effect::deny)
        it->second = effect::deny; // Deny wins a tie.
    }
  }
  auto rs = *b.build();
  CHECK(rs->configured_rules() <= 100'000);
  for (int probe = 0; probe < 20'000; ++probe) {
    auto who = static_cast<size_t>(probe % 200);
    auto topic = text(len(rng) + 2);
    bool want = false;
    size_t best = 0;
    bool any = false;
    for (auto& [prefix, eff] : naive[who])
      if (topic.compare(0, prefix.size(), prefix) == 0 && (!any || prefix.size() >= best)) {
        any = true;
        best = prefix.size();
        want = eff == effect::allow;
      }
    INFO("identity " << who << " topic " << topic);
    CHECK(rs->check_publish(rs->find("id" + std::to_string(who)), topic).allowed == want);
  }
}
