#include "peering.hh"

#include "events.hh"
#include "address.hh"
#include "tool.hh"
#include "sender.hh"

#include <broker/endpoint.hh>

#include <algorithm>
#include <optional>
#include <string>
#include <thread>

namespace broker_throughput {

namespace {

using namespace std::chrono_literals;
using clock = session::clock;

/// Interval between attempts to dial the server.
constexpr broker::timespan dial_retry = 250ms;

/// How often the client looks whether the server's filter has arrived.
constexpr auto path_check_interval = 20ms;

/// How long the client waits while its peer queue is above the high-water mark.
constexpr auto throttle_pause = 200us;

/// Upper bound on waiting for the peer queues to drain at the end of a run.
constexpr auto drain_timeout = 5s;

/// How long the client waits for the echoes of the last events (--latency).
constexpr auto echo_grace = 3s;

std::string endpoint_text(const throughput_options& opts) {
  return broker_tools::format_address(opts.host, opts.port);
}

/// Text of a status or error event for --verbose; empty for none.
std::string event_text(const broker::status_variant& event) {
  if (auto* st = std::get_if<broker::status>(&event))
    return "status " + to_string(*st);
  if (auto* err = std::get_if<broker::error>(&event))
    return "error " + to_string(*err);
  return {};
}

/// Prints pending events with --verbose. Returns the first lost or removed peering.
std::optional<broker::status> drain_events(broker::status_subscriber& events, bool verbose) {
  std::optional<broker::status> lost;
  if (events.available() == 0)
    return lost;
  for (auto& event : events.poll()) {
    if (verbose)
      if (auto text = event_text(event); !text.empty())
        print_diagnostic(text);
    if (auto* st = std::get_if<broker::status>(&event))
      if (!lost && (st->code() == broker::sc::peer_lost || st->code() == broker::sc::peer_removed))
        lost = *st;
  }
  return lost;
}

/// True if a peer announced a prefix of `t`, i.e. an event published on it goes somewhere.
bool receiver_reachable(const broker::endpoint& ep, std::string_view t) {
  for (auto& prefix : ep.peer_subscriptions())
    if (t.substr(0, prefix.string().size()) == prefix.string())
      return true;
  return false;
}

uint64_t peer_drops(const broker::endpoint_metrics& m) {
  const auto& peers = m[broker::handler_kind::peer];
  uint64_t result = peers.disconnects;
  for (auto n : peers.dropped)
    result += n;
  return result;
}

/// Waits (bounded, not interruptible) until no peer queue holds anything, so that the
/// client's duration covers handing its events to the network.
void drain_peer_queues(const broker::endpoint& ep) {
  auto deadline = clock::now() + drain_timeout;
  while (clock::now() < deadline && ep.metrics()[broker::handler_kind::peer].buffered > 0)
    std::this_thread::sleep_for(throttle_pause);
}

/// Waits until a peer subscribed to the events topic. False: timeout or signal.
bool await_receiver(broker::endpoint& ep, broker::status_subscriber& events, session& s) {
  const auto& opts = s.options();
  auto deadline = clock::now() + opts.connect_timeout;
  for (;;) {
    drain_events(events, opts.verbose);
    if (receiver_reachable(ep, events_topic))
      return true;
    auto now = clock::now();
    if (now >= deadline) {
      print_diagnostic("no receiver subscribed to " + std::string{events_topic} + " at "
                       + endpoint_text(opts) + " within "
                       + std::to_string(opts.connect_timeout.count()) + " s");
      return false;
    }
    if (s.wait({events.fd()}, std::min(deadline, now + path_check_interval))
        == wake_reason::signal)
      return false;
  }
}

/// The send side of a peering (see peering.hh for the pacing).
class peering_sink : public event_sink {
public:
  peering_sink(broker::endpoint& ep, broker::status_subscriber& events,
               broker::subscriber* echoes, session& s)
    : ep_(ep), events_(events), echoes_(echoes), s_(s) {
    auto capacity = ep.config().peer_buffer_size();
    chunk_ = std::max<size_t>(1, capacity / 8);
    high_water_ = capacity / 4;
  }

  broker::error send(std::vector<broker::data_message>& batch) override {
    // Big batches go out in chunks, so that no single publish can overflow the peer queue.
    for (size_t pos = 0; pos < batch.size();) {
      auto n = std::min(chunk_ - unchecked_, batch.size() - pos);
      std::vector<broker::data_message> part;
      if (pos == 0 && n == batch.size()) {
        part.swap(batch);
      } else {
        part.assign(std::make_move_iterator(batch.begin() + pos),
                    std::make_move_iterator(batch.begin() + pos + n));
      }
      pos += n;
      if (auto err = ep_.publish(std::move(part)))
        return err;
      sent_ += n;
      unchecked_ += n;
      if (unchecked_ >= chunk_) {
        unchecked_ = 0;
        if (auto err = throttle())
          return err;
      }
    }
    return {};
  }

  int input_fd() const override { return echoes_ ? echoes_->fd() : events_.fd(); }

  broker::error handle_input() override {
    // Events first: the core queues a peer's last echoes before the event that it left,
    // so polling the echoes afterwards still collects all of them.
    auto lost = drain_events(events_, s_.options().verbose);
    if (echoes_ != nullptr && echoes_->available() > 0) {
      auto now = broker::now();
      for (auto& msg : echoes_->poll()) {
        ++echoed_;
        if (auto sent = sent_time(msg.value()))
          round_trips_.add((now - *sent) / 2);
      }
    }
    if (lost)
      return broker::error{broker::ec::peer_unavailable,
                           "lost the peering with " + endpoint_text(s_.options()) + ": "
                             + to_string(*lost)};
    return {};
  }

  void finish(session& s) override {
    drain_peer_queues(ep_);
    if (echoes_ == nullptr || s.interrupted())
      return;
    auto deadline = clock::now() + echo_grace;
    while (!handle_input() && echoed_ < sent_)
      if (s.wait({echoes_->fd(), events_.fd()}, deadline) != wake_reason::input)
        break;
  }

  void complete(run_summary& result) override {
    result.dropped = peer_drops(ep_.metrics());
    if (echoes_ != nullptr)
      result.latency = round_trips_.summarize("round-trip/2");
  }

private:
  /// Waits while the peer queue is above the high-water mark.
  broker::error throttle() {
    for (;;) {
      auto m = ep_.metrics();
      const auto& peers = m[broker::handler_kind::peer];
      if (peers.handlers == 0)
        return broker::error{broker::ec::peer_unavailable,
                             "lost the peering with " + endpoint_text(s_.options())};
      if (peers.buffered <= high_water_ || s_.interrupted())
        return {};
      s_.wait({}, clock::now() + throttle_pause);
    }
  }

  broker::endpoint& ep_;
  broker::status_subscriber& events_;
  broker::subscriber* echoes_;
  session& s_;
  size_t chunk_ = 1;
  size_t high_water_ = 0;
  size_t unchecked_ = 0;
  uint64_t sent_ = 0;
  uint64_t echoed_ = 0;
  latency_recorder round_trips_;
};

} // namespace

int run_peering_client(broker::configuration cfg, session& s) {
  const auto& opts = s.options();
  broker::endpoint ep{std::move(cfg)};
  if (const auto& err = ep.startup_error())
    print_diagnostic("warning: " + to_string(err));
  auto events = ep.make_status_subscriber(true);
  // Subscribed before dialing, so the handshake already carries the echo topic.
  std::optional<broker::subscriber> echoes;
  if (opts.latency)
    echoes.emplace(ep.make_subscriber({broker::topic{std::string{echo_topic}}}));
  ep.peer_nosync(opts.host, opts.port, dial_retry);
  if (!await_receiver(ep, events, s))
    return s.interrupted() ? exit_clean : exit_runtime_failure;
  if (opts.verbose)
    print_diagnostic("peered with " + endpoint_text(opts));
  peering_sink sink{ep, events, echoes ? &*echoes : nullptr, s};
  return run_sender(s, sink);
}

int run_peering_server(broker::configuration cfg, session& s) {
  const auto& opts = s.options();
  broker::endpoint ep{std::move(cfg)};
  if (const auto& err = ep.startup_error())
    print_diagnostic("warning: " + to_string(err));
  auto events = ep.make_status_subscriber(true);
  // Subscribed before listening, so the first handshake already carries the topic.
  auto hub = ep.make_hub({broker::topic{std::string{events_topic}}});
  auto port = ep.listen(opts.host, opts.port);
  if (!port) {
    print_diagnostic(broker_tools::listen_failure(port.error_value(), "the <addr>:<port> argument"));
    return exit_runtime_failure;
  }
  s.out().listening(*port);
  latency_recorder one_way;
  std::vector<broker::data_message> echoes;
  while (!s.done()) {
    auto reason = s.wait({hub.read_fd(), events.fd()}, s.end_of_run());
    if (reason == wake_reason::signal)
      break;
    drain_events(events, opts.verbose);
    if (hub.available() == 0)
      continue;
    auto msgs = hub.poll();
    if (opts.latency) {
      auto now = broker::now();
      echoes.clear();
      for (auto& msg : msgs) {
        if (auto sent = sent_time(msg.value()))
          one_way.add(now - *sent);
        echoes.emplace_back(broker::topic{std::string{echo_topic}}, msg.value());
      }
      if (auto err = hub.publish(std::move(echoes)); err && opts.verbose)
        print_diagnostic("cannot echo: " + to_string(err));
    }
    s.add(msgs.size());
  }
  run_summary result;
  result.events = s.total();
  result.seconds = s.active_seconds();
  if (opts.latency)
    result.latency = one_way.summarize("one-way");
  s.out().summary(result);
  return exit_clean;
}

} // namespace broker_throughput
