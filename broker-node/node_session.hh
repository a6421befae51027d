#pragma once

// The node's main-thread event loop and its output.
//
// Threads: everything here runs on the main thread. The endpoint's own threads never touch
// it; they reach the main thread only through the file descriptors of the subscribers, and
// signals reach it through a signalfd (no work happens in a signal handler).
//
// Flow:
//   1. signal_watch blocks SIGINT and SIGTERM in the main thread *before* the endpoint
//      starts its threads (they inherit the mask), and opens a signalfd for them.
//   2. node_session subscribes to status and error events before any peering starts, so
//      that `-v` shows every peer_added.
//   3. A mode (modes.hh) calls wait() with its hub's descriptor; wait() prints pending
//      events and the `rate:` line on the way, reports SIGINT/SIGTERM, and on SIGHUP
//      reloads the access rules (endpoint::reload_security(), doc/security.md).
//
// Output format (stdout, one line per event, flushed per line; with --json one JSON object
// per line, {"type": "<first word>", ...}; see doc/node.md):
//   listening on <port>
//   status <code> <peer id or -> <host:port or -> <message>     (-v)
//   error <code> <message>                                       (-v)
//   received <topic> <value>                                     (-v)
//   rate: <n> messages/s
// With --name, the -v lines start with "[<name>] ".

#include "node_options.hh"

#include <broker/endpoint.hh>

#include <nlohmann/json.hpp>

#include "signal_watch.hh"

#include <chrono>
#include <string>
#include <string_view>

namespace broker_node {

/// Writes `line` and a newline to stdout and flushes: tests and scripts read line by line.
void print_line(std::string_view line);

/// Makes print_event() write JSON objects (--json) instead of text lines.
void set_json_output(bool on);

/// One event line: `text` (the text format), or with --json the object `fields` plus
/// "type": `kind` (the first word of the text line).
void print_event(std::string_view kind, nlohmann::json fields, std::string_view text);

/// `text` with backslashes and control characters escaped (`\\`, `\n`, `\xNN`), so that a
/// value can never break the one-line-per-event format.
std::string escape_line(std::string_view text);

/// `received <topic> <value>`.
std::string received_line(const broker::data_message& msg);

/// `status ...` or `error ...`; empty for `none`.
std::string event_line(const broker::status_variant& event);

/// The same event as JSON fields: code, peer, address, message (null where unknown).
nlohmann::json event_fields(const broker::status_variant& event);

/// SIGINT/SIGTERM as a descriptor (shared with the other tools).
using broker_tools::signal_watch;

/// Why wait() returned.
enum class wake_reason : uint8_t { input, signal, deadline };

/// The main thread's loop state shared by all modes.
class node_session {
public:
  using clock = std::chrono::steady_clock;

  /// Subscribes to status/error events (printed with -v).
  node_session(broker::endpoint& ep, const node_options& opts, signal_watch& signals);

  /// Waits until `fd` is readable, SIGINT/SIGTERM arrives or `deadline` passes. Meanwhile
  /// prints events (with -v), with -r a rate line every second, and reloads the access
  /// rules on SIGHUP.
  wake_reason wait(int fd, clock::time_point deadline);

  /// Counts `msg` for the rate line and prints it with -v.
  void received(const broker::data_message& msg);

  broker::endpoint& endpoint() noexcept { return ep_; }
  const node_options& options() const noexcept { return opts_; }

private:
  /// A -v event (print_event), its text prefixed with `[<name>] ` and its JSON object
  /// given a "name" when --name is set.
  void print_verbose(std::string_view kind, nlohmann::json fields, const std::string& line);
  void drain_events();
  void tick(clock::time_point now);

  broker::endpoint& ep_;
  const node_options& opts_;
  signal_watch& signals_;
  broker::status_subscriber events_;
  clock::time_point next_tick_;
  uint64_t received_since_tick_ = 0;
};

} // namespace broker_node
