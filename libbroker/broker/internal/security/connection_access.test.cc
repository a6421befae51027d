#include "broker/internal/security/connection_access.hh"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace broker::internal;
using namespace broker::internal::security;

namespace {

/// A runtime on a temporary rules file.
struct fixture {
  std::string path;
  std::shared_ptr<runtime> rt;

  explicit fixture(const std::string& text) {
    char name[] = "/tmp/broker-access-test-XXXXXX";
    auto fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    write(text);
    auto quiet = std::make_shared<logger>(log_level::error, log_format::text, "test",
                                          [](std::string_view) {});
    rt = std::make_shared<runtime>(path, quiet);
    REQUIRE_FALSE(rt->load());
  }

  ~fixture() { std::remove(path.c_str()); }

  void write(const std::string& text) { std::ofstream{path, std::ios::binary} << text; }

  connection_access connect(credential cred) {
    auto res = rt->admit(std::move(cred), "127.0.0.1", 1);
    REQUIRE(res.admitted);
    return connection_access{rt, std::move(*res.admitted)};
  }

  uint64_t refused_publishes(const std::string& identity, const std::string& rule) const {
    for (auto& row : rt->audit().rows())
      if (row.identity == identity && row.rule == rule)
        return row.refused_publishes;
    return 0;
  }
};

const std::string worker_rules = "identity.worker {\n"
                                 "  tokens = [\"" + hash_token("w") + "\"]\n"
                                 "  publish = [\"/zeek/\"]\n"
                                 "  deny-publish = [\"/zeek/control/\"]\n"
                                 "  subscribe = [\"/zeek/logs/\", \"/zeek/cluster/\"]\n"
                                 "  deny-subscribe = [\"/zeek/cluster/manager\"]\n"
                                 "}\n";

} // namespace

TEST_CASE("subscriptions are granted, narrowed or refused, each told once",
          "[security][access]") {
  fixture f{worker_rules};
  auto acc = f.connect(credential::from_token("w"));
  CHECK(acc.identity() == "worker");
  CHECK(acc.describe_identity() == "identity \"worker\"");
  auto sub = acc.subscribe(std::vector<std::string>{"/zeek/", "/zeek/logs/conn", "/other"});
  CHECK(sub.changed);
  CHECK(sub.granted == std::vector<std::string>{"/zeek/cluster/", "/zeek/logs/",
                                                "/zeek/logs/conn"});
  REQUIRE(sub.notices.size() == 2);
  CHECK(sub.notices[0].find("subscription \"/other\" refused: no subscribe rule of identity "
                            "\"worker\"")
        == 0);
  CHECK(sub.notices[1]
        == "subscription \"/zeek/\" narrowed to \"/zeek/cluster/\", \"/zeek/logs/\": no "
           "subscribe rule of identity \"worker\" matches: denied by default (identity "
           "defined at " + f.path + ":2:3)");
  // The same filter again (a routing update that repeats it): nothing new to tell.
  auto again = acc.subscribe(std::vector<std::string>{"/zeek/", "/other", "/zeek/logs/conn"});
  CHECK_FALSE(again.changed);
  CHECK(again.notices.empty());
  CHECK(acc.requested().size() == 3);
}

TEST_CASE("update() checks one prefix at a time and counts each refusal once",
          "[security][access]") {
  fixture f{worker_rules};
  auto acc = f.connect(credential::from_token("w"));
  auto refused_subscriptions = [&] {
    for (auto& row : f.rt->audit().rows())
      if (row.identity == "worker" && row.rule.empty())
        return row.refused_subscriptions;
    return uint64_t{0};
  };
  auto a = acc.update("/other", true);
  CHECK(a.granted.empty());
  REQUIRE(a.notices.size() == 1);
  CHECK(a.notices[0].find("subscription \"/other\" refused") == 0);
  CHECK(refused_subscriptions() == 1);
  auto b = acc.update("/zeek/", true);
  CHECK(b.changed);
  CHECK(b.granted == std::vector<std::string>{"/zeek/cluster/", "/zeek/logs/"});
  REQUIRE(b.notices.size() == 1);
  CHECK(b.notices[0].find("subscription \"/zeek/\" narrowed to") == 0);
  auto counted = refused_subscriptions(); // The narrowing counts too.
  CHECK(counted > 1);
  // Earlier prefixes are not checked (nor counted) again; a repeat is nothing new.
  auto c = acc.update("/zeek/logs/conn", true);
  CHECK(c.granted == std::vector<std::string>{"/zeek/cluster/", "/zeek/logs/",
                                              "/zeek/logs/conn"});
  CHECK(c.notices.empty());
  auto d = acc.update("/other", true);
  CHECK_FALSE(d.changed);
  CHECK(d.notices.empty());
  CHECK(refused_subscriptions() == counted);
  CHECK(acc.requested().size() == 3);
  // Removing a prefix removes what it was granted, and only that.
  auto e = acc.update("/zeek/", false);
  CHECK(e.changed);
  CHECK(e.granted == std::vector<std::string>{"/zeek/logs/conn"});
  CHECK(acc.requested().size() == 2);
  // A reload re-checks the whole filter (the same as subscribe() would).
  f.write("identity.worker.tokens = [\"" + hash_token("w") + "\"]\n"
          "identity.worker.subscribe = [\"/other\"]\n");
  REQUIRE_FALSE(f.rt->reload());
  auto g = acc.update("/more", true);
  CHECK(g.granted == std::vector<std::string>{"/other"});
}

TEST_CASE("publications are checked per run, counted per message, told once per rule",
          "[security][access]") {
  fixture f{worker_rules};
  auto acc = f.connect(credential::from_token("w"));
  publish_gate& gate = acc;
  CHECK(gate.may_publish("/zeek/logs/conn", 100));
  CHECK_FALSE(acc.has_notices());
  CHECK_FALSE(gate.may_publish("/zeek/control/stop", 5));
  CHECK_FALSE(gate.may_publish("/zeek/control/stop", 7));
  CHECK_FALSE(gate.may_publish("/zeek/control/other", 1));
  CHECK_FALSE(gate.may_publish("/elsewhere", 2));
  auto notices = acc.take_notices();
  REQUIRE(notices.size() == 2);
  CHECK(notices[0].find("publishing on \"/zeek/control/stop\" refused: deny publish "
                        "\"/zeek/control/\" for identity \"worker\" ("
                        + f.path + ":4:3)")
        == 0);
  CHECK(notices[1].find("publishing on \"/elsewhere\" refused: no publish rule") == 0);
  CHECK_FALSE(acc.has_notices());
  CHECK(f.refused_publishes("worker", "deny publish \"/zeek/control/\"") == 13);
  CHECK(f.refused_publishes("worker", "default publish") == 2);
  CHECK(f.refused_publishes("worker", "") == 15);
  // Topics with control characters are escaped in notices.
  CHECK_FALSE(gate.may_publish(std::string_view{"/x\n\x01", 4}, 1));
  CHECK_FALSE(acc.has_notices()); // Same rule (default publish): told already.
}

TEST_CASE("deliveries are checked only under filtered prefixes", "[security][access]") {
  fixture f{worker_rules};
  auto acc = f.connect(credential::from_token("w"));
  acc.subscribe(std::vector<std::string>{"/zeek/logs/"});
  CHECK(acc.may_receive("/zeek/logs/conn"));
  acc.subscribe(std::vector<std::string>{"/zeek/cluster/"});
  CHECK(acc.may_receive("/zeek/cluster/worker-1"));
  CHECK_FALSE(acc.may_receive("/zeek/cluster/manager"));
  uint64_t refused = 0;
  for (auto& row : f.rt->audit().rows())
    if (row.identity == "worker" && row.rule == "deny subscribe \"/zeek/cluster/manager\"")
      refused = row.refused_deliveries;
  CHECK(refused == 1);
}

TEST_CASE("a reload changes grants and revokes identities", "[security][access]") {
  fixture f{worker_rules + "identity.viewer.tokens = [\"" + hash_token("v") + "\"]\n"
            + "identity.viewer.subscribe = [\"/zeek/logs/\"]\n"};
  auto worker = f.connect(credential::from_token("w"));
  auto viewer = f.connect(credential::from_token("v"));
  int watched = 0;
  worker.watch_reloads([&watched] { ++watched; });
  worker.subscribe(std::vector<std::string>{"/zeek/logs/"});
  viewer.subscribe(std::vector<std::string>{"/zeek/"});
  CHECK_FALSE(worker.poll_reload().reloaded);
  // The viewer may now see everything under /zeek/ except the cluster; the worker
  // loses its token.
  f.write("identity.viewer.tokens = [\"" + hash_token("v") + "\"]\n"
          "identity.viewer.subscribe = [\"/zeek/\"]\n"
          "identity.viewer.deny-subscribe = [\"/zeek/cluster/\"]\n");
  REQUIRE_FALSE(f.rt->reload());
  CHECK(watched == 1);
  // Until the connection polls, deliveries are checked against the new rules.
  CHECK_FALSE(viewer.may_receive("/zeek/cluster/x"));
  auto v = viewer.poll_reload();
  CHECK(v.reloaded);
  CHECK_FALSE(v.revoked);
  CHECK(v.sub.changed);
  CHECK(v.sub.granted == std::vector<std::string>{"/zeek/"});
  CHECK(v.sub.notices.empty());
  CHECK_FALSE(viewer.may_receive("/zeek/cluster/x"));
  CHECK(viewer.may_receive("/zeek/notice"));
  CHECK_FALSE(viewer.poll_reload().reloaded);
  auto w = worker.poll_reload();
  CHECK(w.reloaded);
  CHECK(w.revoked);
  CHECK(worker.describe_identity() == "no identity (revoked)");
  CHECK_FALSE(worker.may_receive("/zeek/logs/conn"));
  publish_gate& gate = worker;
  CHECK_FALSE(gate.may_publish("/zeek/logs/conn", 1));
}

TEST_CASE("without identities everything passes, at one atomic load per check",
          "[security][access]") {
  fixture f{"# no identities\n"};
  auto acc = f.connect(credential::from_token("anything"));
  auto sub = acc.subscribe(std::vector<std::string>{""});
  CHECK(sub.granted == std::vector<std::string>{""});
  CHECK(sub.notices.empty());
  publish_gate& gate = acc;
  CHECK(gate.may_publish("/any", 1));
  CHECK(acc.may_receive("/any"));
}

TEST_CASE("needs_attention says when a connection has notices or a reload to poll",
          "[security][access]") {
  fixture f{worker_rules};
  auto acc = f.connect(credential::from_token("w"));
  acc.subscribe(std::vector<std::string>{"/zeek/logs/"});
  CHECK_FALSE(acc.needs_attention()); // The per-batch fast path: nothing to do.
  CHECK(acc.may_publish("/zeek/logs/conn", 1));
  CHECK_FALSE(acc.needs_attention());
  CHECK_FALSE(acc.may_publish("/zeek/control/stop", 1));
  CHECK(acc.needs_attention()); // A notice to tell.
  acc.take_notices();
  CHECK_FALSE(acc.needs_attention());
  REQUIRE_FALSE(f.rt->reload());
  CHECK(acc.needs_attention()); // A reload not picked up yet.
  // A check picks the reload up; poll_reload() still has to see it.
  CHECK(acc.may_publish("/zeek/logs/conn", 1));
  CHECK(acc.needs_attention());
  CHECK(acc.poll_reload().reloaded);
  CHECK_FALSE(acc.needs_attention());
}

TEST_CASE("a run of deliveries on one topic reuses its verdict and still counts each",
          "[security][access]") {
  fixture f{worker_rules};
  auto acc = f.connect(credential::from_token("w"));
  acc.subscribe(std::vector<std::string>{"/zeek/cluster/"}); // Filtered: manager denied.
  auto refused = [&](const std::string& identity, const std::string& rule) {
    for (auto& row : f.rt->audit().rows())
      if (row.identity == identity && row.rule == rule)
        return row.refused_deliveries;
    return uint64_t{0};
  };
  const std::string deny = "deny subscribe \"/zeek/cluster/manager\"";
  for (int i = 0; i < 5; ++i)
    CHECK_FALSE(acc.may_receive("/zeek/cluster/manager"));
  CHECK(refused("worker", deny) == 5);
  CHECK(refused("worker", "") == 5); // The identity's totals.
  CHECK(acc.may_receive("/zeek/cluster/worker-1"));
  CHECK_FALSE(acc.may_receive("/zeek/cluster/manager"));
  CHECK(refused("worker", deny) == 6);
  // A reload that allows the topic answers at once, not from the old verdict.
  f.write("identity.worker {\n  tokens = [\"" + hash_token("w") + "\"]\n"
          "  subscribe = [\"/zeek/\"]\n  deny-subscribe = [\"/zeek/cluster/x\"]\n}\n");
  REQUIRE_FALSE(f.rt->reload());
  CHECK(acc.may_receive("/zeek/cluster/manager"));
  CHECK(acc.may_receive("/zeek/cluster/manager"));
  CHECK(refused("worker", deny) == 6);
}
