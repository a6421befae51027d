#pragma once

// The node's three modes. Each runs on the main thread until it is done, the value "stop"
// arrives (relay), or SIGINT/SIGTERM; it returns the process exit code.
//
// Message shapes (doc/node.md):
//   ping: ["ping", count seq, string payload] on the first topic T
//   pong: ["pong", count seq, string payload] on <topic of the ping>/pong

#include "node_session.hh"

#include <broker/data.hh>
#include <broker/hub.hh>

#include <optional>

namespace broker_node {

/// Exit codes of broker-node (doc/node.md).
enum exit_code : int {
  exit_clean = 0,          ///< Done, "stop" received, or SIGINT/SIGTERM.
  exit_invalid_config = 1, ///< Bad command line, config file, environment or option value.
  exit_runtime_failure = 2, ///< E.g. cannot listen; ping mode: no ponger or lost pongs.
};

/// The subscription a mode needs; make it before peering so the handshake carries it.
broker::filter_type mode_filter(const node_options& opts);

/// Prints and counts every message on the topics; exits on the string value "stop".
int run_relay(node_session& session, broker::hub& hub);

/// Sends opts.num_pings pings and prints `rtt <seq> <microseconds>` per pong and a summary.
int run_ping(node_session& session, broker::hub& hub);

/// Answers every ping.
int run_pong(node_session& session, broker::hub& hub);

/// ["ping" | "pong", seq, payload].
broker::data make_ping_message(std::string_view kind, broker::count seq, std::string payload);

/// The sequence number and payload of a message of shape ["<kind>", count, string].
struct ping_fields {
  broker::count seq = 0;
  const std::string* payload = nullptr;
};
std::optional<ping_fields> read_ping_message(const broker::data& value, std::string_view kind);

} // namespace broker_node
