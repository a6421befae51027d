#pragma once

// The node's three modes. Each runs on the main thread until it is done, the value "stop"
// arrives (relay with --exit-on-stop, pong; remote_stop.hh), or SIGINT/SIGTERM; it returns
// the process exit code.
//
// Ping and pong speak Zeek Broker's broker-node convention, so either side may be Broker's
// program (doc/node.md "Modes"):
//   ping: ["ping", count id, string payload]   on the first topic T
//   pong: ["pong", count id]                   on the topic of the ping
// The pinger subscribes to T itself. It first repeats ping 0 (empty payload) every
// --rendezvous-retry until pong 0 arrives, so that every node on the way is up; then it
// sends ids 1..n one at a time, each after the previous pong.

#include "node_session.hh"

#include <broker/data.hh>
#include <broker/hub.hh>

#include <optional>

namespace broker_node {

/// Exit codes of broker-node (doc/node.md).
enum exit_code : int {
  exit_clean = 0,          ///< Done, "stop" (remote_stop.hh), or SIGINT/SIGTERM.
  exit_invalid_config = 1, ///< Bad command line, config file, environment or option value.
  exit_runtime_failure = 2, ///< E.g. cannot listen; ping mode: no ponger or lost pongs.
};

/// The subscription a mode needs; make it before peering so the handshake carries it.
broker::filter_type mode_filter(const node_options& opts);

/// Prints and counts every message on the topics; exits on the string value "stop" only
/// with --exit-on-stop (remote_stop.hh), and otherwise logs that it ignored it.
int run_relay(node_session& session, broker::hub& hub);

/// Rendezvous, then opts.num_messages pings; prints `rtt <id> <microseconds>` per pong and
/// a summary.
int run_ping(node_session& session, broker::hub& hub);

/// Answers every ping with a pong on the ping's topic; exits on "stop" (as Broker's).
int run_pong(node_session& session, broker::hub& hub);

/// ["ping", id, payload].
broker::data make_ping(broker::count id, std::string payload);

/// ["pong", id].
broker::data make_pong(broker::count id);

/// The id and payload of a ping, as Broker's is_ping_msg() reads it: exactly three
/// elements "ping", a count and a string.
struct ping_fields {
  broker::count id = 0;
  const std::string* payload = nullptr;
};
std::optional<ping_fields> read_ping(const broker::data& value);

/// The id of a pong: exactly two elements, "pong" and a count.
std::optional<broker::count> read_pong(const broker::data& value);

} // namespace broker_node
