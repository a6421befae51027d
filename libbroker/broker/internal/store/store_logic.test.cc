// store_logic without actors or sockets: one master and two clones on a simulated bus that
// loses, duplicates and reorders messages (seeded, deterministic), thousands of writes from
// every side, then a quiet period: every clone must equal the master.

#include "broker/internal/store/store_logic.hh"

#include <catch2/catch.hpp>

#include <random>

using namespace broker;
using namespace broker::internal;
using namespace std::chrono_literals;

namespace {

/// One message in flight: due at `at`, for the stores subscribed to `topic`.
struct packet {
  timestamp at;
  uint64_t order; // Tie-breaker keeps runs deterministic.
  size_t from;
  std::string topic;
  data msg;
};

class bus;

/// Captures one store's outputs.
class node_env : public store_env {
public:
  node_env(bus& b, size_t index) : bus_(b), index_(index) {}
  void send_command(const std::string& topic, data msg) override;
  void store_event(data) override { ++events; }
  void write_failed(const error& err) override { failures.push_back(err); }
  size_t events = 0;
  std::vector<error> failures;

private:
  bus& bus_;
  size_t index_;
};

class bus {
public:
  explicit bus(uint32_t seed) : rng_(seed) {}

  /// Probabilities of losing, duplicating a message, and the maximum extra delay.
  double loss = 0;
  double dup = 0;
  timespan jitter = 0ms;

  void add(store_logic* x) { nodes_.push_back(x); }

  void send(size_t from, const std::string& topic, data msg) {
    if (chance(loss))
      return;
    int copies = chance(dup) ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      auto delay = jitter.count() > 0 ? timespan{rng_() % jitter.count()} : timespan{0};
      queue_.push_back(packet{now + 1ms + delay, next_order_++, from, topic, msg});
    }
  }

  /// Delivers everything due by `now` (in due order), then ticks every node.
  void step() {
    std::stable_sort(queue_.begin(), queue_.end(), [](const packet& x, const packet& y) {
      return x.at < y.at || (x.at == y.at && x.order < y.order);
    });
    std::vector<packet> due;
    while (!queue_.empty() && queue_.front().at <= now) {
      due.push_back(std::move(queue_.front()));
      queue_.erase(queue_.begin());
    }
    for (auto& p : due)
      for (size_t i = 0; i < nodes_.size(); ++i)
        if (i != p.from && subscribed(*nodes_[i], p.topic))
          nodes_[i]->handle(p.msg, now);
    for (auto* x : nodes_) {
      x->tick(now);
      x->flush();
    }
  }

  timestamp now{std::chrono::seconds{1'000'000}};

private:
  static bool subscribed(const store_logic& x, const std::string& topic) {
    return topic == (x.is_master() ? master_topic(x.name()) : clone_topic(x.name()));
  }

  bool chance(double p) {
    return p > 0 && std::uniform_real_distribution<double>{0, 1}(rng_) < p;
  }

  std::mt19937_64 rng_;
  std::vector<store_logic*> nodes_;
  std::vector<packet> queue_;
  uint64_t next_order_ = 0;
};


void node_env::send_command(const std::string& topic, data msg) {
  bus_.send(index_, topic, std::move(msg));
}

store_settings fast_settings() {
  store_settings st;
  st.heartbeat_interval = 50ms;
  st.timeout_intervals = 10;
  st.request_timeout = 2s;
  st.probe_timeout = 0ms;
  return st;
}

/// The state a store answers with: all keys and their values.
std::map<data, data> contents(store_logic& x) {
  std::map<data, data> result;
  data ks;
  x.keys([&](expected<data> r) {
    REQUIRE(r);
    ks = *r;
  });
  for (auto& k : get<set>(ks))
    x.get(k, [&](expected<data> r) {
      REQUIRE(r);
      result.emplace(k, *r);
    });
  return result;
}

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
  auto master = make_master_logic("s", 11, make_memory_backend(), fast_settings(), env_m);
  auto clone_a = make_clone_logic("s", 22, fast_settings(), env_a);
  auto clone_b = make_clone_logic("s", 33, fast_settings(), env_b);
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
        w->write(make_op_put(key, integer{i}, std::nullopt, "p"), net.now);
        break;
      case 2:
        w->write(make_op_add(key, integer{1}, data::type::integer, std::nullopt, "p"),
                 net.now);
        break;
      case 3:
        w->write(make_op_erase(key, "p"), net.now);
        break;
      case 4:
        w->put_unique(key, integer{-i}, std::nullopt, "p", net.now,
                      [&](expected<data>) { ++unique_answers; });
        break;
      default:
        w->write(make_op_put(key, "text", 100ms, "p"), net.now);
    }
    net.now += 1ms;
    net.step();
  }
  // Heal the network and let the channels settle.
  net.loss = 0;
  net.dup = 0;
  for (int i = 0; i < 4000; ++i) {
    net.now += 5ms;
    net.step();
  }
  auto expected_state = contents(*master);
  CHECK(contents(*clone_a) == expected_state);
  CHECK(contents(*clone_b) == expected_state);
  CHECK(clone_a->ready());
  CHECK(clone_b->ready());
  // Every put_unique got an answer (inserted, refused, or a timeout while messages were lost).
  CHECK(unique_answers > 0);
}

TEST_CASE("a second master learns that one exists", "[store_logic]") {
  bus net{7};
  node_env env_1{net, 0}, env_2{net, 1};
  auto st = fast_settings();
  auto first = make_master_logic("m", 1, make_memory_backend(), st, env_1);
  st.probe_timeout = 200ms;
  auto second = make_master_logic("m", 2, make_memory_backend(), st, env_2);
  net.add(first.get());
  net.add(second.get());
  first->start(net.now);
  second->start(net.now);
  CHECK(!second->ready());
  for (int i = 0; i < 50; ++i) {
    net.now += 10ms;
    net.step();
  }
  CHECK(second->failure() == ec::master_exists);
  CHECK(first->ready());
}

TEST_CASE("garbage commands change nothing", "[store_logic]") {
  bus net{9};
  node_env env_m{net, 0}, env_c{net, 1};
  auto master = make_master_logic("g", 1, make_memory_backend(), fast_settings(), env_m);
  auto clone = make_clone_logic("g", 2, fast_settings(), env_c);
  master->write(make_op_put("k", 1, std::nullopt, "p"), net.now);
  std::vector<data> garbage = {
    data{},
    data{"c"},
    vector{},
    vector{"c"},
    vector{"c", count{5}},
    vector{"c", count{5}, vector{count{99}}},
    vector{"w", "x", vector{}},
    vector{"r", count{2}, count{1}, "no"},
    vector{"put", "k", 2},
    vector{"exists", count{1}},
    vector{count{1}, count{2}, count{3}, count{4}},
  };
  for (auto& g : garbage) {
    master->handle(g, net.now);
    clone->handle(g, net.now);
  }
  master->get("k", [](expected<data> r) { CHECK(*r == data{1}); });
  clone->get("k", [](expected<data> r) { CHECK(r.error_value() == ec::stale_data); });
  CHECK(master->ready());
}

TEST_CASE("clone writes survive an outage of any length exactly once", "[store_logic]") {
  bus net{5};
  node_env env_m{net, 0}, env_c{net, 1};
  auto master = make_master_logic("o", 1, make_memory_backend(), fast_settings(), env_m);
  auto clone = make_clone_logic("o", 2, fast_settings(), env_c);
  net.add(master.get());
  net.add(clone.get());
  master->start(net.now);
  clone->start(net.now);
  auto run = [&](int steps) {
    for (int i = 0; i < steps; ++i) {
      net.now += 10ms;
      net.step();
    }
  };
  run(100);
  REQUIRE(clone->ready());
  // Increments are not idempotent: a lost or a repeated write changes the sum.
  for (int i = 0; i < 100; ++i)
    clone->write(make_op_add("ctr", integer{1}, data::type::integer, std::nullopt, "p"),
                 net.now);
  run(2);
  // A partition 40 times longer than the silence timeout (10 x 50 ms), writes continuing.
  net.loss = 1.0;
  for (int i = 0; i < 200; ++i) {
    clone->write(make_op_add("ctr", integer{1}, data::type::integer, std::nullopt, "p"),
                 net.now);
    run(10);
  }
  net.loss = 0;
  run(1000);
  master->get("ctr", [](expected<data> r) {
    REQUIRE(r);
    CHECK(*r == data{integer{300}});
  });
  clone->get("ctr", [](expected<data> r) {
    REQUIRE(r);
    CHECK(*r == data{integer{300}});
  });
}

TEST_CASE("stores report Broker's store metrics: entries, channels, pending updates",
          "[store_logic]") {
  bus net{5};
  node_env env_m{net, 0}, env_a{net, 1}, env_b{net, 2};
  auto master = make_master_logic("s", 11, make_memory_backend(), fast_settings(), env_m);
  auto clone_a = make_clone_logic("s", 22, fast_settings(), env_a);
  auto clone_b = make_clone_logic("s", 33, fast_settings(), env_b);
  net.add(master.get());
  net.add(clone_a.get());
  net.add(clone_b.get());
  master->start(net.now);
  clone_a->start(net.now);
  clone_b->start(net.now);
  for (int i = 0; i < 10; ++i)
    master->write(make_op_put(data{count{static_cast<count>(i)}}, integer{i}, std::nullopt,
                              "p"),
                  net.now);
  clone_a->write(make_op_put(data{"from-a"}, integer{1}, std::nullopt, "p"), net.now);
  for (int i = 0; i < 400; ++i) {
    net.now += 5ms;
    net.step();
  }
  auto m = master->stats();
  CHECK(m.name == "s");
  CHECK(m.master);
  CHECK(m.entries == 11);
  CHECK(m.output_channels == 2);
  CHECK(m.input_channels >= 1); // Clone a's write channel (b never wrote, may be attached).
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
