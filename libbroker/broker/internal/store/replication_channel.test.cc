#include "broker/internal/store/replication_channel.hh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace broker;
using namespace std::literals;

namespace ch = broker::internal::channel;

namespace Catch {
template <>
struct StringMaker<ch::message> {
  static std::string convert(const ch::message& x) { return ch::to_string(x); }
};
} // namespace Catch

namespace {

using strings = std::vector<std::string>;

timestamp at(std::chrono::milliseconds ms) {
  return timestamp{ms};
}

ch::event ev(ch::epoch_id epoch, ch::sequence_number seq, data payload) {
  return ch::event{epoch, seq, std::move(payload)};
}

/// Renders producer outputs as "<to>: <message>", "*" standing for a broadcast.
strings render(const ch::producer::outputs& xs) {
  strings result;
  for (auto& x : xs)
    result.push_back((x.to ? std::to_string(*x.to) : "*"s) + ": " + ch::to_string(x.msg));
  return result;
}

strings render(const ch::consumer::outputs& xs) {
  strings result;
  for (auto& x : xs)
    result.push_back(ch::to_string(x));
  return result;
}

ch::producer_config test_producer_config() {
  ch::producer_config cfg;
  cfg.heartbeat_interval = 100ms;
  cfg.timeout_intervals = 10;
  cfg.max_buffered_events = 256; // 2.56 s of the simulation's production.
  return cfg;
}

ch::consumer_config test_consumer_config() {
  ch::consumer_config cfg;
  cfg.attach_interval = 150ms;
  cfg.timeout_intervals = 10;
  cfg.max_out_of_order = 64;
  cfg.ack_every = 8;
  cfg.max_nack_seqs = 32;
  return cfg;
}

/// An owner for unit tests: logs what the consumer hands it.
struct recorder {
  strings log;

  ch::consumer make(ch::consumer_config cfg = test_consumer_config()) {
    return ch::consumer{
      cfg, [this](const data& x) { log.push_back("snapshot " + to_string(x)); },
      [this](const data& x) { log.push_back("deliver " + to_string(x)); }};
  }
};

/// A consumer attached to epoch 7 at `first_seq` (attach id 1, interval 100 ms, at time 0).
ch::consumer attached(recorder& r, ch::sequence_number first_seq,
                      ch::consumer_config cfg = test_consumer_config()) {
  auto c = r.make(cfg);
  c.start(at(0ms));
  c.handle(ch::handshake{7, 1, first_seq, data{"S"}, 100ms}, at(0ms));
  r.log.clear();
  return c;
}

// -- random data for the codec tests --------------------------------------------------------

data random_value(std::mt19937_64& rng, int depth);

vector random_vector(std::mt19937_64& rng, int depth, size_t max_size) {
  vector xs;
  auto n = rng() % (max_size + 1);
  for (size_t i = 0; i < n; ++i)
    xs.push_back(random_value(rng, depth - 1));
  return xs;
}

data random_value(std::mt19937_64& rng, int depth) {
  auto pick = rng() % (depth > 0 ? 16 : 12);
  switch (pick) {
    case 0:
      return data{};
    case 1:
      return data{rng() % 2 == 0};
    case 2:
      return data{count{rng() % 4}}; // Small: hits tags and the "at least 1" checks.
    case 3:
      return data{count{rng()}};
    case 4:
      return data{static_cast<integer>(rng() % 5) - 2};
    case 5:
      return data{static_cast<real>(rng() % 100) / 7.0};
    case 6:
      return data{std::string(rng() % 4, 'x')};
    case 7:
      return data{address::v4(10, 0, 0, static_cast<uint8_t>(rng()))};
    case 8:
      return data{port{static_cast<uint16_t>(rng()), port::protocol::tcp}};
    case 9:
      return data{timespan{static_cast<int64_t>(rng() % 5) - 2}};
    case 10:
      return data{timestamp{timespan{static_cast<int64_t>(rng() % 1000)}}};
    case 11:
      return data{enum_value{"e"}};
    case 12: {
      set xs;
      for (auto& x : random_vector(rng, depth, 3))
        xs.insert(std::move(x));
      return data{std::move(xs)};
    }
    case 13: {
      table xs;
      for (auto& x : random_vector(rng, depth, 3))
        xs.emplace(x, random_value(rng, depth - 1));
      return data{std::move(xs)};
    }
    case 14:
      return data{random_vector(rng, depth, 6)};
    default: {
      // Shaped like a channel message: a small tag, then small fields.
      auto xs = random_vector(rng, depth, 5);
      xs.insert(xs.begin(), data{count{rng() % 8}});
      return data{std::move(xs)};
    }
  }
}

// -- the simulated network ------------------------------------------------------------------

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

/// A clone's state, as its owner keeps it: the list of payloads applied so far. The
/// master's state (`history`) is the list of all payloads, so a consistent clone state is
/// always a prefix of it.
struct clone_model {
  std::vector<count> state;
  size_t snapshots = 0;
  size_t first_snapshot_size = 0;
  std::string problem; // The first inconsistency seen.
};

/// One producer and up to three consumers (nodes 1-3) on a simulated network, driven by a
/// virtual clock. Every message crosses the network encoded as `data` and is decoded again.
class world {
public:
  world(uint32_t seed, net_config net, ch::producer_config pcfg = test_producer_config(),
        ch::consumer_config ccfg = test_consumer_config())
    : rng_(seed), net_(net), pcfg_(pcfg), ccfg_(ccfg) {
    start_producer();
    consumers_.resize(num_consumers + 1);
    models_.resize(num_consumers + 1);
  }

  /// Creates and starts consumer `i` (1-3).
  void add_consumer(int i) {
    auto& model = models_[i];
    auto on_snapshot = [this, &model](const data& x) {
      ++model.snapshots;
      model.state.clear();
      if (auto* xs = get_if<vector>(x))
        for (auto& y : *xs)
          model.state.push_back(get_if<count>(y) ? get<count>(y) : count{999999999});
      if (model.snapshots == 1)
        model.first_snapshot_size = model.state.size();
      if (model.problem.empty()
          && (model.state.size() > history_.size()
              || !std::equal(model.state.begin(), model.state.end(), history_.begin())))
        model.problem = "snapshot is not a prefix of the history";
    };
    auto on_deliver = [this, &model](const data& x) {
      auto* value = get_if<count>(x);
      model.state.push_back(value ? *value : count{999999999});
      auto n = model.state.size();
      if (model.problem.empty() && (n > history_.size() || history_[n - 1] != model.state.back()))
        model.problem = "delivered " + to_string(x) + " as element " + std::to_string(n - 1);
    };
    consumers_[i] = std::make_unique<ch::consumer>(ccfg_, on_snapshot, on_deliver);
    send_all(i, consumers_[i]->start(now_));
  }

  /// Replaces the producer by a new incarnation with the next epoch and the same state, as a
  /// restarted master would load it from its backend.
  void restart_producer() {
    start_producer();
  }

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
        route(producer_->produce(data{count{history_.size() - 1}}));
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

  /// Produces `n` payloads, one per step.
  void produce(size_t n) {
    run(n, true);
  }

  /// Runs until every consumer holds the whole history, or `limit` passed. Returns whether
  /// they converged.
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
  const ch::consumer& consumer(int i) const { return *consumers_[i]; }
  const ch::producer& producer() const { return *producer_; }
  const std::vector<count>& history() const { return history_; }
  const std::string& problem() const { return problem_; }
  const std::multimap<ch::consumer_handle, ch::producer::drop_reason>& drops() const {
    return drops_;
  }

private:
  struct packet {
    timestamp due;
    uint64_t order;
    int from;
    int to;
    data bytes;
  };

  struct later {
    bool operator()(const packet& x, const packet& y) const {
      return std::tie(x.due, x.order) > std::tie(y.due, y.order);
    }
  };

  void start_producer() {
    ++epoch_;
    auto snapshot = [this] {
      vector xs;
      for (auto x : history_)
        xs.emplace_back(x);
      return data{std::move(xs)};
    };
    auto on_drop = [this](ch::consumer_handle who, ch::producer::drop_reason why) {
      drops_.emplace(who, why);
    };
    producer_ = std::make_unique<ch::producer>(epoch_, pcfg_, snapshot, on_drop);
  }

  void send(int from, int to, const ch::message& msg) {
    if (cut_from_.count(from) > 0 || cut_to_.count(to) > 0 || chance() < net_.loss)
      return;
    auto copies = chance() < net_.duplication ? 2 : 1;
    auto span = static_cast<uint64_t>((net_.max_delay - net_.min_delay).count()) + 1;
    for (int k = 0; k < copies; ++k) {
      auto delay = net_.min_delay + std::chrono::milliseconds{rng_() % span};
      queue_.push(packet{now_ + delay, next_order_++, from, to, ch::encode(msg)});
    }
  }

  void send_all(int from, const ch::consumer::outputs& xs) {
    for (auto& x : xs)
      send(from, producer_node, x);
  }

  void route(const ch::producer::outputs& xs) {
    for (auto& x : xs) {
      if (x.to) {
        send(producer_node, static_cast<int>(*x.to), x.msg);
        continue;
      }
      // Like a publication on the clones' topic: every clone gets it, attached or not.
      for (int i = 1; i <= num_consumers; ++i)
        if (consumers_[i])
          send(producer_node, i, x.msg);
    }
  }

  void deliver_due() {
    while (!queue_.empty() && queue_.top().due <= now_) {
      auto pkt = queue_.top();
      queue_.pop();
      auto msg = ch::decode(pkt.bytes);
      if (!msg) {
        if (problem_.empty())
          problem_ = "undecodable: " + to_string(msg.error_value());
        continue;
      }
      if (pkt.to == producer_node)
        route(producer_->handle(static_cast<ch::consumer_handle>(pkt.from), *msg, now_));
      else if (consumers_[pkt.to])
        send_all(pkt.to, consumers_[pkt.to]->handle(*msg, now_));
    }
  }

  double chance() { return std::uniform_real_distribution<double>{0.0, 1.0}(rng_); }

  std::mt19937 rng_;
  net_config net_;
  ch::producer_config pcfg_;
  ch::consumer_config ccfg_;
  timestamp now_{};
  ch::epoch_id epoch_ = 0;
  std::unique_ptr<ch::producer> producer_;
  std::vector<std::unique_ptr<ch::consumer>> consumers_;
  std::vector<clone_model> models_;
  std::vector<count> history_;
  std::set<int> cut_to_;   // Consumers that receive nothing.
  std::set<int> cut_from_; // Consumers whose messages get lost.
  std::priority_queue<packet, std::vector<packet>, later> queue_;
  uint64_t next_order_ = 0;
  std::multimap<ch::consumer_handle, ch::producer::drop_reason> drops_;
  std::string problem_;
};

bool dropped(const world& w, ch::consumer_handle who,
             std::optional<ch::producer::drop_reason> why = std::nullopt) {
  auto [first, last] = w.drops().equal_range(who);
  return std::any_of(first, last, [&](auto& x) { return !why || x.second == *why; });
}

/// The channel's state, for failure messages.
std::string describe(const world& w) {
  auto& p = w.producer();
  auto text = "producer epoch " + std::to_string(p.epoch()) + ", last_seq "
              + std::to_string(p.last_seq()) + ", buffered " + std::to_string(p.buffered());
  for (auto who : p.consumers())
    text += ", consumer " + std::to_string(who) + " acked " + std::to_string(*p.acked(who));
  for (int i = 1; i <= num_consumers && w.has_consumer(i); ++i) {
    auto& c = w.consumer(i);
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

// -- codec ----------------------------------------------------------------------------------

TEST_CASE("channel messages survive an encode/decode round trip", "[channel]") {
  std::vector<ch::message> msgs{
    ev(7, 1, data{"payload"}),
    ch::heartbeat{7, 0},
    ch::handshake{7, 2, 12, data{vector{1u, 2u}}, 250ms},
    ch::retransmit_failed{7, 3},
    ch::attach{2},
    ch::cumulative_ack{7, 0},
    ch::nack{7, {1, 5, 9}},
  };
  for (auto& msg : msgs) {
    auto encoded = ch::encode(msg);
    auto decoded = ch::decode(encoded);
    INFO(to_string(encoded));
    REQUIRE(decoded);
    CHECK(*decoded == msg);
  }
  CHECK(ch::encode(ch::heartbeat{7, 4}) == data{vector{1u, 7u, 4u}});
  CHECK(ch::encode(ch::attach{2}) == data{vector{4u, 2u}});
}

TEST_CASE("channel decode rejects malformed shapes with invalid_message", "[channel]") {
  std::vector<data> bad{
    data{},
    data{count{0}},
    data{vector{}},
    data{vector{"event"}},
    data{vector{7u, 1u}},                        // Unknown tag.
    data{vector{integer{1}, 7u, 4u}},            // Tag is an integer.
    data{vector{0u, 7u, 1u}},                    // Event without payload.
    data{vector{0u, 7u, 0u, "x"}},               // Event seq 0.
    data{vector{0u, integer{7}, 1u, "x"}},       // Epoch is an integer.
    data{vector{1u, 7u, 4u, 5u}},                // Heartbeat too long.
    data{vector{2u, 7u, 1u, nil, timespan{1s}}},          // Handshake without attach_id.
    data{vector{2u, 7u, 1u, 1u, nil, 0u}},                // Interval is a count.
    data{vector{2u, 7u, 1u, 1u, nil, timespan{0}}},       // Interval zero.
    data{vector{2u, 7u, 1u, 1u, nil, timespan{-1s}}},     // Interval negative.
    data{vector{2u, 7u, 1u, 0u, nil, timespan{1s}}},      // first_seq 0.
    data{vector{2u, 7u, integer{1}, 1u, nil, timespan{1s}}}, // attach_id an integer.
    data{vector{4u}},                                     // Attach without id.
    data{vector{4u, 1u, 7u}},                             // Attach with an epoch.
    data{vector{6u, 7u, vector{}}},              // Empty nack.
    data{vector{6u, 7u, vector{1u, 0u}}},        // Nack of seq 0.
    data{vector{6u, 7u, vector{1u, "2"}}},       // Nack of a string.
    data{vector{6u, 7u, set{data{1u}}}},         // Nack seqs as a set.
  };
  for (auto& x : bad) {
    auto result = ch::decode(x);
    INFO(to_string(x));
    REQUIRE_FALSE(result);
    CHECK(result.error_value() == ec::invalid_message);
    CHECK(result.error_value().message().rfind("channel message: ", 0) == 0);
  }
}

TEST_CASE("channel decode of random data values never crashes", "[channel]") {
  auto seed = GENERATE(1u, 2u, 3u);
  std::mt19937_64 rng{seed};
  std::vector<data> valid{
    ch::encode(ev(7, 1, data{"x"})),       ch::encode(ch::heartbeat{7, 2}),
    ch::encode(ch::handshake{7, 1, 1, nil, 1s}), ch::encode(ch::retransmit_failed{7, 3}),
    ch::encode(ch::attach{1}),                 ch::encode(ch::cumulative_ack{7, 4}),
    ch::encode(ch::nack{7, {1, 2}}),
  };
  size_t accepted = 0;
  for (int k = 0; k < 4000; ++k) {
    data x;
    if (k % 2 == 0) {
      x = random_value(rng, 3);
    } else {
      // Mutate a valid message: replace, drop or add one element.
      auto xs = get<vector>(valid[rng() % valid.size()]);
      auto pos = rng() % xs.size();
      switch (rng() % 3) {
        case 0:
          xs[pos] = random_value(rng, 2);
          break;
        case 1:
          xs.erase(xs.begin() + static_cast<std::ptrdiff_t>(pos));
          break;
        default:
          xs.push_back(random_value(rng, 2));
      }
      x = data{std::move(xs)};
    }
    auto result = ch::decode(x);
    if (result) {
      ++accepted;
      // Decoding is exact: what it accepts, encode() writes back unchanged.
      if (ch::encode(*result) != x)
        FAIL("decode accepted a non-canonical value: " << to_string(x));
    } else if (result.error_value() != ec::invalid_message) {
      FAIL("unexpected error code for " << to_string(x));
    }
  }
  CHECK(accepted > 0);
}

// -- producer -------------------------------------------------------------------------------

TEST_CASE("a channel producer answers attach with a handshake at the next seq and a fresh "
          "snapshot",
          "[channel]") {
  int taken = 0;
  ch::producer p{7, test_producer_config(), [&] { return data{count(++taken)}; }};
  p.produce(data{"a"});
  p.produce(data{"b"});
  CHECK(render(p.handle(1, ch::attach{4}, at(0ms)))
        == strings{"1: handshake(epoch=7, attach_id=4, first_seq=3, snapshot=1, "
                   "heartbeat_interval=100ms)"});
  REQUIRE(p.acked(1));
  CHECK(*p.acked(1) == 2);
  CHECK(p.consumers() == std::vector<ch::consumer_handle>{1});
  SECTION("a repeated attach gets a new snapshot but keeps the acknowledgement") {
    p.produce(data{"c"});
    CHECK(render(p.handle(1, ch::attach{5}, at(5ms)))
          == strings{"1: handshake(epoch=7, attach_id=5, first_seq=4, snapshot=2, "
                     "heartbeat_interval=100ms)"});
    CHECK(*p.acked(1) == 2);
    CHECK(p.buffered() == 1);
  }
}

TEST_CASE("a channel producer broadcasts events and trims what every consumer acknowledged",
          "[channel]") {
  ch::producer p{7, test_producer_config(), [] { return data{}; }};
  p.handle(1, ch::attach{1}, at(0ms));
  p.handle(2, ch::attach{1}, at(0ms));
  CHECK(render(p.produce(data{count{10}})) == strings{"*: event(epoch=7, seq=1, payload=10)"});
  p.produce(data{count{11}});
  p.produce(data{count{12}});
  CHECK(p.buffered() == 3);
  CHECK(p.handle(1, ch::cumulative_ack{7, 2}, at(1ms)).empty());
  CHECK(p.buffered() == 3);
  p.handle(2, ch::cumulative_ack{7, 3}, at(1ms));
  CHECK(p.buffered() == 1);
  p.handle(1, ch::cumulative_ack{7, 3}, at(1ms));
  CHECK(p.buffered() == 0);
  CHECK(p.last_seq() == 3);
  SECTION("an ack beyond the last event is ignored") {
    p.handle(1, ch::cumulative_ack{7, 9}, at(2ms));
    CHECK(*p.acked(1) == 3);
  }
}

TEST_CASE("a channel producer keeps no buffer when no consumer is attached", "[channel]") {
  ch::producer p{7, test_producer_config(), [] { return data{}; }};
  CHECK(render(p.produce(data{"x"})) == strings{"*: event(epoch=7, seq=1, payload=x)"});
  CHECK(p.buffered() == 0);
  CHECK(p.tick(at(0ms)).empty()); // No heartbeat either.
  p.handle(1, ch::attach{1}, at(0ms));
  p.produce(data{"y"});
  p.detach(1);
  CHECK(p.buffered() == 0);
  CHECK(p.consumers().empty());
}

TEST_CASE("a channel producer retransmits nacked events and answers nacks below its buffer "
          "with retransmit_failed",
          "[channel]") {
  ch::producer p{7, test_producer_config(), [] { return data{}; }};
  p.handle(1, ch::attach{1}, at(0ms));
  for (count i = 1; i <= 3; ++i)
    p.produce(data{i});
  CHECK(render(p.handle(1, ch::nack{7, {2, 3, 9}}, at(1ms)))
        == strings{"1: event(epoch=7, seq=2, payload=2)", "1: event(epoch=7, seq=3, payload=3)"});
  p.handle(1, ch::cumulative_ack{7, 2}, at(1ms));
  // Seqs 1 and 2 are gone; the consumer decides whether it still needs 2.
  CHECK(render(p.handle(1, ch::nack{7, {1, 2, 3}}, at(2ms)))
        == strings{"1: event(epoch=7, seq=3, payload=3)", "1: retransmit_failed(epoch=7, seq=2)"});
  // A nack of another epoch is a late message from before the attach.
  CHECK(p.handle(1, ch::nack{6, {3}}, at(2ms)).empty());
  SECTION("a nack is served up to max_nack_seqs") {
    auto cfg = test_producer_config();
    cfg.max_nack_seqs = 2;
    ch::producer q{7, cfg, [] { return data{}; }};
    q.handle(1, ch::attach{1}, at(0ms));
    for (count i = 1; i <= 3; ++i)
      q.produce(data{i});
    CHECK(q.handle(1, ch::nack{7, {1, 2, 3}}, at(1ms)).size() == 2);
  }
}

TEST_CASE("a channel producer answers acks and nacks from unknown consumers with "
          "retransmit_failed",
          "[channel]") {
  ch::producer p{7, test_producer_config(), [] { return data{}; }};
  p.produce(data{"x"});
  CHECK(render(p.handle(5, ch::cumulative_ack{7, 4}, at(0ms)))
        == strings{"5: retransmit_failed(epoch=7, seq=5)"});
  CHECK(render(p.handle(5, ch::nack{7, {3, 4}}, at(0ms)))
        == strings{"5: retransmit_failed(epoch=7, seq=3)"});
  // One attached to an earlier incarnation learns our epoch from the answer.
  CHECK(render(p.handle(6, ch::cumulative_ack{6, 900}, at(0ms)))
        == strings{"6: retransmit_failed(epoch=7, seq=901)"});
  CHECK(p.consumers().empty());
}

TEST_CASE("a channel producer ignores acks of another epoch from attached consumers",
          "[channel]") {
  ch::producer p{7, test_producer_config(), [] { return data{}; }};
  p.handle(1, ch::attach{1}, at(0ms));
  p.produce(data{"x"});
  p.produce(data{"y"});
  CHECK(p.handle(1, ch::cumulative_ack{6, 2}, at(1ms)).empty());
  CHECK(*p.acked(1) == 0);
  CHECK(p.buffered() == 2);
}

TEST_CASE("a channel producer drops a consumer that lags beyond the retransmit buffer",
          "[channel]") {
  auto cfg = test_producer_config();
  cfg.max_buffered_events = 4;
  std::vector<std::pair<ch::consumer_handle, ch::producer::drop_reason>> drops;
  ch::producer p{7, cfg, [] { return data{}; },
                 [&](ch::consumer_handle who, ch::producer::drop_reason why) {
                   drops.emplace_back(who, why);
                 }};
  p.handle(1, ch::attach{1}, at(0ms));
  p.handle(2, ch::attach{1}, at(0ms));
  for (count i = 1; i <= 4; ++i) {
    p.produce(data{i});
    p.handle(2, ch::cumulative_ack{7, i}, at(1ms));
  }
  CHECK(p.buffered() == 4);
  CHECK(render(p.produce(data{count{5}}))
        == strings{"*: event(epoch=7, seq=5, payload=5)", "1: retransmit_failed(epoch=7, seq=1)"});
  CHECK(drops
        == std::vector<std::pair<ch::consumer_handle, ch::producer::drop_reason>>{
          {1, ch::producer::drop_reason::lagging}});
  CHECK(p.consumers() == std::vector<ch::consumer_handle>{2});
  CHECK(p.buffered() == 1);
}

TEST_CASE("a channel producer heartbeats once per interval and drops silent consumers",
          "[channel]") {
  std::vector<ch::consumer_handle> dropped_handles;
  ch::producer p{7, test_producer_config(), [] { return data{}; },
                 [&](ch::consumer_handle who, ch::producer::drop_reason why) {
                   CHECK(why == ch::producer::drop_reason::silent);
                   dropped_handles.push_back(who);
                 }};
  p.handle(1, ch::attach{1}, at(0ms));
  p.handle(2, ch::attach{1}, at(0ms));
  CHECK(render(p.tick(at(0ms))) == strings{"*: heartbeat(epoch=7, last_seq=0)"});
  CHECK(p.tick(at(50ms)).empty());
  p.produce(data{"x"});
  CHECK(render(p.tick(at(100ms))) == strings{"*: heartbeat(epoch=7, last_seq=1)"});
  p.handle(2, ch::cumulative_ack{7, 1}, at(500ms));
  CHECK(render(p.tick(at(999ms))) == strings{"*: heartbeat(epoch=7, last_seq=1)"});
  CHECK(render(p.tick(at(1000ms))) == strings{"1: retransmit_failed(epoch=7, seq=1)"});
  CHECK(dropped_handles == std::vector<ch::consumer_handle>{1});
  CHECK(p.consumers() == std::vector<ch::consumer_handle>{2});
  CHECK(p.buffered() == 0);
}

// -- consumer -------------------------------------------------------------------------------

TEST_CASE("a channel consumer sends attach on start and repeats it until a handshake arrives",
          "[channel]") {
  recorder r;
  auto c = r.make();
  CHECK(c.tick(at(0ms)).empty());
  CHECK(c.handle(ch::handshake{7, 1, 1, data{"S"}, 100ms}, at(0ms)).empty()); // Before start.
  CHECK(c.current_state() == ch::consumer::state::idle);
  CHECK(render(c.start(at(0ms))) == strings{"attach(id=1)"});
  CHECK(c.start(at(0ms)).empty());
  CHECK(c.tick(at(149ms)).empty());
  CHECK(render(c.tick(at(150ms))) == strings{"attach(id=1)"});
  CHECK(c.tick(at(200ms)).empty());
  CHECK(c.handle(ch::heartbeat{7, 4}, at(210ms)).empty());
  // Only a handshake echoing the attach id ends the attach.
  CHECK(c.handle(ch::handshake{7, 0, 5, data{"S0"}, 100ms}, at(215ms)).empty());
  CHECK(c.current_state() == ch::consumer::state::attaching);
  CHECK(render(c.handle(ch::handshake{7, 1, 5, data{"S"}, 100ms}, at(220ms)))
        == strings{"cumulative_ack(epoch=7, seq=4)"});
  CHECK(c.current_state() == ch::consumer::state::attached);
  CHECK(c.epoch() == 7);
  CHECK(r.log == strings{"snapshot S"});
}

TEST_CASE("a channel consumer applies the snapshot and delivers events in order exactly once",
          "[channel]") {
  recorder r;
  auto c = attached(r, 5);
  CHECK(c.handle(ev(7, 5, data{"a"}), at(1ms)).empty());
  CHECK(c.handle(ev(7, 5, data{"a"}), at(1ms)).empty());
  CHECK(c.handle(ev(7, 4, data{"z"}), at(1ms)).empty()); // Inside the snapshot.
  CHECK(c.handle(ev(7, 6, data{"b"}), at(1ms)).empty());
  CHECK(r.log == strings{"deliver a", "deliver b"});
  CHECK(c.next_seq() == 7);
  CHECK(c.snapshots() == 1);
}

TEST_CASE("a channel consumer buffers out-of-order events and nacks the gap it detects",
          "[channel]") {
  recorder r;
  auto c = attached(r, 5);
  CHECK(render(c.handle(ev(7, 7, data{"c"}), at(1ms)))
        == strings{"nack(epoch=7, seqs=[5, 6])"});
  CHECK(c.handle(ev(7, 6, data{"b"}), at(2ms)).empty()); // Fills a known gap: no new nack.
  CHECK(c.handle(ev(7, 7, data{"c"}), at(2ms)).empty()); // Buffered duplicate.
  CHECK(render(c.handle(ev(7, 9, data{"e"}), at(3ms))) == strings{"nack(epoch=7, seqs=[8])"});
  CHECK(c.buffered() == 3);
  CHECK(r.log.empty());
  c.handle(ev(7, 5, data{"a"}), at(4ms));
  CHECK(r.log == strings{"deliver a", "deliver b", "deliver c"});
  c.handle(ev(7, 8, data{"d"}), at(5ms));
  CHECK(r.log == strings{"deliver a", "deliver b", "deliver c", "deliver d", "deliver e"});
  CHECK(c.buffered() == 0);
}

TEST_CASE("a channel consumer nacks what a heartbeat reveals and again on the tick after an "
          "interval while the gap persists",
          "[channel]") {
  recorder r;
  auto c = attached(r, 1); // Ticks retry gaps that were known at the previous retry.
  CHECK(render(c.handle(ch::heartbeat{7, 3}, at(10ms)))
        == strings{"nack(epoch=7, seqs=[1, 2, 3])"});
  CHECK(c.handle(ch::heartbeat{7, 3}, at(20ms)).empty());
  CHECK(c.tick(at(60ms)).empty());
  // At 100 ms the gap is newer than the last retry point (0 ms): not yet.
  CHECK(render(c.tick(at(100ms))) == strings{"cumulative_ack(epoch=7, seq=0)"});
  c.handle(ev(7, 2, data{"b"}), at(120ms));
  CHECK(render(c.tick(at(200ms)))
        == strings{"nack(epoch=7, seqs=[1, 3])", "cumulative_ack(epoch=7, seq=0)"});
  CHECK(render(c.tick(at(300ms)))
        == strings{"nack(epoch=7, seqs=[1, 3])", "cumulative_ack(epoch=7, seq=0)"});
  c.handle(ev(7, 1, data{"a"}), at(320ms));
  c.handle(ev(7, 3, data{"c"}), at(320ms));
  CHECK(render(c.tick(at(400ms))) == strings{"cumulative_ack(epoch=7, seq=3)"});
  CHECK(r.log == strings{"deliver a", "deliver b", "deliver c"});
}

TEST_CASE("a channel consumer acknowledges after ack_every deliveries and once per interval",
          "[channel]") {
  recorder r;
  auto c = attached(r, 1); // ack_every = 8
  for (ch::sequence_number seq = 1; seq <= 7; ++seq)
    CHECK(c.handle(ev(7, seq, data{seq}), at(1ms)).empty());
  CHECK(render(c.handle(ev(7, 8, data{8u}), at(1ms)))
        == strings{"cumulative_ack(epoch=7, seq=8)"});
  CHECK(c.tick(at(100ms)).empty()); // The last ack went out at 1 ms.
  CHECK(render(c.tick(at(101ms))) == strings{"cumulative_ack(epoch=7, seq=8)"});
  CHECK(render(c.tick(at(201ms))) == strings{"cumulative_ack(epoch=7, seq=8)"});
}

TEST_CASE("a channel consumer re-attaches on retransmit_failed for an event it lacks",
          "[channel]") {
  recorder r;
  auto c = attached(r, 3);
  c.handle(ev(7, 3, data{"c"}), at(1ms));
  c.handle(ev(7, 4, data{"d"}), at(1ms));
  // Events it already delivered: a late answer, no reason to start over.
  CHECK(c.handle(ch::retransmit_failed{7, 2}, at(1ms)).empty());
  CHECK(c.handle(ch::retransmit_failed{7, 4}, at(1ms)).empty());
  CHECK(c.current_state() == ch::consumer::state::attached);
  CHECK(render(c.handle(ch::retransmit_failed{7, 5}, at(2ms))) == strings{"attach(id=2)"});
  CHECK(c.current_state() == ch::consumer::state::attaching);
  CHECK(c.handle(ch::retransmit_failed{7, 5}, at(3ms)).empty());
  c.handle(ch::handshake{7, 2, 20, data{"S2"}, 100ms}, at(4ms));
  CHECK(r.log == strings{"deliver c", "deliver d", "snapshot S2"});
  CHECK(c.snapshots() == 2);
  CHECK(c.next_seq() == 20);
}

TEST_CASE("a channel consumer re-attaches after a silent producer", "[channel]") {
  recorder r;
  auto c = attached(r, 1); // At 0 ms, interval 100 ms, timeout 10 intervals.
  c.handle(ch::heartbeat{7, 0}, at(300ms));
  CHECK(render(c.tick(at(1299ms))) == strings{"cumulative_ack(epoch=7, seq=0)"});
  CHECK(render(c.tick(at(1300ms))) == strings{"attach(id=2)"});
  CHECK(c.current_state() == ch::consumer::state::attaching);
  // The producer is back (same epoch, e.g. a healed path): its answer is accepted.
  c.handle(ch::handshake{7, 2, 1, data{"S"}, 100ms}, at(1310ms));
  CHECK(c.current_state() == ch::consumer::state::attached);
}

TEST_CASE("a channel consumer re-attaches when a new epoch appears and ignores the old one "
          "afterwards",
          "[channel]") {
  recorder r;
  auto c = attached(r, 1);
  c.handle(ev(7, 1, data{"a"}), at(1ms));
  CHECK(render(c.handle(ev(8, 1, data{"new"}), at(2ms))) == strings{"attach(id=2)"});
  CHECK(c.current_state() == ch::consumer::state::attaching);
  CHECK(c.buffered() == 1); // The new producer's event, kept for after the handshake.
  CHECK(c.handle(ch::handshake{7, 1, 2, data{"late"}, 100ms}, at(3ms)).empty());
  CHECK(c.current_state() == ch::consumer::state::attaching);
  CHECK(render(c.handle(ch::handshake{8, 2, 1, data{"S8"}, 100ms}, at(4ms)))
        == strings{"cumulative_ack(epoch=8, seq=1)"});
  CHECK(r.log == strings{"deliver a", "snapshot S8", "deliver new"});
  // Late messages of epoch 7 change nothing.
  CHECK(c.handle(ev(7, 2, data{"b"}), at(5ms)).empty());
  CHECK(c.handle(ch::heartbeat{7, 9}, at(5ms)).empty());
  CHECK(c.handle(ch::retransmit_failed{7, 9}, at(5ms)).empty());
  CHECK(c.current_state() == ch::consumer::state::attached);
  CHECK(c.epoch() == 8);
  SECTION("a retransmit_failed of a new epoch also reveals a restart") {
    CHECK(render(c.handle(ch::retransmit_failed{9, 3}, at(6ms))) == strings{"attach(id=3)"});
  }
  SECTION("a handshake never interrupts an attachment") {
    CHECK(c.handle(ch::handshake{9, 2, 4, data{"S9"}, 100ms}, at(6ms)).empty());
    CHECK(c.epoch() == 8);
  }
}

TEST_CASE("a channel consumer that a late message of an old epoch made re-attach stays with "
          "the live producer",
          "[channel]") {
  recorder r;
  auto c = attached(r, 1); // Epoch 7 is live; epoch 5 died before we attached.
  CHECK(render(c.handle(ch::heartbeat{5, 40}, at(1ms))) == strings{"attach(id=2)"});
  // The live producer answers: epoch 7 stays, and epoch 5 is ignored from now on.
  c.handle(ch::handshake{7, 2, 1, data{"S"}, 100ms}, at(2ms));
  CHECK(c.current_state() == ch::consumer::state::attached);
  CHECK(c.epoch() == 7);
  CHECK(c.handle(ch::heartbeat{5, 41}, at(3ms)).empty());
  CHECK(c.handle(ev(7, 1, data{"a"}), at(3ms)).empty());
  CHECK(r.log == strings{"snapshot S", "deliver a"});
}

TEST_CASE("a channel consumer accepts the answer of a producer whose epoch it retired",
          "[channel]") {
  recorder r;
  auto c = attached(r, 1);
  c.handle(ev(8, 1, data{"x"}), at(1ms)); // Epoch 8 appears: re-attach with id 2.
  c.handle(ch::handshake{8, 2, 1, data{"S8"}, 100ms}, at(2ms)); // Retires epoch 7.
  CHECK(c.handle(ch::heartbeat{7, 3}, at(3ms)).empty());
  // Epoch 8 falls silent; only epoch 7 answers the next attach (id 3).
  CHECK(render(c.tick(at(1002ms))) == strings{"attach(id=3)"});
  c.handle(ch::handshake{7, 3, 4, data{"S7"}, 100ms}, at(1010ms));
  CHECK(c.current_state() == ch::consumer::state::attached);
  CHECK(c.epoch() == 7);
  CHECK(c.handle(ev(7, 4, data{"d"}), at(1011ms)).empty());
  CHECK(r.log == strings{"snapshot S8", "deliver x", "snapshot S7", "deliver d"});
}

TEST_CASE("a channel consumer keeps events that beat the handshake", "[channel]") {
  recorder r;
  auto c = r.make();
  c.start(at(0ms));
  CHECK(c.handle(ev(7, 6, data{"b"}), at(1ms)).empty());
  CHECK(c.handle(ev(7, 4, data{"old"}), at(1ms)).empty());
  CHECK(c.handle(ev(7, 5, data{"a"}), at(1ms)).empty());
  CHECK(c.buffered() == 3);
  CHECK(render(c.handle(ch::handshake{7, 1, 5, data{"S"}, 100ms}, at(2ms)))
        == strings{"cumulative_ack(epoch=7, seq=6)"});
  CHECK(r.log == strings{"snapshot S", "deliver a", "deliver b"});
  CHECK(c.buffered() == 0);
}

TEST_CASE("a channel consumer bounds its out-of-order buffer and its nack window",
          "[channel]") {
  auto cfg = test_consumer_config();
  cfg.max_out_of_order = 4;
  cfg.max_nack_seqs = 3;
  recorder r;
  auto c = attached(r, 1, cfg);
  // Seq 10 lies beyond the window [1, 5): dropped, but its gap is nacked (capped).
  CHECK(render(c.handle(ev(7, 10, data{"j"}), at(1ms)))
        == strings{"nack(epoch=7, seqs=[1, 2, 3])"});
  CHECK(c.buffered() == 0);
  c.handle(ev(7, 3, data{"c"}), at(2ms));
  c.handle(ev(7, 4, data{"d"}), at(2ms));
  CHECK(c.buffered() == 2);
  CHECK(render(c.tick(at(100ms))) == strings{"cumulative_ack(epoch=7, seq=0)"});
  CHECK(render(c.tick(at(200ms)))
        == strings{"nack(epoch=7, seqs=[1, 2])", "cumulative_ack(epoch=7, seq=0)"});
  SECTION("while attaching, early events are bounded too") {
    recorder r2;
    auto d = r2.make(cfg);
    d.start(at(0ms));
    for (ch::sequence_number seq = 1; seq <= 10; ++seq)
      d.handle(ev(7, seq, data{seq}), at(1ms));
    CHECK(d.buffered() == 4);
  }
}

TEST_CASE("a channel consumer ignores handshakes that do not answer its current attach",
          "[channel]") {
  recorder r;
  auto c = attached(r, 5);
  c.handle(ev(7, 5, data{"a"}), at(1ms));
  // A duplicate, or the answer to a repeated attach.
  CHECK(c.handle(ch::handshake{7, 1, 6, data{"dup"}, 100ms}, at(2ms)).empty());
  c.handle(ch::retransmit_failed{7, 6}, at(3ms)); // Re-attach with id 2.
  CHECK(c.handle(ch::handshake{7, 1, 5, data{"stale"}, 100ms}, at(4ms)).empty());
  CHECK(c.current_state() == ch::consumer::state::attaching);
  c.handle(ch::handshake{7, 2, 9, data{"fresh"}, 100ms}, at(5ms));
  CHECK(r.log == strings{"deliver a", "snapshot fresh"});
  CHECK(c.next_seq() == 9);
}

TEST_CASE("channel state machines ignore messages meant for the other side", "[channel]") {
  ch::producer p{7, test_producer_config(), [] { return data{}; }};
  p.handle(1, ch::attach{1}, at(0ms));
  CHECK(p.handle(1, ev(7, 1, data{"x"}), at(1ms)).empty());
  CHECK(p.handle(1, ch::heartbeat{7, 5}, at(1ms)).empty());
  CHECK(p.handle(1, ch::handshake{7, 1, 1, nil, 1s}, at(1ms)).empty());
  CHECK(p.handle(1, ch::retransmit_failed{7, 1}, at(1ms)).empty());
  CHECK(p.last_seq() == 0);
  recorder r;
  auto c = attached(r, 1);
  CHECK(c.handle(ch::attach{9}, at(1ms)).empty());
  CHECK(c.handle(ch::cumulative_ack{7, 4}, at(1ms)).empty());
  CHECK(c.handle(ch::nack{7, {1}}, at(1ms)).empty());
  CHECK(c.current_state() == ch::consumer::state::attached);
  CHECK(r.log.empty());
}

TEST_CASE("channel state machines saturate instead of wrapping on extreme sequence numbers",
          "[channel]") {
  constexpr auto max = std::numeric_limits<ch::sequence_number>::max();
  ch::producer p{7, test_producer_config(), [] { return data{}; }};
  CHECK(render(p.handle(5, ch::cumulative_ack{7, max}, at(0ms)))
        == strings{"5: retransmit_failed(epoch=7, seq=" + std::to_string(max) + ")"});
  p.handle(1, ch::attach{1}, at(0ms));
  p.produce(data{"x"});
  CHECK(p.handle(1, ch::cumulative_ack{7, max}, at(1ms)).empty());
  CHECK(*p.acked(1) == 0);
  CHECK(p.handle(1, ch::nack{7, {max}}, at(1ms)).empty());
  auto cfg = test_consumer_config();
  cfg.max_out_of_order = 4;
  recorder r;
  auto c = attached(r, 1, cfg);
  CHECK(render(c.handle(ch::heartbeat{7, max}, at(1ms)))
        == strings{"nack(epoch=7, seqs=[1, 2, 3, 4])"});
  CHECK(c.handle(ev(7, max, data{"far"}), at(1ms)).empty());
  CHECK(c.buffered() == 0);
  CHECK(render(c.tick(at(100ms))) == strings{"cumulative_ack(epoch=7, seq=0)"});
  CHECK(render(c.tick(at(200ms)))
        == strings{"nack(epoch=7, seqs=[1, 2, 3, 4])", "cumulative_ack(epoch=7, seq=0)"});
  CHECK(render(c.handle(ch::retransmit_failed{7, max}, at(201ms))) == strings{"attach(id=2)"});
}

// -- simulated network ----------------------------------------------------------------------

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
  CHECK(w.drops().empty());
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
  CHECK(w.drops().empty());
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
  CHECK(dropped(w, 2));
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
  CHECK(dropped(w, 2, ch::producer::drop_reason::lagging));
  CHECK(w.consumer(2).current_state() == ch::consumer::state::attached);
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
  SECTION("acks answered with retransmit_failed reveal a quiet restart") {
    w.run(100); // 1 s of silence on the producer's side: no events, no heartbeats.
    for (int i = 1; i <= num_consumers; ++i) {
      CHECK(w.consumer(i).epoch() == w.producer().epoch());
      CHECK(w.consumer(i).current_state() == ch::consumer::state::attached);
    }
    w.produce(300);
  }
  require_converged(w);
  for (int i = 1; i <= num_consumers; ++i) {
    CHECK(w.model(i).snapshots >= 2);
    CHECK(w.consumer(i).epoch() == w.producer().epoch());
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
