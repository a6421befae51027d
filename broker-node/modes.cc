#include "modes.hh"

#include "remote_stop.hh"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace broker_node {

using clock = node_session::clock;

namespace {

constexpr std::string_view ping_kind = "ping";
constexpr std::string_view pong_kind = "pong";

/// The rendezvous ping's id; measured pings count from 1 (Broker's convention).
constexpr broker::count rendezvous_id = 0;

/// Filler byte of ping payloads.
constexpr char payload_filler = 'x';

const std::string* kind_of(const broker::vector& xs) {
  return xs.empty() ? nullptr : broker::get_if<std::string>(xs[0]);
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

/// Waits for the pong of `id`; ignores everything else (other pings and pongs on T, late
/// pongs of earlier pings).
pong_outcome await_pong(node_session& session, broker::hub& hub, broker::count id,
                        clock::time_point deadline) {
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
      if (read_pong(msg.value()) == id)
        matched = true;
    }
    if (matched)
      return pong_outcome::received;
  }
}

/// Repeats ping 0 every --rendezvous-retry until pong 0 arrives or --ping-timeout passes.
pong_outcome rendezvous(node_session& session, broker::hub& hub, const std::string& topic) {
  const auto& opts = session.options();
  auto deadline = clock::now() + opts.ping_timeout;
  for (;;) {
    if (auto err = hub.publish(topic, make_ping(rendezvous_id, {})))
      return pong_outcome::timed_out; // Only after shutdown; the caller reports no ponger.
    auto retry_at = std::min(deadline, clock::now() + opts.rendezvous_retry);
    auto outcome = await_pong(session, hub, rendezvous_id, retry_at);
    if (outcome != pong_outcome::timed_out || clock::now() >= deadline)
      return outcome;
  }
}

} // namespace

broker::filter_type mode_filter(const node_options& opts) {
  // The pinger listens on its ping topic, where Broker's pongers answer.
  if (opts.mode == node_mode::ping)
    return {opts.topics.front()};
  return opts.topics;
}

broker::data make_ping(broker::count id, std::string payload) {
  return broker::vector_builder{}
    .add(std::string{ping_kind})
    .add(id)
    .add(std::move(payload))
    .build();
}

broker::data make_pong(broker::count id) {
  return broker::vector_builder{}.add(std::string{pong_kind}).add(id).build();
}

std::optional<ping_fields> read_ping(const broker::data& value) {
  auto* xs = broker::get_if<broker::vector>(value);
  if (xs == nullptr || xs->size() != 3)
    return std::nullopt;
  auto* kind = kind_of(*xs);
  auto* id = broker::get_if<broker::count>((*xs)[1]);
  auto* payload = broker::get_if<std::string>((*xs)[2]);
  if (kind == nullptr || *kind != ping_kind || id == nullptr || payload == nullptr)
    return std::nullopt;
  return ping_fields{*id, payload};
}

std::optional<broker::count> read_pong(const broker::data& value) {
  auto* xs = broker::get_if<broker::vector>(value);
  if (xs == nullptr || xs->size() != 2)
    return std::nullopt;
  auto* kind = kind_of(*xs);
  auto* id = broker::get_if<broker::count>((*xs)[1]);
  if (kind == nullptr || *kind != pong_kind || id == nullptr)
    return std::nullopt;
  return *id;
}

namespace {

/// The stop handler of relay or pong mode, logging through the node's log.
stop_handler make_stop_handler(node_session& session, bool exits, std::string reason) {
  return stop_handler{exits, std::move(reason), [&session](std::string_view line) {
                        session.endpoint().log(broker::endpoint::log_severity::warning,
                                               "node", line);
                      }};
}

} // namespace

int run_relay(node_session& session, broker::hub& hub) {
  auto stops = make_stop_handler(session, session.options().exit_on_stop, "--exit-on-stop");
  for (;;) {
    if (session.wait(hub.read_fd(), clock::time_point::max()) == wake_reason::signal)
      return exit_clean;
    for (auto& msg : hub.poll()) {
      session.received(msg);
      if (is_stop(msg) && stops.on_stop(msg))
        return exit_clean;
    }
  }
}

int run_pong(node_session& session, broker::hub& hub) {
  // Broker's ping/pong benchmarks end their ponger with "stop": pong mode always exits.
  auto stops = make_stop_handler(session, true, "pong mode exits on \"stop\"");
  for (;;) {
    if (session.wait(hub.read_fd(), clock::time_point::max()) == wake_reason::signal)
      return exit_clean;
    for (auto& msg : hub.poll()) {
      session.received(msg);
      if (auto ping = read_ping(msg.value()))
        hub.publish(msg.topic(), make_pong(ping->id));
      else if (is_stop(msg) && stops.on_stop(msg))
        return exit_clean;
    }
  }
}

int run_ping(node_session& session, broker::hub& hub) {
  const auto& opts = session.options();
  const auto& topic = opts.topics.front().string();
  switch (rendezvous(session, hub, topic)) {
    case pong_outcome::interrupted:
      return exit_clean;
    case pong_outcome::timed_out:
      std::fprintf(stderr, "broker-node: no pong on %s within %lld s\n", topic.c_str(),
                   static_cast<long long>(opts.ping_timeout.count()));
      return exit_runtime_failure;
    case pong_outcome::received:
      break;
  }
  rtt_stats stats;
  std::string payload(opts.payload_size, payload_filler);
  for (broker::count id = 1; id <= opts.num_messages; ++id) {
    auto start = clock::now();
    if (auto err = hub.publish(topic, make_ping(id, payload))) {
      std::fprintf(stderr, "broker-node: cannot publish ping: %s\n", to_string(err).c_str());
      return exit_runtime_failure;
    }
    ++stats.sent;
    auto outcome = await_pong(session, hub, id, start + opts.ping_timeout);
    if (outcome == pong_outcome::interrupted) {
      print_event("summary", stats.fields(), stats.summary());
      return exit_clean;
    }
    if (outcome == pong_outcome::timed_out) {
      print_event("timeout", {{"seq", id}}, "timeout " + std::to_string(id));
      continue;
    }
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start);
    stats.add(us.count());
    print_event("rtt", {{"seq", id}, {"us", us.count()}},
                "rtt " + std::to_string(id) + " " + std::to_string(us.count()));
  }
  print_event("summary", stats.fields(), stats.summary());
  return stats.received == stats.sent ? exit_clean : exit_runtime_failure;
}

} // namespace broker_node
