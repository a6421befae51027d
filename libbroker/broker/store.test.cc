// Data stores through the public API: a master alone, master and clones on peered
// endpoints (real loopback TCP), expiry, store events, the async proxy and SQLite restarts.

#include "broker/endpoint.hh"
#include "broker/endpoint.test.hh"
#include "broker/store.hh"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <poll.h>
#include <unistd.h>

using namespace broker;
using namespace std::chrono_literals;
using broker::test::connect;
using broker::test::eventually;

namespace {

/// Fast timers so that tests of loss and timeouts stay short.
configuration fast_config() {
  configuration cfg;
  REQUIRE(!cfg.set_count("broker.store.heartbeat-interval", 50));
  REQUIRE(!cfg.set_count("broker.store.request-timeout", 2000));
  REQUIRE(!cfg.set_count("broker.store.tick-interval", 10));
  REQUIRE(!cfg.set_count("broker.store.master-probe-timeout", 100));
  return cfg;
}

/// True once `st` answers `key` with `expected`.
bool converges(const store& st, const data& key, const data& want) {
  return eventually([&] {
    auto x = st.get(key);
    return x && *x == want;
  });
}

bool gone(const store& st, const data& key) {
  return eventually([&] {
    auto x = st.get(key);
    return !x && x.error_value() == ec::no_such_key;
  });
}

std::string temp_db(const char* tag) {
  auto dir = std::filesystem::temp_directory_path()
             / ("broker-store-test-" + std::to_string(::getpid()) + "-" + tag);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / "store.db").string();
}

} // namespace

TEST_CASE("a master answers every operation", "[store]") {
  endpoint ep{fast_config()};
  auto st = ep.attach_master("ops");
  REQUIRE(st);
  CHECK(st->is_master());
  CHECK(st->name() == "ops");
  CHECK(st->await_ready(1s));
  CHECK(!st->put("a", count{1}));
  CHECK(!st->increment("a", count{4}));
  CHECK(!st->decrement("a", count{2}));
  CHECK(!st->append("s", "foo"));
  CHECK(!st->append("s", "bar"));
  CHECK(!st->insert_into("set", count{7}));
  CHECK(!st->insert_into("set", count{8}));
  CHECK(!st->remove_from("set", count{7}));
  CHECK(!st->insert_into("tbl", "k", "v"));
  CHECK(!st->push("vec", count{1}));
  CHECK(!st->push("vec", count{2}));
  CHECK(!st->push("vec", count{3}));
  CHECK(!st->pop("vec"));
  CHECK(!st->put("gone", true));
  CHECK(!st->erase("gone"));
  REQUIRE(st->await_idle(5s));
  CHECK(*st->get("a") == data{count{3}});
  CHECK(*st->get("s") == data{"foobar"});
  CHECK(*st->get("set") == data{set{count{8}}});
  CHECK(*st->get("tbl") == data{table{{"k", "v"}}});
  CHECK(*st->get("vec") == data{vector{count{1}, count{2}}});
  CHECK(*st->get_index_from_value("vec", count{1}) == data{count{2}});
  CHECK(*st->get_index_from_value("tbl", "k") == data{"v"});
  CHECK(*st->get_index_from_value("set", count{8}) == data{true});
  CHECK(*st->exists("a"));
  CHECK(!*st->exists("gone"));
  CHECK(*st->keys() == data{set{"a", "s", "set", "tbl", "vec"}});
  CHECK(*st->put_unique("u", count{1}));
  CHECK(!*st->put_unique("u", count{2}));
  CHECK(*st->get("u") == data{count{1}});
  CHECK(!st->clear());
  REQUIRE(st->await_idle(5s));
  CHECK(*st->keys() == data{set{}});
}

TEST_CASE("store errors are values", "[store]") {
  endpoint ep{fast_config()};
  auto errors = ep.make_status_subscriber(false);
  auto st = ep.attach_master("errs");
  REQUIRE(st);
  SECTION("missing keys") {
    CHECK(st->get("nope").error_value() == ec::no_such_key);
    CHECK(st->get_index_from_value("nope", count{0}).error_value() == ec::no_such_key);
  }
  SECTION("type clashes are reported as error events") {
    REQUIRE(!st->put("s", "text"));
    REQUIRE(!st->increment("s", count{1}));
    auto ev = errors.get(5s);
    REQUIRE(ev);
    auto* err = std::get_if<error>(&*ev);
    REQUIRE(err != nullptr);
    CHECK(err->code() == ec::type_clash);
    CHECK(err->message().find("errs") != std::string::npos);
    CHECK(*st->get("s") == data{"text"});
    CHECK(st->get_index_from_value("s", count{0}).error_value() == ec::type_clash);
  }
  SECTION("a second master of one name") {
    auto again = ep.attach_master("errs");
    REQUIRE(!again);
    CHECK(again.error_value() == ec::master_exists);
  }
  SECTION("bad names and backend options") {
    CHECK(ep.attach_master("").error_value() == ec::invalid_topic);
    CHECK(ep.attach_clone("<$>/x").error_value() == ec::invalid_topic);
    auto bad = ep.attach_master("x", backend::sqlite, {{"path", "/tmp/x.db"}, {"colour", "red"}});
    REQUIRE(!bad);
    CHECK(bad.error_value() == ec::invalid_config);
    CHECK(bad.error_value().message().find("colour") != std::string::npos);
    auto nodir = ep.attach_master("y", backend::sqlite, {{"path", "/proc/no/such/dir/x.db"}});
    REQUIRE(!nodir);
    CHECK(nodir.error_value() == ec::cannot_open_file);
  }
  SECTION("a default store handle") {
    store none;
    CHECK(!none);
    CHECK(none.get("x").error_value() == ec::shutting_down);
    CHECK(none.put("x", 1) == ec::shutting_down);
  }
  SECTION("after shutdown") {
    ep.shutdown();
    CHECK(st->get("x").error_value() == ec::shutting_down);
    CHECK(st->put("x", 1) == ec::shutting_down);
  }
}

TEST_CASE("a clone converges to its master and writes through it", "[store]") {
  endpoint a{fast_config()}, b{fast_config()};
  connect(a, b);
  auto master = a.attach_master("users");
  REQUIRE(master);
  REQUIRE(!master->put("before", count{1}));
  auto clone = b.attach_clone("users");
  REQUIRE(clone);
  CHECK(!clone->is_master());
  REQUIRE(clone->await_ready(10s));
  CHECK(converges(*clone, "before", count{1}));
  for (int i = 0; i < 500; ++i)
    REQUIRE(!clone->put(i, i * 2));
  REQUIRE(!clone->increment("ctr", integer{5}));
  REQUIRE(!master->increment("ctr", integer{5}));
  CHECK(converges(*master, 499, 998));
  CHECK(converges(*clone, 499, 998));
  CHECK(converges(*clone, "ctr", integer{10}));
  CHECK(converges(*master, "ctr", integer{10}));
  REQUIRE(!master->erase("before"));
  CHECK(gone(*clone, "before"));
  CHECK(*clone->keys() == *master->keys());
  // A master elsewhere in the network refuses a second one.
  auto other = b.attach_master("users");
  REQUIRE(!other);
  CHECK(other.error_value() == ec::master_exists);
}

TEST_CASE("put_unique from two clones: exactly one wins", "[store]") {
  endpoint m{fast_config()}, c1{fast_config()}, c2{fast_config()};
  connect(c1, m);
  connect(c2, m);
  auto master = m.attach_master("locks");
  REQUIRE(master);
  auto x = c1.attach_clone("locks");
  auto y = c2.attach_clone("locks");
  REQUIRE(x->await_ready(10s));
  REQUIRE(y->await_ready(10s));
  for (int round = 0; round < 20; ++round) {
    expected<bool> rx{false}, ry{false};
    std::thread tx{[&] { rx = x->put_unique(round, "x"); }};
    std::thread ty{[&] { ry = y->put_unique(round, "y"); }};
    tx.join();
    ty.join();
    REQUIRE(rx);
    REQUIRE(ry);
    CHECK(*rx != *ry);
    auto winner = *rx ? data{"x"} : data{"y"};
    CHECK(converges(*master, round, winner));
  }
}

TEST_CASE("clones without a master report stale_data and no_such_master", "[store]") {
  auto cfg = fast_config();
  REQUIRE(!cfg.set_count("broker.store.request-timeout", 300));
  endpoint ep{std::move(cfg)};
  auto clone = ep.attach_clone("orphan");
  REQUIRE(clone);
  CHECK(!clone->await_ready(200ms));
  CHECK(clone->get("x").error_value() == ec::stale_data);
  CHECK(clone->keys().error_value() == ec::stale_data);
  CHECK(clone->put_unique("x", 1).error_value() == ec::no_such_master);
}

TEST_CASE("expiry is enforced by the master and reaches clones", "[store]") {
  endpoint a{fast_config()}, b{fast_config()};
  connect(a, b);
  auto master = a.attach_master("ttl");
  REQUIRE(master);
  auto clone = b.attach_clone("ttl");
  REQUIRE(clone->await_ready(10s));
  REQUIRE(!clone->put("short", 1, 200ms));
  REQUIRE(!master->put("long", 2));
  CHECK(converges(*clone, "short", 1));
  CHECK(gone(*master, "short"));
  CHECK(gone(*clone, "short"));
  CHECK(*clone->get("long") == data{2});
}

TEST_CASE("an expiry written through a clone counts from when the master applies it",
          "[store]") {
  endpoint a{fast_config()}, b{fast_config()};
  connect(a, b);
  auto master = a.attach_master("later");
  REQUIRE(master);
  auto clone = b.attach_clone("later");
  REQUIRE(clone->await_ready(10s));
  REQUIRE(!clone->put("kept", 1, 1h));
  REQUIRE(!clone->put("marker", 2));
  REQUIRE(converges(*master, "marker", 2));
  // Thirty expiry checks (tick-interval 10 ms) later, the hour has not passed.
  std::this_thread::sleep_for(300ms);
  auto at_master = master->get("kept");
  REQUIRE(at_master.has_value());
  CHECK(*at_master == data{1});
  CHECK(converges(*clone, "kept", 1));
}

TEST_CASE("store events describe every change", "[store]") {
  endpoint ep{fast_config()};
  auto events = ep.make_subscriber({std::string{topic::store_events}});
  auto st = ep.attach_master("ev");
  REQUIRE(st);
  REQUIRE(!st->put("k", 1));
  REQUIRE(!st->put("k", 2));
  REQUIRE(!st->erase("k"));
  REQUIRE(!st->put("t", 3, 50ms));
  auto xs = events.get(5, 10s);
  REQUIRE(xs.size() == 5);
  auto tag = [&](size_t i) { return get<std::string>(get<vector>(xs[i].value())[0]); };
  CHECK(tag(0) == "insert");
  CHECK(tag(1) == "update");
  CHECK(tag(2) == "erase");
  CHECK(tag(3) == "insert");
  CHECK(tag(4) == "expire");
  auto& update = get<vector>(xs[1].value());
  REQUIRE(update.size() == 7);
  CHECK(update[1] == data{"ev"});
  CHECK(update[2] == data{"k"});
  CHECK(update[3] == data{1});
  CHECK(update[4] == data{2});
  CHECK(update[6] == data{to_string(ep.node_id())});
}

TEST_CASE("a proxy answers through a pollable descriptor", "[store]") {
  endpoint ep{fast_config()};
  auto st = ep.attach_master("px");
  REQUIRE(st);
  REQUIRE(!st->put("a", 1));
  store::proxy px{*st};
  auto id1 = px.get("a");
  auto id2 = px.get("missing");
  auto id3 = px.put_unique("b", 2);
  pollfd pfd{px.fd(), POLLIN, 0};
  REQUIRE(::poll(&pfd, 1, 5000) == 1);
  auto rs = px.receive(3);
  REQUIRE(rs.size() == 3);
  CHECK(rs[0].id == id1);
  CHECK(*rs[0].answer == data{1});
  CHECK(rs[1].id == id2);
  CHECK(rs[1].answer.error_value() == ec::no_such_key);
  CHECK(rs[2].id == id3);
  CHECK(*rs[2].answer == data{true});
  CHECK(px.available() == 0);
  CHECK(::poll(&pfd, 1, 0) == 0);
  CHECK(!px.receive(10ms));
}

TEST_CASE("a SQLite master keeps data and expiries across restarts", "[store]") {
  auto path = temp_db("restart");
  {
    endpoint ep{fast_config()};
    auto st = ep.attach_master("db", backend::sqlite, {{"path", path}});
    REQUIRE(st);
    for (int i = 0; i < 1000; ++i)
      REQUIRE(!st->put(i, std::to_string(i)));
    REQUIRE(!st->put("soon", true, 300ms));
    REQUIRE(st->await_idle(10s));
  }
  {
    endpoint ep{fast_config()};
    auto st = ep.attach_master("db", backend::sqlite, {{"path", path}});
    REQUIRE(st);
    CHECK(*st->get(999) == data{"999"});
    CHECK(gone(*st, "soon"));
    CHECK(get<set>(*st->keys()).size() == 1000);
  }
  std::filesystem::remove_all(std::filesystem::path{path}.parent_path());
}

TEST_CASE("a store command never reaches subscribers or clients", "[store]") {
  endpoint ep{fast_config()};
  // Store traffic travels on "quiet/<$>/data/...": a subscriber to "quiet" must not see it.
  auto all = ep.make_subscriber({"quiet", "/visible"});
  auto st = ep.attach_master("quiet");
  REQUIRE(st);
  REQUIRE(!st->put("k", 1));
  REQUIRE(st->await_idle(5s));
  ep.publish("/visible", data{1});
  auto msg = all.get(5s);
  REQUIRE(msg);
  CHECK(msg->topic() == "/visible");
}

TEST_CASE("a burst of clone writes larger than the channel window all arrive", "[store]") {
  endpoint a{fast_config()}, b{fast_config()};
  connect(a, b);
  auto master = a.attach_master("burst");
  REQUIRE(master);
  auto clone = b.attach_clone("burst");
  REQUIRE(clone->await_ready(10s));
  // Three times the write window: the writer is slowed down, nothing is dropped.
  constexpr int n = 3 * 4096;
  for (int i = 0; i < n; ++i)
    REQUIRE(!clone->put(i, i));
  CHECK(converges(*master, n - 1, n - 1));
  CHECK(get<set>(*master->keys()).size() == static_cast<size_t>(n));
  CHECK(converges(*clone, n - 1, n - 1));
}

TEST_CASE("store traffic waits for a full peer queue instead of cutting the peering",
          "[store]") {
  // A peer queue of 64 messages: every burst of replication overflows it many times.
  auto small = [] {
    auto cfg = fast_config();
    REQUIRE(!cfg.set_count("broker.peer-buffer-size", 64));
    return cfg;
  };
  endpoint a{small()}, b{small()};
  connect(a, b);
  auto master = a.attach_master("narrow");
  REQUIRE(master);
  auto clone = b.attach_clone("narrow");
  REQUIRE(clone->await_ready(10s));
  constexpr int n = 5000;
  for (int i = 0; i < n; ++i) {
    REQUIRE(!master->put(i, i));
    REQUIRE(!clone->put(-i - 1, i));
  }
  CHECK(converges(*clone, n - 1, n - 1));
  CHECK(converges(*clone, -n, n - 1));
  CHECK(converges(*master, -n, n - 1));
  CHECK(get<set>(*master->keys()).size() == 2 * n);
  CHECK(a.peers().size() == 1);
  CHECK(b.peers().size() == 1);
  CHECK(a.metrics().kinds[static_cast<size_t>(handler_kind::peer)].disconnects == 0);
  CHECK(b.metrics().kinds[static_cast<size_t>(handler_kind::peer)].disconnects == 0);
}

TEST_CASE("await_verdict reports the master's rejections, through a clone too", "[store]") {
  endpoint a{fast_config()}, b{fast_config()};
  connect(a, b);
  auto master = a.attach_master("verdicts");
  REQUIRE(master);
  auto clone = b.attach_clone("verdicts");
  REQUIRE(clone);
  REQUIRE(clone->await_ready(10s));
  // Nothing written yet: applied.
  auto v = clone->await_verdict(5s);
  REQUIRE(v);
  CHECK(*v == write_verdict::applied);
  // Applied, and readable through the clone at once.
  REQUIRE(!clone->increment("hits", count{1}));
  v = clone->await_verdict(5s);
  REQUIRE(v);
  CHECK(*v == write_verdict::applied);
  auto hits = clone->get("hits");
  REQUIRE(hits);
  CHECK(*hits == data{count{1}});
  // Rejected by the master: the verdict is the error, once.
  REQUIRE(!clone->put("name", "bob"));
  REQUIRE(!clone->increment("name", integer{1}));
  v = clone->await_verdict(5s);
  REQUIRE_FALSE(v);
  CHECK(v.error_value() == ec::type_clash);
  v = clone->await_verdict(5s);
  REQUIRE(v);
  CHECK(*v == write_verdict::applied);
  // The master's own handle, with the master's full message.
  REQUIRE(!master->decrement("missing", integer{1}));
  v = master->await_verdict(5s);
  REQUIRE_FALSE(v);
  CHECK(v.error_value() == ec::no_such_key);
  CHECK(v.error_value().message().find("store verdicts:") == 0);
  CHECK(to_string(write_verdict::acknowledged) == "acknowledged");
}
