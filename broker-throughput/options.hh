#pragma once

// broker-throughput's own options: the rows it adds to the configuration's table (so the
// command line, config files and --help treat them like library options) and the validated
// settings the rest of the program reads.
//
// Flow at start-up (main.cc):
//   1. add_throughput_options(cfg) adds the rows (event-type, batch-rate, ...).
//   2. cfg.load(argc, argv, &rest) reads file, environment and command line; `rest` holds
//      the positional <host>[:<port>].
//   3. read_throughput_options(cfg, rest) checks what the table cannot check alone (the
//      address, combinations such as --latency with --web-socket) and returns the settings
//      or an error whose message names the option.

#include <broker/configuration.hh>
#include <broker/error.hh>

#include "address.hh"
#include "option_rows.hh"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace broker_throughput {

/// Exit codes (README.md).
enum exit_code : int {
  exit_clean = 0,           ///< Done: count or duration reached, or SIGINT/SIGTERM.
  exit_bad_usage = 1,       ///< Bad command line, config file, environment or option value.
  exit_runtime_failure = 2, ///< Cannot listen or connect, the connection broke, ...
};

/// Peering port of Broker's broker-benchmark when <host> has no port.
inline constexpr uint16_t default_port = 9999;

/// The topic every event goes to.
inline constexpr std::string_view events_topic = "/benchmark/events";

/// The topic on which a --latency server echoes events back to the sender.
inline constexpr std::string_view echo_topic = "/benchmark/echo";

/// What the process does.
enum class role : uint8_t {
  client, ///< Publish events to <host>:<port>.
  server, ///< Accept events on <addr>:<port> and count them.
};

/// How events travel.
enum class transport : uint8_t {
  peering,    ///< Native Broker peering (the endpoint listens or dials).
  web_socket, ///< A node's WebSocket JSON API v1 (ws://host:port/v1/messages/json).
};

/// The settings after validation.
struct throughput_options {
  role mode = role::client;
  transport via = transport::peering;
  std::string host; ///< Client: the node to reach. Server: bind address ("" = all).
  uint16_t port = default_port;
  uint64_t event_type = 1;  ///< 0, 1, 2 or 3 (events.hh).
  uint64_t batch_rate = 0;  ///< Batches per second; 0 = as fast as possible.
  uint64_t batch_size = 1;  ///< Messages per batch.
  uint64_t count = 0;       ///< Messages to send (client) or receive (server); 0 = no limit.
  std::chrono::seconds duration{0}; ///< 0 = no limit.
  std::chrono::seconds connect_timeout{0};
  bool latency = false;
  bool json = false;
  bool verbose = false;
};

/// Adds broker-throughput's rows to `cfg`. Fails only on a clash with the library's table.
broker::error add_throughput_options(broker::configuration& cfg);

/// Validates and collects the settings from a loaded configuration and the positional
/// arguments. Errors (ec::invalid_config) name the option, e.g.
/// `batch-size: --latency sends one event per batch, got 10`.
broker::expected<throughput_options>
read_throughput_options(const broker::configuration& cfg, const std::vector<std::string>& rest,
                        bool need_address = true);

} // namespace broker_throughput
