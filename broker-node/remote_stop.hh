#pragma once

// remote_stop: what the node does with the string value "stop" (doc/node.md, "Remote stop").
//
// Zeek Broker's broker-node is a test tool: in relay and pong mode it exits when "stop"
// arrives on one of its topics. Ours is a daemon, so anyone who may publish on a topic it
// relays could shut it down, and a hub relays "stop" to its spokes before it exits, so one
// message ends a whole tree. Hence:
//   - relay mode exits on "stop" only with --exit-on-stop;
//   - pong mode exits on it always (Broker's ping/pong benchmarks end their ponger so);
//   - ping mode never looks at it (neither does Broker's).
// An exit is logged with the topic and what the node knows of the sender; an ignored "stop"
// is logged the first time and then at most once per `ignored_log_interval`, with the
// number ignored in between, so that a flood of them cannot flood the log.
//
// Threads: main thread only (the modes' loop).

#include <broker/data.hh>
#include <broker/message.hh>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace broker_node {

/// The value that may end relay and pong mode.
inline constexpr std::string_view stop_value = "stop";

/// The shortest time between two "ignored stop" log lines.
inline constexpr std::chrono::seconds ignored_log_interval{60};

/// True if `value` is the string "stop".
bool is_stop(const broker::data& value);

/// The same test on a message, without decoding a received one.
bool is_stop(const broker::data_message& msg);

/// What the node knows of a message's sender: the publishing node's id and its distance
/// when a peer of ours relayed it, "a peer that does not name the publisher" for a Zeek
/// Broker peer, or "this node" for a local publisher or one of the node's WebSocket clients.
std::string sender_text(const broker::route_info& route);

/// Decides and logs (see the file comment).
class stop_handler {
public:
  using clock = std::chrono::steady_clock;

  /// Receives one finished log line (warning level).
  using log_fn = std::function<void(std::string_view line)>;

  /// `exits`: whether "stop" ends the mode; `reason` says why in the exit line, e.g.
  /// "--exit-on-stop".
  stop_handler(bool exits, std::string reason, log_fn log);

  /// Pre: is_stop(msg.value()). Logs, and returns true if the node must exit now.
  bool on_stop(const broker::data_message& msg, clock::time_point now = clock::now());

  /// "stop" values ignored so far.
  uint64_t ignored() const noexcept { return ignored_; }

private:
  bool exits_;
  std::string reason_;
  log_fn log_;
  uint64_t ignored_ = 0;
  uint64_t unlogged_ = 0; ///< Ignored since the last line.
  bool logged_once_ = false;
  clock::time_point last_line_;
};

} // namespace broker_node
