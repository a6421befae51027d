// store_logic without actors or sockets: masters and clones on a simulated bus that loses,
// duplicates and reorders messages (seeded, deterministic). Everything on the bus is
// Broker's store commands in their encoding (store_wire.hh).

#include "broker/internal/store/store_logic.test.hh"

#include "broker/internal/store/clone.hh"
#include "broker/internal/store/master.hh"

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::test;
using namespace std::chrono_literals;

namespace {

const entity_id writer_p{ep(0x99), 1};

} // namespace

TEST_CASE("master and clones converge under loss, duplication and reordering",
          "[store_logic]") {
  auto seed = GENERATE(1u, 2u, 3u);
  auto loss = GENERATE(0.0, 0.2);
  INFO("seed " << seed << ", loss " << loss);
  bus net{seed};
  net.loss = loss;
  net.dup = 0.1;
  net.jitter = 20ms;
  node_env env_m{net, 0}, env_a{net, 1}, env_b{net, 2};
  auto master = make_master_logic("s", {ep(1), 11}, make_memory_backend(), fast_settings(),
                                  env_m);
  auto clone_a = make_clone_logic("s", {ep(2), 22}, fast_settings(), env_a);
  auto clone_b = make_clone_logic("s", {ep(3), 33}, fast_settings(), env_b);
  net.add(master.get());
  net.add(clone_a.get());
  net.add(clone_b.get());
  master->start(net.now);
  clone_a->start(net.now);
  clone_b->start(net.now);
  std::mt19937 rng{seed};
  store_logic* writers[] = {master.get(), clone_a.get(), clone_b.get()};
  size_t unique_answers = 0;
  for (int i = 0; i < 3000; ++i) {
    auto* w = writers[rng() % 3];
    auto key = data{count{rng() % 200}};
    switch (rng() % 6) {
      case 0:
      case 1:
        w->write(make_op_put(key, integer{i}, std::nullopt, writer_p), net.now);
        break;
      case 2:
        w->write(make_op_add(key, integer{1}, data::type::integer, std::nullopt, writer_p),
                 net.now);
        break;
      case 3:
        w->write(make_op_erase(key, writer_p), net.now);
        break;
      case 4:
        w->put_unique(key, integer{-i}, std::nullopt, writer_p, net.now,
                      [&](expected<data>) { ++unique_answers; });
        break;
      default:
        w->write(make_op_put(key, "text", 100ms, writer_p), net.now);
    }
    net.now += 1ms;
    net.step();
  }
  // Heal the network and let the channels settle.
  net.loss = 0;
  net.dup = 0;
  net.run(4000, 5ms);
  auto expected_state = contents(*master);
  CHECK(contents(*clone_a) == expected_state);
  CHECK(contents(*clone_b) == expected_state);
  CHECK(clone_a->ready());
  CHECK(clone_b->ready());
  // Every put_unique got an answer (inserted, refused, or a timeout while messages were lost).
  CHECK(unique_answers > 0);
  CHECK(master->malformed() == 0);
  CHECK(clone_a->malformed() == 0);
}

TEST_CASE("a second master learns that one exists", "[store_logic]") {
  bus net{7};
  node_env env_1{net, 0}, env_2{net, 1};
  auto st = fast_settings();
  auto first = make_master_logic("m", {ep(1), 1}, make_memory_backend(), st, env_1);
  net.add(first.get());
  first->start(net.now);
  net.run(5);
  st.probe_timeout = 200ms;
  auto second = make_master_logic("m", {ep(2), 2}, make_memory_backend(), st, env_2);
  net.add(second.get());
  second->start(net.now);
  CHECK(!second->ready());
  net.run(50);
  CHECK(second->failure() == ec::master_exists);
  CHECK(first->ready());
  SECTION("without another master, the probe ends after its timeout") {
    bus alone{8};
    node_env env{alone, 0};
    auto only = make_master_logic("m", {ep(3), 3}, make_memory_backend(), st, env);
    alone.add(only.get());
    only->start(alone.now);
    alone.run(19);
    CHECK(!only->ready());
    alone.run(2);
    CHECK(only->ready());
    CHECK(!only->failure());
  }
}

TEST_CASE("malformed and misdirected commands are dropped, counted and change nothing",
          "[store_logic]") {
  bus net{9};
  node_env env_m{net, 0}, env_c{net, 1};
  auto master = make_master_logic("g", {ep(1), 1}, make_memory_backend(), fast_settings(),
                                  env_m);
  auto clone = make_clone_logic("g", {ep(2), 2}, fast_settings(), env_c);
  master->write(make_op_put("k", 1, std::nullopt, writer_p), net.now);
  std::mt19937_64 rng{9};
  auto valid = store_wire::encode(
    store_wire::command{2, {ep(7), 7}, {}, store_wire::put{"k", 2, std::nullopt, {}}});
  REQUIRE(valid);
  std::vector<std::string> garbage = {"", std::string(1, '\0'), "garbage",
                                      std::string(200, '\xff')};
  for (size_t n = 0; n < valid->size(); ++n)
    garbage.push_back(valid->substr(0, n)); // Every truncation.
  garbage.push_back(*valid + "x");           // Trailing bytes.
  for (int i = 0; i < 200; ++i) {
    std::string x(rng() % 80, '\0');
    for (auto& c : x)
      c = static_cast<char>(rng());
    garbage.push_back(std::move(x));
  }
  for (auto& g : garbage) {
    master->handle(master_topic("g"), g, net.now);
    clone->handle(clone_topic("g"), g, net.now);
  }
  CHECK(master->malformed() == garbage.size());
  CHECK(clone->malformed() == garbage.size());
  CHECK(!env_m.warnings.empty());
  // Well-formed, but from a writer nobody attached, or without a sequence number, or meant
  // for another master: not applied.
  auto stranger = [&](uint64_t seq, store_wire::content what, entity_id to = {}) {
    auto bytes = store_wire::encode(store_wire::command{seq, {ep(7), 7}, to, std::move(what)});
    REQUIRE(bytes);
    master->handle(master_topic("g"), *bytes, net.now);
  };
  stranger(2, store_wire::put{"k", 2, std::nullopt, {}});
  stranger(0, store_wire::erase{"k", {}});
  stranger(3, store_wire::clear{{}}, entity_id{ep(5), 5});
  stranger(4, store_wire::expire{"k", {}});
  master->get("k", [](expected<data> r) { CHECK(*r == data{1}); });
  clone->get("k", [](expected<data> r) { CHECK(r.error_value() == ec::stale_data); });
  CHECK(master->ready());
}

// Found by fuzz/store_commands (doc/fuzzing.md, F2): the master added a write's expiry to
// its clock unchecked, so an expiry near the int64 limits overflowed (undefined behaviour;
// in practice the deadline wrapped to the other end and the key expired at once or never).
TEST_CASE("expiries at the ends of the int64 range saturate instead of overflowing",
          "[store_logic]") {
  bus net{11};
  node_env env_m{net, 0};
  auto master = make_master_logic("x", {ep(1), 1}, make_memory_backend(), fast_settings(),
                                  env_m);
  constexpr auto huge = timespan::max();
  constexpr auto tiny = timespan::min();
  // The value, nil if there is none, "<error>" on any other error.
  auto value_of = [&](const data& key) {
    data result{"<error>"};
    master->get(key, [&](expected<data> r) {
      if (r)
        result = std::move(*r);
      else if (r.error_value() == ec::no_such_key)
        result = data{};
    });
    return result;
  };
  // Through the API.
  master->write(make_op_put("never", 1, huge, writer_p), net.now);
  master->write(make_op_put("gone", 2, tiny, writer_p), net.now);
  master->write(make_op_add("sum", integer{3}, data::type::integer, huge, writer_p), net.now);
  // Through a clone's write channel, as Broker's clones send them (hostile or not).
  const entity_id writer{ep(7), 7};
  auto from_writer = [&](uint64_t seq, store_wire::content what) {
    auto bytes = store_wire::encode(store_wire::command{seq, writer, {ep(1), 1}, std::move(what)});
    REQUIRE(bytes);
    master->handle(master_topic("x"), *bytes, net.now);
  };
  from_writer(0, store_wire::attach_writer{1, 5});
  from_writer(2, store_wire::put{"w-never", 4, huge, writer_p});
  from_writer(3, store_wire::put{"w-gone", 5, tiny, writer_p});
  from_writer(4, store_wire::subtract{"sum", integer{1}, huge, writer_p});
  from_writer(5, store_wire::put_unique{"w-unique", 6, huge, writer, 1, writer_p});
  master->flush();
  net.now += std::chrono::hours{24 * 365};
  master->tick(net.now);
  master->flush();
  CHECK(value_of("never") == data{1});
  CHECK(value_of("w-never") == data{4});
  CHECK(value_of("sum") == data{integer{2}});
  CHECK(value_of("w-unique") == data{6});
  CHECK(value_of("gone") == data{});
  CHECK(value_of("w-gone") == data{});
  CHECK(env_m.failures.empty());
}

TEST_CASE("clone writes survive an outage of any length exactly once", "[store_logic]") {
  bus net{5};
  node_env env_m{net, 0}, env_c{net, 1};
  auto master = make_master_logic("o", {ep(1), 1}, make_memory_backend(), fast_settings(),
                                  env_m);
  auto clone = make_clone_logic("o", {ep(2), 2}, fast_settings(), env_c);
  net.add(master.get());
  net.add(clone.get());
  master->start(net.now);
  clone->start(net.now);
  net.run(100);
  REQUIRE(clone->ready());
  auto bump = [&] {
    clone->write(make_op_add("ctr", integer{1}, data::type::integer, std::nullopt, writer_p),
                 net.now);
  };
  // Increments are not idempotent: a lost or a repeated write changes the sum.
  for (int i = 0; i < 100; ++i)
    bump();
  net.run(2);
  // A partition 40 times longer than the silence timeout (10 x 50 ms), writes continuing.
  net.loss = 1.0;
  for (int i = 0; i < 200; ++i) {
    bump();
    net.run(10);
  }
  net.loss = 0;
  net.run(1000);
  master->get("ctr", [](expected<data> r) {
    REQUIRE(r);
    CHECK(*r == data{integer{300}});
  });
  clone->get("ctr", [](expected<data> r) {
    REQUIRE(r);
    CHECK(*r == data{integer{300}});
  });
}

TEST_CASE("clones re-attach to a restarted master and keep writing", "[store_logic]") {
  bus net{6};
  node_env env_m{net, 0}, env_c{net, 1};
  auto backend = make_memory_backend();
  auto* shared = backend.get();
  // The backend outlives the first master, as an SQLite file would.
  struct borrowed : store_backend {
    explicit borrowed(store_backend* x) : x(x) {}
    error put(const data& k, data v, std::optional<timestamp> e) override {
      return x->put(k, std::move(v), e);
    }
    expected<bool> put_unique(const data& k, data v, std::optional<timestamp> e) override {
      return x->put_unique(k, std::move(v), e);
    }
    error add(const data& k, const data& v, data::type t, std::optional<timestamp> e) override {
      return x->add(k, v, t, e);
    }
    error subtract(const data& k, const data& v, std::optional<timestamp> e) override {
      return x->subtract(k, v, e);
    }
    error erase(const data& k) override { return x->erase(k); }
    error clear() override { return x->clear(); }
    expected<bool> expire(const data& k, timestamp now) override { return x->expire(k, now); }
    expected<data> get(const data& k) const override { return x->get(k); }
    expected<bool> exists(const data& k) const override { return x->exists(k); }
    expected<data> keys() const override { return x->keys(); }
    expected<uint64_t> size() const override { return x->size(); }
    expected<std::vector<std::pair<data, data>>> snapshot() const override {
      return x->snapshot();
    }
    expected<std::vector<std::pair<data, timestamp>>> expiries() const override {
      return x->expiries();
    }
    error begin_batch() override { return x->begin_batch(); }
    error commit_batch() override { return x->commit_batch(); }
    store_backend* x;
  };
  auto master = make_master_logic("r", {ep(1), 1}, std::make_unique<borrowed>(shared),
                                  fast_settings(), env_m);
  auto clone = make_clone_logic("r", {ep(2), 2}, fast_settings(), env_c);
  auto mi = net.add(master.get());
  net.add(clone.get());
  master->start(net.now);
  clone->start(net.now);
  net.run(50);
  clone->write(make_op_put("a", 1, std::nullopt, writer_p), net.now);
  net.run(50);
  auto* first = dynamic_cast<clone_logic*>(clone.get());
  REQUIRE(first->master());
  auto old_master = *first->master();
  // The master process restarts: a new entity, the same data.
  net.replace(mi, nullptr);
  net.run(20);
  master = make_master_logic("r", {ep(1), 77}, std::make_unique<borrowed>(shared),
                             fast_settings(), env_m);
  net.replace(mi, master.get());
  master->start(net.now);
  net.run(100);
  REQUIRE(first->master());
  CHECK(*first->master() != old_master);
  clone->write(make_op_put("b", 2, std::nullopt, writer_p), net.now);
  net.run(100);
  CHECK(contents(*clone) == contents(*master));
  CHECK(contents(*master).size() == 2);
}

TEST_CASE("stores report Broker's store metrics: entries, channels, pending updates",
          "[store_logic]") {
  bus net{5};
  node_env env_m{net, 0}, env_a{net, 1}, env_b{net, 2};
  auto master = make_master_logic("s", {ep(1), 11}, make_memory_backend(), fast_settings(),
                                  env_m);
  auto clone_a = make_clone_logic("s", {ep(2), 22}, fast_settings(), env_a);
  auto clone_b = make_clone_logic("s", {ep(3), 33}, fast_settings(), env_b);
  net.add(master.get());
  net.add(clone_a.get());
  net.add(clone_b.get());
  master->start(net.now);
  clone_a->start(net.now);
  clone_b->start(net.now);
  for (int i = 0; i < 10; ++i)
    master->write(make_op_put(data{count{static_cast<count>(i)}}, integer{i}, std::nullopt,
                              writer_p),
                  net.now);
  clone_a->write(make_op_put(data{"from-a"}, integer{1}, std::nullopt, writer_p), net.now);
  net.run(400, 5ms);
  auto m = master->stats();
  CHECK(m.name == "s");
  CHECK(m.master);
  CHECK(m.entries == 11);
  CHECK(m.output_channels == 2);
  CHECK(m.input_channels >= 1); // Clone a's write channel (b never wrote, may be attached).
  CHECK(m.out_of_order_updates == 0);
  CHECK(m.unacknowledged_updates == 0);
  CHECK(m.processed_updates >= 11);
  auto a = clone_a->stats();
  CHECK_FALSE(a.master);
  CHECK(a.entries == 11);
  CHECK(a.input_channels == 1);
  CHECK(a.output_channels == 1);
  CHECK(a.out_of_order_updates == 0);
  CHECK(a.unacknowledged_updates == 0);
  CHECK(a.processed_updates == 1);
}

TEST_CASE("a clone learns the master's verdict on its writes and reads them back",
          "[store_logic]") {
  bus net{11};
  node_env env_m{net, 0}, env_c{net, 1};
  auto master = make_master_logic("v", {ep(1), 1}, make_memory_backend(), fast_settings(),
                                  env_m);
  auto clone = make_clone_logic("v", {ep(2), 2}, fast_settings(), env_c);
  net.add(master.get());
  net.add(clone.get());
  master->start(net.now);
  clone->start(net.now);
  net.run(20);
  REQUIRE(clone->ready());
  std::optional<expected<data>> verdict;
  auto ask = [&] {
    verdict.reset();
    clone->verdict(net.now, [&](expected<data> r) { verdict = std::move(r); });
    for (int i = 0; i < 200 && !verdict; ++i)
      net.run(1);
    REQUIRE(verdict);
  };
  // Accepted: the verdict is true, and the clone already holds the result.
  clone->write(make_op_add("hits", count{1}, data::type::count, std::nullopt, writer_p),
               net.now);
  ask();
  REQUIRE(*verdict);
  CHECK(**verdict == data{true});
  clone->get("hits", [](expected<data> r) {
    REQUIRE(r);
    CHECK(*r == data{count{1}});
  });
  // Rejected: increment of a string is type_clash, through the clone too.
  clone->write(make_op_put("name", "bob", std::nullopt, writer_p), net.now);
  clone->write(make_op_add("name", integer{1}, data::type::integer, std::nullopt, writer_p),
               net.now);
  clone->write(make_op_put("other", integer{2}, std::nullopt, writer_p), net.now);
  ask();
  REQUIRE_FALSE(*verdict);
  CHECK(verdict->error_value() == ec::type_clash);
  CHECK(verdict->error_value().message().find("store v: the master rejected a write") == 0);
  CHECK(master->stats().rejected_writes == 1);
  CHECK(std::any_of(env_m.warnings.begin(), env_m.warnings.end(), [](const std::string& w) {
    return w.find("store v: add of key") == 0 && w.find("rejected write 1") != std::string::npos;
  }));
  // The rejection is reported once: the next verdict covers only later writes.
  ask();
  REQUIRE(*verdict);
  CHECK(**verdict == data{true});
  // A decrement of a missing key: no_such_key.
  clone->write(make_op_subtract("missing", integer{1}, std::nullopt, writer_p), net.now);
  ask();
  REQUIRE_FALSE(*verdict);
  CHECK(verdict->error_value() == ec::no_such_key);
  CHECK(master->malformed() == 0);
  CHECK(clone->malformed() == 0);
}

TEST_CASE("a master's verdict covers its local writes since the last one", "[store_logic]") {
  bus net{12};
  node_env env{net, 0};
  auto master = make_master_logic("w", {ep(1), 1}, make_memory_backend(), fast_settings(),
                                  env);
  net.add(master.get());
  master->start(net.now);
  auto verdict_now = [&] {
    std::optional<expected<data>> result;
    master->verdict(net.now, [&](expected<data> r) { result = std::move(r); });
    REQUIRE(result);
    return *result;
  };
  CHECK(*verdict_now() == data{true});
  master->write(make_op_put("s", "text", std::nullopt, writer_p), net.now);
  master->write(make_op_add("s", integer{1}, data::type::integer, std::nullopt, writer_p),
                net.now);
  auto rejected = verdict_now();
  REQUIRE_FALSE(rejected);
  CHECK(rejected.error_value() == ec::type_clash);
  CHECK(rejected.error_value().message().find("store w: add of key") == 0);
  CHECK(*verdict_now() == data{true});
  CHECK(master->stats().rejected_writes == 1);
}

TEST_CASE("a clone without a master answers a verdict request with no_such_master",
          "[store_logic]") {
  bus net{13};
  node_env env{net, 0};
  auto clone = make_clone_logic("x", {ep(2), 2}, fast_settings(), env);
  net.add(clone.get());
  clone->start(net.now);
  std::optional<expected<data>> verdict;
  clone->verdict(net.now, [&](expected<data> r) { verdict = std::move(r); });
  net.run(150, 10ms);
  CHECK(!verdict);
  net.run(60, 10ms); // Past the 2 s request timeout.
  REQUIRE(verdict);
  REQUIRE_FALSE(*verdict);
  CHECK(verdict->error_value() == ec::no_such_master);
}
