#pragma once

// A simulated bus for store_logic tests (store_logic.test.cc, store_interop.test.cc): stores
// exchange encoded commands by topic, with seeded loss, duplication and delays, driven by a
// virtual clock. A test may also put raw bytes on the bus, as a remote Broker node would.

#include "broker/internal/store/store_logic.hh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace broker::internal::test {

/// One message in flight: due at `at`, for the stores subscribed to `topic`.
struct packet {
  timestamp at;
  uint64_t order; // Tie-breaker keeps runs deterministic.
  size_t from;
  std::string topic;
  std::string bytes;
};

class bus;

/// Captures one store's outputs.
class node_env : public store_env {
public:
  node_env(bus& b, size_t index) : bus_(b), index_(index) {}
  void send_command(const std::string& topic, std::string bytes) override;
  void store_event(data ev) override { events.push_back(std::move(ev)); }
  void write_failed(const error& err) override { failures.push_back(err); }
  void warn(const std::string& text) override { warnings.push_back(text); }
  std::vector<data> events;
  std::vector<error> failures;
  std::vector<std::string> warnings;

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
  timespan jitter{0};

  /// Adds a store; returns its index (the sender index of what it sends).
  size_t add(store_logic* x) {
    nodes_.push_back(x);
    return nodes_.size() - 1;
  }

  /// Replaces store `index` (a restart).
  void replace(size_t index, store_logic* x) { nodes_[index] = x; }

  /// Puts a message on the bus; `from` does not receive it.
  void send(size_t from, const std::string& topic, std::string bytes) {
    sent.push_back(packet{now, 0, from, topic, bytes});
    if (chance(loss))
      return;
    int copies = chance(dup) ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      auto delay = jitter.count() > 0 ? timespan{rng_() % jitter.count()} : timespan{0};
      queue_.push_back(packet{now + std::chrono::milliseconds{1} + delay, next_order_++, from,
                              topic, bytes});
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
        if (i != p.from && nodes_[i] != nullptr && subscribed(*nodes_[i], p.topic))
          nodes_[i]->handle(p.topic, p.bytes, now);
    for (auto* x : nodes_) {
      if (x == nullptr)
        continue;
      x->tick(now);
      x->flush();
    }
  }

  /// Advances the clock in `steps` steps of `dt`.
  void run(int steps, timespan dt = std::chrono::milliseconds{10}) {
    for (int i = 0; i < steps; ++i) {
      now += dt;
      step();
    }
  }

  /// Everything any store sent, in order (with the sending index), loss or not.
  std::vector<packet> sent;

  timestamp now{std::chrono::seconds{1'000'000}};

private:
  static bool subscribed(const store_logic& x, const std::string& topic) {
    auto ts = x.topics();
    return std::find(ts.begin(), ts.end(), topic) != ts.end();
  }

  bool chance(double p) {
    return p > 0 && std::uniform_real_distribution<double>{0, 1}(rng_) < p;
  }

  std::mt19937_64 rng_;
  std::vector<store_logic*> nodes_;
  std::vector<packet> queue_;
  uint64_t next_order_ = 0;
};

inline void node_env::send_command(const std::string& topic, std::string bytes) {
  bus_.send(index_, topic, std::move(bytes));
}

inline store_settings fast_settings() {
  store_settings st;
  st.heartbeat_interval = std::chrono::milliseconds{50};
  st.timeout_intervals = 10;
  st.request_timeout = std::chrono::seconds{2};
  st.probe_timeout = timespan{0};
  st.tick_interval = std::chrono::milliseconds{10}; // 5 ticks per heartbeat, as Broker's.
  return st;
}

/// An endpoint id whose first byte is `b` (the rest zero).
inline endpoint_id ep(uint8_t b) {
  endpoint_id::bytes_type bytes{};
  bytes[0] = b;
  bytes[6] = 0x40; // Version 4, for looks.
  return endpoint_id{bytes};
}

/// The state a store answers with: all keys and their values.
inline std::map<data, data> contents(store_logic& x) {
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

} // namespace broker::internal::test
