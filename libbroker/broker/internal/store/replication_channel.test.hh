#pragma once

// Helpers shared by the channel's unit tests (replication_channel.test.cc) and its network
// simulations (replication_channel_sim.test.cc).

#include "broker/internal/store/replication_channel.hh"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace broker::internal::channel::test {

using strings = std::vector<std::string>;

inline timestamp at(std::chrono::milliseconds ms) {
  return timestamp{ms};
}

/// The endpoint all test handles live on.
inline endpoint_id test_endpoint() {
  endpoint_id::bytes_type bytes{};
  bytes[0] = 0xc0;
  return endpoint_id{bytes};
}

/// Handle `n` (object id n on the test endpoint).
inline handle h(uint64_t n) {
  return handle{test_endpoint(), n};
}

/// A payload standing for the number `n`: put(n).
inline payload pl(count n) {
  return store_wire::put{data{n}, data{}, std::nullopt, {}};
}

/// The number a payload stands for (999999999 if it is no put of a count).
inline count number(const payload& x) {
  if (auto* p = std::get_if<store_wire::put>(&x))
    if (auto* n = get_if<count>(p->key))
      return *n;
  return 999999999;
}

/// A state holding the numbers `xs` (in a snapshot's key order).
inline state_ptr state_of(const std::vector<count>& xs) {
  auto result = std::make_shared<store_wire::snapshot>();
  for (auto x : xs)
    result->emplace_back(data{x}, data{});
  return result;
}

inline event ev(epoch_id epoch, sequence_number seq, count n) {
  return event{epoch, seq, pl(n)};
}

/// Renders producer outputs as "<to>: <message>", "*" standing for a broadcast and a handle
/// by its object id.
inline strings render(const producer::outputs& xs) {
  strings result;
  for (auto& x : xs)
    result.push_back((x.to ? std::to_string(x.to->object) : std::string{"*"}) + ": "
                     + to_string(x.msg));
  return result;
}

inline strings render(const consumer::outputs& xs) {
  strings result;
  for (auto& x : xs)
    result.push_back(to_string(x));
  return result;
}

inline producer_config test_producer_config() {
  producer_config cfg;
  cfg.heartbeat_interval = std::chrono::milliseconds{100};
  cfg.timeout_intervals = 10;
  cfg.max_buffered_events = 256; // 2.56 s of the simulation's production.
  return cfg;
}

inline consumer_config test_consumer_config() {
  consumer_config cfg;
  cfg.attach_interval = std::chrono::milliseconds{150};
  cfg.timeout_intervals = 10;
  cfg.max_out_of_order = 64;
  cfg.ack_every = 8;
  cfg.max_nack_seqs = 32;
  return cfg;
}

/// An owner for unit tests: logs what the consumer hands it.
struct recorder {
  strings log;

  consumer make(consumer_config cfg = test_consumer_config()) {
    return consumer{cfg,
                    [this](const state_ptr& x) {
                      log.push_back("snapshot " + std::to_string(x ? x->size() : 0));
                    },
                    [this](const payload& x) {
                      log.push_back("deliver " + std::to_string(number(x)));
                    },
                    [this](sequence_number seq) {
                      log.push_back("lost " + std::to_string(seq));
                    }};
  }
};

/// A handshake of epoch 7 (interval 100 ms) with a snapshot of `entries` numbers.
inline handshake hs(uint64_t attach_id, sequence_number offset, size_t entries = 0,
                    epoch_id epoch = 7) {
  std::vector<count> xs(entries);
  for (size_t i = 0; i < entries; ++i)
    xs[i] = i;
  return handshake{epoch, attach_id, offset, std::chrono::milliseconds{100}, state_of(xs)};
}

/// A consumer attached to epoch 7 at `offset` (attach id 1, interval 100 ms, at time 0).
inline consumer attached(recorder& r, sequence_number offset,
                         consumer_config cfg = test_consumer_config()) {
  auto c = r.make(cfg);
  c.start(at(std::chrono::milliseconds{0}));
  c.handle(hs(1, offset), at(std::chrono::milliseconds{0}));
  r.log.clear();
  return c;
}

} // namespace broker::internal::channel::test
