#include "modes.hh"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace broker_node {

using clock = node_session::clock;

namespace {

/// The value that makes a relay node exit (Broker's broker-node does the same).
constexpr std::string_view stop_value = "stop";

/// Appended to a ping's topic for its pong.
constexpr std::string_view pong_suffix = "/pong";

constexpr std::string_view ping_kind = "ping";
constexpr std::string_view pong_kind = "pong";

/// Filler byte of ping payloads.
constexpr char payload_filler = 'x';

/// How often ping mode re-checks whether a ponger is reachable.
constexpr auto path_check_interval = std::chrono::milliseconds{50};

bool is_stop(const broker::data& value) {
  auto* str = broker::get_if<std::string>(value);
  return str != nullptr && *str == stop_value;
}

/// True if a peer announced a prefix of `t`, i.e. a published ping can go somewhere.
bool ponger_reachable(const broker::endpoint& ep, const std::string& t) {
  for (auto& prefix : ep.peer_subscriptions())
    if (t.compare(0, prefix.string().size(), prefix.string()) == 0)
      return true;
  return false;
}

/// Round-trip statistics of ping mode.
struct rtt_stats {
  uint64_t sent = 0;
  uint64_t received = 0;
  int64_t min_us = std::numeric_limits<int64_t>::max();
  int64_t max_us = 0;
  int64_t sum_us = 0;

  void add(int64_t us) {
    ++received;
    min_us = std::min(min_us, us);
    max_us = std::max(max_us, us);
    sum_us += us;
  }

  nlohmann::json fields() const {
    nlohmann::json result{{"sent", sent}, {"received", received}, {"lost", sent - received}};
    if (received > 0) {
      result["min_us"] = min_us;
      result["avg_us"] = sum_us / static_cast<int64_t>(received);
      result["max_us"] = max_us;
    }
    return result;
  }

  std::string summary() const {
    auto lost = sent - received;
    std::string result = "summary sent=" + std::to_string(sent)
                         + " received=" + std::to_string(received)
                         + " lost=" + std::to_string(lost);
    if (received > 0)
      result += " min_us=" + std::to_string(min_us) + " avg_us="
                + std::to_string(sum_us / static_cast<int64_t>(received))
                + " max_us=" + std::to_string(max_us);
    return result;
  }
};

enum class pong_outcome : uint8_t { received, timed_out, interrupted };

/// Waits for the pong of `seq`; ignores other messages (late pongs of earlier pings).
pong_outcome await_pong(node_session& session, broker::hub& hub, broker::count seq,
                        const std::string& payload, clock::time_point deadline) {
  for (;;) {
    switch (session.wait(hub.read_fd(), deadline)) {
      case wake_reason::signal:
        return pong_outcome::interrupted;
      case wake_reason::deadline:
        return pong_outcome::timed_out;
      case wake_reason::input:
        break;
    }
    bool matched = false;
    for (auto& msg : hub.poll()) {
      session.received(msg);
      auto pong = read_ping_message(msg.value(), pong_kind);
      if (pong && pong->seq == seq && *pong->payload == payload)
        matched = true;
    }
    if (matched)
      return pong_outcome::received;
  }
}

} // namespace

broker::filter_type mode_filter(const node_options& opts) {
  if (opts.mode == node_mode::ping)
    return {broker::topic{opts.topics.front().string() + std::string{pong_suffix}}};
  return opts.topics;
}

broker::data make_ping_message(std::string_view kind, broker::count seq, std::string payload) {
  return broker::vector_builder{}
    .add(std::string{kind})
    .add(seq)
    .add(std::move(payload))
    .build();
}

std::optional<ping_fields> read_ping_message(const broker::data& value, std::string_view kind) {
  auto* xs = broker::get_if<broker::vector>(value);
  if (xs == nullptr || xs->size() != 3)
    return std::nullopt;
  auto* name = broker::get_if<std::string>((*xs)[0]);
  auto* seq = broker::get_if<broker::count>((*xs)[1]);
  auto* payload = broker::get_if<std::string>((*xs)[2]);
  if (name == nullptr || *name != kind || seq == nullptr || payload == nullptr)
    return std::nullopt;
  return ping_fields{*seq, payload};
}

int run_relay(node_session& session, broker::hub& hub) {
  for (;;) {
    if (session.wait(hub.read_fd(), clock::time_point::max()) == wake_reason::signal)
      return exit_clean;
    for (auto& msg : hub.poll()) {
      session.received(msg);
      if (is_stop(msg.value()))
        return exit_clean;
    }
  }
}

int run_pong(node_session& session, broker::hub& hub) {
  for (;;) {
    if (session.wait(hub.read_fd(), clock::time_point::max()) == wake_reason::signal)
      return exit_clean;
    for (auto& msg : hub.poll()) {
      session.received(msg);
      if (auto ping = read_ping_message(msg.value(), ping_kind))
        hub.publish(msg.topic() + std::string{pong_suffix},
                    make_ping_message(pong_kind, ping->seq, *ping->payload));
    }
  }
}

int run_ping(node_session& session, broker::hub& hub) {
  const auto& opts = session.options();
  const auto& ping_topic = opts.topics.front().string();
  // Pings published before any ponger is reachable would just vanish.
  auto path_deadline = clock::now() + opts.ping_timeout;
  while (!ponger_reachable(session.endpoint(), ping_topic)) {
    auto now = clock::now();
    if (now >= path_deadline) {
      std::fprintf(stderr, "broker-node: no peer subscribed to %s within %lld s\n",
                   ping_topic.c_str(), static_cast<long long>(opts.ping_timeout.count()));
      return exit_runtime_failure;
    }
    if (session.wait(-1, std::min(path_deadline, now + path_check_interval))
        == wake_reason::signal)
      return exit_clean;
  }
  rtt_stats stats;
  std::string payload(opts.payload_size, payload_filler);
  for (broker::count seq = 0; seq < opts.num_pings; ++seq) {
    auto start = clock::now();
    if (auto err = hub.publish(ping_topic, make_ping_message(ping_kind, seq, payload))) {
      std::fprintf(stderr, "broker-node: cannot publish ping: %s\n", to_string(err).c_str());
      return exit_runtime_failure;
    }
    ++stats.sent;
    auto outcome = await_pong(session, hub, seq, payload, start + opts.ping_timeout);
    if (outcome == pong_outcome::interrupted) {
      print_event("summary", stats.fields(), stats.summary());
      return exit_clean;
    }
    if (outcome == pong_outcome::timed_out) {
      print_event("timeout", {{"seq", seq}}, "timeout " + std::to_string(seq));
      continue;
    }
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start);
    stats.add(us.count());
    print_event("rtt", {{"seq", seq}, {"us", us.count()}},
                "rtt " + std::to_string(seq) + " " + std::to_string(us.count()));
  }
  print_event("summary", stats.fields(), stats.summary());
  return stats.received == stats.sent ? exit_clean : exit_runtime_failure;
}

} // namespace broker_node
