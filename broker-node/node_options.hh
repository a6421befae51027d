#pragma once

// broker-node's own options: the rows it adds to the configuration's table (so that the
// command line, config files and --help treat them like library options) and the validated
// value the rest of the program reads.
//
// Flow at start-up (main.cc):
//   1. add_node_options(cfg) adds the rows (topics, peers, mode, ...).
//   2. cfg.load(argc, argv) reads file, environment and command line.
//   3. read_node_options(cfg) checks what the table cannot check alone (peer addresses, a topic
//      for ping/pong, store names, TLS settings this build cannot honour) and returns
//      node_options or an error whose message names the option.

#include <broker/configuration.hh>
#include <broker/error.hh>
#include <broker/store.hh>
#include <broker/topic.hh>

#include "address.hh"
#include "option_rows.hh"
#include "store_options.hh"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace broker_node {

/// What the node does with the topics (see doc/node.md).
enum class node_mode : uint8_t {
  relay, ///< Subscribe to the topics (and so relay them); print; "stop": see exit_on_stop.
  ping,  ///< Rendezvous, then publish pings on the first topic, time the pongs, exit.
  pong,  ///< Answer every ping with a pong on the ping's topic; exit on "stop".
};

/// One entry of --peers (shared with the other tools).
using broker_tools::peer_address;

/// The node's settings after validation.
struct node_options {
  node_mode mode = node_mode::relay;
  broker::filter_type topics;
  std::vector<peer_address> peers;
  std::chrono::seconds peer_retry{0};
  bool verbose = false;
  /// --json: event lines as JSON objects.
  bool json = false;
  /// --hash-token: read a token from stdin, print its hash for the rules file, exit.
  bool hash_token = false;
  /// --status URL: print that node's status and exit.
  std::string status_url;
  bool rate = false;
  bool listen = true;
  std::string listen_address;
  uint16_t port = 0;
  uint64_t num_messages = 0;
  uint64_t payload_size = 0;
  std::chrono::seconds ping_timeout{0};
  std::chrono::milliseconds rendezvous_retry{0};
  /// --exit-on-stop: relay mode exits on the value "stop" (remote_stop.hh).
  bool exit_on_stop = false;
  /// --name: prefixes the -v lines; empty for none.
  std::string name;
  std::vector<std::string> master_stores;
  std::vector<std::string> clone_stores;
  /// Backend, directory and SQLite settings of the masters.
  broker_tools::store_settings store;
};

/// Adds broker-node's rows, and Broker's top-level `port`, to `cfg`. Fails
/// only on a clash with the library's table.
broker::error add_node_options(broker::configuration& cfg);

/// Validates and collects the node's settings from a loaded configuration. Errors
/// (ec::invalid_config) name the option, e.g.
/// `peers: expected host:port or tcp://host:port, got "x" (missing port)`.
broker::expected<node_options> read_node_options(const broker::configuration& cfg);

} // namespace broker_node
