// The channel on a simulated network that loses, duplicates and reorders messages, driven by
// a virtual clock: a master's producer with up to three consumers (snapshot mode), and a
// clone's write channel (writer mode). Owners are modelled as the stores do it: a consumer's
// handle changes with every attach.

#include "broker/internal/store/replication_channel.test.hh"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <tuple>

using namespace broker;
using namespace broker::internal::channel;
using namespace broker::internal::channel::test;
using namespace std::literals;

namespace {

/// Loss, duplication and reordering (a random delay per copy) of every message.
struct net_config {
  double loss = 0.2;
  double duplication = 0.1;
  std::chrono::milliseconds min_delay = 1ms;
  std::chrono::milliseconds max_delay = 40ms;
};

/// The simulation's time step and the producer's rate.
constexpr auto step = 10ms;

constexpr int producer_node = 0;
constexpr int num_consumers = 3;

/// Handles of consumer i: object i * stride + attach id.
constexpr uint64_t stride = 1'000'000;

/// A clone's state, as its owner keeps it: the list of payloads applied so far. The
/// master's state (`history`) is the list of all payloads, so a consistent clone state is
/// always a prefix of it.
struct clone_model {
  std::vector<count> state;
  size_t snapshots = 0;
  size_t first_snapshot_size = 0;
  std::string problem; // The first inconsistency seen.
};

/// Drops messages at random, copies some, delays every copy by a random amount.
class lossy_net {
public:
  lossy_net(uint32_t seed, net_config cfg) : rng_(seed), cfg_(cfg) {}

  /// How many copies of a message to send now (0: lost), each with its delay.
  std::vector<timespan> copies() {
    std::vector<timespan> result;
    if (chance() < cfg_.loss)
      return result;
    auto n = chance() < cfg_.duplication ? 2 : 1;
    auto span = static_cast<uint64_t>((cfg_.max_delay - cfg_.min_delay).count()) + 1;
    for (int k = 0; k < n; ++k)
      result.push_back(cfg_.min_delay + std::chrono::milliseconds{rng_() % span});
    return result;
  }

  double chance() { return std::uniform_real_distribution<double>{0.0, 1.0}(rng_); }

  std::mt19937& rng() { return rng_; }

private:
  std::mt19937 rng_;
  net_config cfg_;
};

/// One producer and up to three consumers (nodes 1-3).
class world {
public:
  world(uint32_t seed, net_config net, producer_config pcfg = test_producer_config(),
        consumer_config ccfg = test_consumer_config())
    : net_(seed, net), pcfg_(pcfg), ccfg_(ccfg) {
    pcfg_.heartbeat_always = true; // As a master's.
    start_producer();
    consumers_.resize(num_consumers + 1);
    models_.resize(num_consumers + 1);
  }

  /// Creates and starts consumer `i` (1-3).
  void add_consumer(int i) {
    auto& model = models_[i];
    auto on_snapshot = [this, &model](const state_ptr& x) {
      ++model.snapshots;
      model.state.clear();
      if (x)
        for (auto& kv : *x)
          model.state.push_back(get_if<count>(kv.first) ? get<count>(kv.first)
                                                        : count{999999999});
      if (model.snapshots == 1)
        model.first_snapshot_size = model.state.size();
      if (model.problem.empty()
          && (model.state.size() > history_.size()
              || !std::equal(model.state.begin(), model.state.end(), history_.begin())))
        model.problem = "snapshot is not a prefix of the history";
    };
    auto on_deliver = [this, &model](const payload& x) {
      model.state.push_back(number(x));
      auto n = model.state.size();
      if (model.problem.empty() && (n > history_.size() || history_[n - 1] != model.state.back()))
        model.problem = "delivered " + std::to_string(number(x)) + " as element "
                        + std::to_string(n - 1);
    };
    consumers_[i] = std::make_unique<consumer>(ccfg_, on_snapshot, on_deliver);
    send_all(i, consumers_[i]->start(now_));
  }

  /// Replaces the producer by a new incarnation with the next epoch and the same state, as a
  /// restarted master would load it from its backend.
  void restart_producer() { start_producer(); }

  /// Which way a partition cuts.
  enum class way { both, to_consumer, to_producer };

  /// Cuts consumer `i` off the network (or heals it), in both directions or one.
  void partition(int i, bool cut, way w = way::both) {
    cut_to_.erase(i);
    cut_from_.erase(i);
    if (!cut)
      return;
    if (w != way::to_producer)
      cut_to_.insert(i);
    if (w != way::to_consumer)
      cut_from_.insert(i);
  }

  /// Advances the clock by `steps` steps, producing one payload per step while `produce`.
  void run(size_t steps, bool produce = false) {
    for (size_t k = 0; k < steps; ++k) {
      now_ += step;
      if (produce) {
        history_.push_back(history_.size());
        route(producer_->produce(pl(history_.size() - 1)));
      }
      deliver_due();
      route(producer_->tick(now_));
      for (int i = 1; i <= num_consumers; ++i)
        if (consumers_[i])
          send_all(i, consumers_[i]->tick(now_));
      if (producer_->buffered() > pcfg_.max_buffered_events && problem_.empty())
        problem_ = "producer buffer exceeds its limit";
    }
  }

  void produce(size_t n) { run(n, true); }

  /// Runs until every consumer holds the whole history, or `limit` passed.
  bool converge(timespan limit = 60s) {
    auto deadline = now_ + limit;
    while (!converged()) {
      if (now_ >= deadline)
        return false;
      run(1);
    }
    return true;
  }

  bool converged() const {
    for (int i = 1; i <= num_consumers; ++i)
      if (consumers_[i] && models_[i].state != history_)
        return false;
    return true;
  }

  const clone_model& model(int i) const { return models_[i]; }
  bool has_consumer(int i) const { return consumers_[i] != nullptr; }
  const consumer& get_consumer(int i) const { return *consumers_[i]; }
  const producer& get_producer() const { return *producer_; }
  const std::vector<count>& history() const { return history_; }
  const std::string& problem() const { return problem_; }

  /// True if the producer dropped one of consumer i's handles (for `why`, if given).
  bool dropped(int i, std::optional<producer::drop_reason> why = std::nullopt) const {
    return std::any_of(drops_.begin(), drops_.end(), [&](auto& x) {
      return static_cast<int>(x.first.object / stride) == i && (!why || x.second == *why);
    });
  }

  bool no_drops() const { return drops_.empty(); }

private:
  struct packet {
    timestamp due;
    uint64_t order;
    int from;
    int to;
    handle from_handle;
    message msg;
  };

  struct later {
    bool operator()(const packet& x, const packet& y) const {
      return std::tie(x.due, x.order) > std::tie(y.due, y.order);
    }
  };

  void start_producer() {
    ++epoch_;
    auto snapshot = [this] {
      std::vector<count> xs(history_.begin(), history_.end());
      return state_of(xs);
    };
    auto on_drop = [this](const handle& who, producer::drop_reason why) {
      drops_.emplace_back(who, why);
    };
    producer_ = std::make_unique<producer>(epoch_, pcfg_, snapshot, on_drop);
  }

  void send(int from, int to, handle from_handle, const message& msg) {
    if (cut_from_.count(from) > 0 || cut_to_.count(to) > 0)
      return;
    for (auto delay : net_.copies())
      queue_.push(packet{now_ + delay, next_order_++, from, to, from_handle, msg});
  }

  void send_all(int from, const consumer::outputs& xs) {
    for (auto& x : xs) {
      // The owner sends an attach from the entity of its new id, the rest from the current.
      auto id = std::holds_alternative<attach>(x) ? std::get<attach>(x).id
                                                   : consumers_[from]->attach_id();
      send(from, producer_node, h(static_cast<uint64_t>(from) * stride + id), x);
    }
  }

  void route(const producer::outputs& xs) {
    for (auto& x : xs) {
      if (x.to) {
        auto msg = x.msg;
        if (auto* answer = std::get_if<handshake>(&msg))
          answer->attach_id = x.to->object % stride; // The receiver entity names the attach.
        send(producer_node, static_cast<int>(x.to->object / stride), h(0), msg);
        continue;
      }
      // Like a publication on the clones' topic: every clone gets it, attached or not.
      for (int i = 1; i <= num_consumers; ++i)
        if (consumers_[i])
          send(producer_node, i, h(0), x.msg);
    }
  }

  void deliver_due() {
    while (!queue_.empty() && queue_.top().due <= now_) {
      auto pkt = queue_.top();
      queue_.pop();
      if (pkt.to == producer_node)
        route(producer_->handle_message(pkt.from_handle, pkt.msg, now_));
      else if (consumers_[pkt.to])
        send_all(pkt.to, consumers_[pkt.to]->handle(pkt.msg, now_));
    }
  }

  lossy_net net_;
  producer_config pcfg_;
  consumer_config ccfg_;
  timestamp now_{};
  epoch_id epoch_ = 0;
  std::unique_ptr<producer> producer_;
  std::vector<std::unique_ptr<consumer>> consumers_;
  std::vector<clone_model> models_;
  std::vector<count> history_;
  std::set<int> cut_to_;   // Consumers that receive nothing.
  std::set<int> cut_from_; // Consumers whose messages get lost.
  std::priority_queue<packet, std::vector<packet>, later> queue_;
  uint64_t next_order_ = 0;
  std::vector<std::pair<handle, producer::drop_reason>> drops_;
  std::string problem_;
};

/// The channel's state, for failure messages.
std::string describe(const world& w) {
  auto& p = w.get_producer();
  auto text = "producer epoch " + std::to_string(p.epoch()) + ", last_seq "
              + std::to_string(p.last_seq()) + ", buffered " + std::to_string(p.buffered());
  for (auto& who : p.consumers())
    text += ", consumer " + std::to_string(who.object) + " acked "
            + std::to_string(*p.acked(who));
  for (int i = 1; i <= num_consumers && w.has_consumer(i); ++i) {
    auto& c = w.get_consumer(i);
    text += "\nconsumer " + std::to_string(i) + ": state "
            + std::to_string(static_cast<int>(c.current_state())) + ", epoch "
            + std::to_string(c.epoch()) + ", next_seq " + std::to_string(c.next_seq())
            + ", buffered " + std::to_string(c.buffered()) + ", holds "
            + std::to_string(w.model(i).state.size()) + " of "
            + std::to_string(w.history().size()) + " payloads after "
            + std::to_string(w.model(i).snapshots) + " snapshots";
  }
  return text;
}

void require_consistent(const world& w) {
  INFO(describe(w));
  CHECK(w.problem() == "");
  for (int i = 1; i <= num_consumers && w.has_consumer(i); ++i) {
    INFO("consumer " << i);
    CHECK(w.model(i).problem == "");
    CHECK(w.model(i).state == w.history());
  }
}

/// Runs `w` until every consumer holds the whole history (at most a minute of virtual time)
/// and checks every delivery on the way was consistent.
void require_converged(world& w) {
  auto ok = w.converge();
  INFO(describe(w));
  REQUIRE(ok);
  require_consistent(w);
}

} // namespace

TEST_CASE("channel consumers deliver every payload in order over a lossy, duplicating, "
          "reordering network",
          "[channel]") {
  auto seed = GENERATE(1u, 2u, 3u, 4u);
  INFO("seed " << seed);
  world w{seed, net_config{}};
  for (int i = 1; i <= num_consumers; ++i)
    w.add_consumer(i);
  w.produce(2000);
  require_converged(w);
  // Retransmissions alone repaired the losses: nobody fell back to a second snapshot.
  CHECK(w.no_drops());
  for (int i = 1; i <= num_consumers; ++i) {
    CHECK(w.model(i).snapshots == 1);
    CHECK(w.model(i).first_snapshot_size < 200); // Attached near the start.
  }
}

TEST_CASE("channel consumers deliver every payload when the network is perfect",
          "[channel]") {
  world w{1, net_config{0.0, 0.0, 1ms, 1ms}};
  for (int i = 1; i <= num_consumers; ++i)
    w.add_consumer(i);
  w.produce(500);
  require_converged(w);
  for (int i = 1; i <= num_consumers; ++i)
    CHECK(w.model(i).snapshots == 1);
  CHECK(w.no_drops());
}

TEST_CASE("a channel consumer that attaches mid-stream gets a snapshot and then the events "
          "after it",
          "[channel]") {
  auto seed = GENERATE(5u, 6u);
  INFO("seed " << seed);
  world w{seed, net_config{}};
  w.add_consumer(1);
  w.add_consumer(2);
  w.produce(500);
  w.add_consumer(3);
  w.produce(500);
  require_converged(w);
  CHECK(w.model(3).first_snapshot_size >= 500);
  CHECK(w.model(3).first_snapshot_size < 1000);
}

TEST_CASE("a channel consumer partitioned past every timeout recovers through a snapshot",
          "[channel]") {
  auto seed = GENERATE(7u, 8u);
  INFO("seed " << seed);
  auto pcfg = test_producer_config();
  pcfg.max_buffered_events = 64;
  world w{seed, net_config{}, pcfg};
  for (int i = 1; i <= num_consumers; ++i)
    w.add_consumer(i);
  w.produce(300);
  w.partition(2, true);
  w.produce(500); // 5 s: beyond the 1 s timeouts and the 64-event buffer.
  CHECK(w.dropped(2));
  w.partition(2, false);
  w.produce(300);
  require_converged(w);
  CHECK(w.model(2).snapshots >= 2);
}

TEST_CASE("a channel consumer that lags beyond the retransmit buffer recovers through "
          "retransmit_failed",
          "[channel]") {
  auto seed = GENERATE(9u, 10u);
  INFO("seed " << seed);
  auto pcfg = test_producer_config();
  pcfg.max_buffered_events = 32;
  world w{seed, net_config{0.05, 0.05, 1ms, 20ms}, pcfg};
  for (int i = 1; i <= num_consumers; ++i)
    w.add_consumer(i);
  w.produce(200);
  w.partition(2, true);
  w.produce(60); // 0.6 s: beyond 32 events, within the 1 s timeouts.
  CHECK(w.dropped(2, producer::drop_reason::lagging));
  CHECK(w.get_consumer(2).current_state() == consumer::state::attached);
  w.partition(2, false);
  w.produce(300);
  require_converged(w);
  CHECK(w.model(2).snapshots >= 2);
}

TEST_CASE("channel consumers detect a producer restart and re-attach", "[channel]") {
  auto seed = GENERATE(11u, 12u);
  INFO("seed " << seed);
  world w{seed, net_config{}};
  for (int i = 1; i <= num_consumers; ++i)
    w.add_consumer(i);
  w.produce(700);
  w.restart_producer();
  SECTION("the next event reveals the new epoch") {
    w.produce(700);
  }
  SECTION("the new incarnation's heartbeats reveal a quiet restart") {
    w.run(100); // 1 s without events.
    for (int i = 1; i <= num_consumers; ++i) {
      CHECK(w.get_consumer(i).epoch() == w.get_producer().epoch());
      CHECK(w.get_consumer(i).current_state() == consumer::state::attached);
    }
    w.produce(300);
  }
  require_converged(w);
  for (int i = 1; i <= num_consumers; ++i) {
    CHECK(w.model(i).snapshots >= 2);
    CHECK(w.get_consumer(i).epoch() == w.get_producer().epoch());
  }
}

TEST_CASE("channel consumers converge under random partitions, restarts and heavy reordering",
          "[channel]") {
  auto seed = GENERATE(13u, 14u, 15u, 16u);
  INFO("seed " << seed);
  // Delays up to three heartbeat intervals reorder almost everything.
  world w{seed, net_config{0.3, 0.3, 1ms, 300ms}};
  std::mt19937 chaos{seed};
  w.add_consumer(1);
  w.add_consumer(2);
  for (int round = 0; round < 40; ++round) {
    auto dice = chaos() % 10;
    if (dice == 0)
      w.restart_producer();
    else if (dice < 4)
      w.partition(static_cast<int>(1 + chaos() % num_consumers), chaos() % 2 == 0,
                  static_cast<world::way>(chaos() % 3));
    if (round == 10)
      w.add_consumer(3);
    w.run(chaos() % 50, chaos() % 4 != 0);
  }
  for (int i = 1; i <= num_consumers; ++i)
    w.partition(i, false);
  w.produce(50);
  require_converged(w);
}

// -- writer mode ----------------------------------------------------------------------------

TEST_CASE("a write channel delivers every write exactly once across outages of any length",
          "[channel]") {
  auto seed = GENERATE(21u, 22u, 23u);
  INFO("seed " << seed);
  lossy_net net{seed, net_config{0.2, 0.1, 1ms, 40ms}};
  auto master_handle = h(42);
  auto wcfg = test_producer_config();
  wcfg.timeout_intervals = 0; // As a clone's: never gives up on its master.
  producer writer{9, wcfg, {}};
  std::vector<count> applied;
  std::vector<sequence_number> lost;
  auto make_input = [&] {
    return std::make_unique<consumer>(
      test_consumer_config(), [](const state_ptr&) {},
      [&](const payload& x) { applied.push_back(number(x)); },
      [&](sequence_number seq) { lost.push_back(seq); });
  };
  std::unique_ptr<consumer> input; // The master's side, created by the first handshake.
  struct packet {
    timestamp due;
    uint64_t order;
    bool to_master;
    message msg;
    bool operator>(const packet& y) const {
      return std::tie(due, order) > std::tie(y.due, y.order);
    }
  };
  std::priority_queue<packet, std::vector<packet>, std::greater<packet>> queue;
  uint64_t order = 0;
  timestamp now{};
  bool cut = false;
  auto post = [&](bool to_master, const message& msg) {
    if (cut)
      return;
    for (auto delay : net.copies())
      queue.push(packet{now + delay, order++, to_master, msg});
  };
  auto to_master = [&](const producer::outputs& xs) {
    for (auto& x : xs)
      post(true, x.msg);
  };
  auto to_writer = [&](const consumer::outputs& xs) {
    for (auto& x : xs)
      post(false, x);
  };
  auto run = [&](int steps, count* next_write) {
    for (int k = 0; k < steps; ++k) {
      now += step;
      if (next_write != nullptr && writer.confirmed(master_handle)
          && writer.buffered() < 256)
        to_master(writer.produce(pl((*next_write)++)));
      while (!queue.empty() && queue.top().due <= now) {
        auto pkt = queue.top();
        queue.pop();
        if (!pkt.to_master) {
          to_master(writer.handle_message(master_handle, pkt.msg, now));
        } else if (input) {
          to_writer(input->handle(pkt.msg, now));
        } else if (auto* open = std::get_if<handshake>(&pkt.msg)) {
          input = make_input();
          to_writer(input->accept(*open, now));
        } else {
          to_writer(consumer::outputs{attach{}}); // Unknown writer: ask for a handshake.
        }
      }
      to_master(writer.tick(now));
      if (input)
        to_writer(input->tick(now));
    }
  };
  to_master(writer.add(master_handle, now));
  count written = 0;
  run(500, &written);
  // An outage 60 times the silence timeout, writes continuing into the buffer.
  cut = true;
  run(6000, &written);
  cut = false;
  run(500, &written);
  SECTION("the master also forgets the writer (after a quiet period)") {
    run(300, nullptr);
    input.reset();
    run(500, &written);
  }
  run(1000, nullptr);
  INFO("written " << written << ", applied " << applied.size());
  std::vector<count> expected(written);
  for (count i = 0; i < written; ++i)
    expected[i] = i;
  CHECK(applied == expected);
  CHECK(lost.empty());
}
