#include "node_options.hh"

#include <broker/json.hh>

#include <algorithm>
#include <utility>

namespace broker_node {

using broker::error;
using broker_tools::choice_row;
using broker_tools::count_row;
using broker_tools::flag_row;
using broker_tools::list_row;
using broker_tools::in_quotes;
using broker_tools::string_row;

/// `key: what` (ec::invalid_config).
constexpr auto invalid = broker_tools::option_error;

namespace {

// -- defaults and limits of the program options -------------------------------------------

/// Seconds between attempts to (re-)dial a peer of --peers.
constexpr uint64_t default_peer_retry_seconds = 1;

/// An hour between re-dials is already more patience than any operator wants.
constexpr uint64_t max_peer_retry_seconds = 3600;

/// Pings sent by ping mode after the rendezvous (Broker's default).
constexpr uint64_t default_num_messages = 100;

/// Bound on --num-messages so that a typo cannot keep a node busy for days.
constexpr uint64_t max_num_messages = 10'000'000;

/// Payload bytes of each ping (Broker's default).
constexpr uint64_t default_payload_size = 0;

/// A ping must fit comfortably in one peering frame (64 MiB receive limit).
constexpr uint64_t max_payload_size = 16u * 1024u * 1024u;

/// Seconds ping mode waits for the rendezvous, and then for each pong.
constexpr uint64_t default_ping_timeout_seconds = 10;

constexpr uint64_t max_ping_timeout_seconds = 3600;

/// How often ping mode repeats its rendezvous ping (Broker's default).
constexpr const char* default_rendezvous_retry = "250ms";

/// Shortest --rendezvous-retry: faster repeats only flood the ponger.
constexpr auto min_rendezvous_retry = std::chrono::milliseconds{1};

/// Longest --rendezvous-retry; beyond --ping-timeout it would never repeat anyway.
constexpr auto max_rendezvous_retry = std::chrono::hours{1};

/// Reads --rendezvous-retry: a duration with a unit, as Broker writes it.
error read_rendezvous_retry(const broker::configuration& cfg, node_options& result) {
  auto text = cfg.get_string("rendezvous-retry").value_or(default_rendezvous_retry);
  auto span = broker::parse_timespan(text);
  if (!span || *span < min_rendezvous_retry || *span > max_rendezvous_retry)
    return invalid("rendezvous-retry", "expected a duration between 1ms and 1h such as "
                                       "250ms or 1s, got " + in_quotes(text));
  result.rendezvous_retry = std::chrono::duration_cast<std::chrono::milliseconds>(*span);
  return {};
}

/// Checks the names of --master-stores or --clone-stores (`key`) and appends them to `out`.
error read_store_names(const broker::configuration& cfg, std::string_view key,
                       std::vector<std::string>& out) {
  for (auto& name : cfg.get_list(std::string{key}).value_or(std::vector<std::string>{})) {
    if (name.empty())
      return invalid(key, "a store name must not be empty");
    if (broker::is_reserved_topic(name))
      return invalid(key, "reserved store name " + in_quotes(name) + " (prefix <$> is internal)");
    if (std::find(out.begin(), out.end(), name) != out.end())
      return invalid(key, "store " + in_quotes(name) + " is listed twice");
    out.push_back(name);
  }
  return {};
}

/// Reads the store options into `result`.
error read_store_options(const broker::configuration& cfg, node_options& result) {
  if (auto err = read_store_names(cfg, "master-stores", result.master_stores))
    return err;
  if (auto err = read_store_names(cfg, "clone-stores", result.clone_stores))
    return err;
  for (auto& name : result.clone_stores)
    if (std::find(result.master_stores.begin(), result.master_stores.end(), name)
        != result.master_stores.end())
      return invalid("clone-stores", "store " + in_quotes(name)
                                       + " is also in --master-stores: a node hosts either "
                                         "the master or a clone of a store");
  auto settings = broker_tools::read_store_settings(cfg);
  if (!settings)
    return settings.error_value();
  result.store = std::move(*settings);
  for (auto& name : result.master_stores)
    if (auto err = broker_tools::check_store_file_name(result.store, "master-stores", name))
      return err;
  return {};
}

} // namespace

error add_node_options(broker::configuration& cfg) {
  std::vector<broker::option_info> rows;
  rows.push_back(list_row("topics",
                          "topic prefixes to subscribe to (and so relay); ping uses the first",
                          't'));
  rows.push_back(list_row("peers", "peers to dial at start-up, each host:port or "
                                   "tcp://host:port ([::1]:port for IPv6)"));
  rows.push_back(count_row("peer-retry", default_peer_retry_seconds, 0, max_peer_retry_seconds,
                           "seconds between re-dials of a failed or lost peer; 0: dial once"));
  rows.push_back(choice_row("mode", "relay", {"relay", "ping", "pong"},
                            "relay: subscribe and print; ping: time round trips; "
                            "pong: answer pings",
                            'm'));
  rows.push_back(flag_row("verbose",
                          "print status and error events and every received message, one "
                          "per line",
                          'v'));
  rows.push_back(flag_row("rate", "print the number of received messages every second", 'r'));
  rows.push_back(flag_row("exit-on-stop",
                          "relay mode: exit when the string value \"stop\" arrives on a "
                          "subscribed topic, as Zeek Broker's broker-node does (pong mode "
                          "always does); without it the node logs and ignores \"stop\""));
  rows.push_back(string_row("listen-address", "",
                            "address the peering port binds to; empty: all interfaces"));
  rows.push_back(flag_row("no-listen",
                          "accept no peerings (only dial --peers, or serve WebSocket "
                          "clients); otherwise -p 0 picks a free port"));
  rows.push_back(count_row("num-messages", default_num_messages, 1, max_num_messages,
                           "pings sent in ping mode after the rendezvous", 'n'));
  rows.push_back(count_row("payload-size", default_payload_size, 0, max_payload_size,
                           "bytes of payload in each ping", 's'));
  rows.push_back(string_row("rendezvous-retry", default_rendezvous_retry,
                            "how often ping mode repeats ping 0 until pong 0 arrives"));
  rows.push_back(count_row("ping-timeout", default_ping_timeout_seconds, 1,
                           max_ping_timeout_seconds,
                           "seconds ping mode waits for the rendezvous, and then for each "
                           "pong"));
  rows.push_back(broker_tools::option_row("name", broker::option_type::string, "",
                                          "a name for this node: prefixes its -v lines as "
                                          "[name], and is broker.metrics.endpoint-name "
                                          "unless that is set",
                                          'N'));
  rows.push_back(string_row("endpoint-id", "",
                            "Broker's option to fix the endpoint id; not supported (ids "
                            "are random), setting it is an error"));
  rows.push_back(list_row("master-stores", "data stores whose master this node hosts"));
  rows.push_back(list_row("clone-stores", "data stores this node keeps a clone of"));
  broker_tools::add_store_rows(rows, "--master-stores");
  rows.push_back(broker_tools::option_row("json", broker::option_type::boolean, "false",
                                          "print the event lines (listening, status, error, "
                                          "received, rate, ...) as one JSON object per line"));
  rows.push_back(string_row("status", "",
                            "print the status of the node whose metrics server is at this "
                            "URL (http://host:port) as tables, then exit; starts no "
                            "endpoint"));
  rows.push_back(flag_row("hash-token",
                          "read a bearer token from stdin, print the sha256: line a rules "
                          "file (broker.security.rules-file) stores for it, and exit"));
  if (auto err = broker_tools::add_rows(cfg, std::move(rows)))
    return err;
  // Broker's broker-node reads its port as a top-level key (doc/node.md, "Zeek Broker's
  // broker-node").
  return cfg.add_alias("port", "broker.port");
}

broker::expected<node_options> read_node_options(const broker::configuration& cfg) {
  node_options result;
  auto mode = cfg.get_string("mode").value_or("relay");
  if (mode == "ping")
    result.mode = node_mode::ping;
  else if (mode == "pong")
    result.mode = node_mode::pong;
  for (auto& name : cfg.get_list("topics").value_or(std::vector<std::string>{})) {
    if (broker::is_reserved_topic(name))
      return invalid("topics", "reserved topic " + in_quotes(name) + " (prefix <$> is internal)");
    result.topics.emplace_back(name);
  }
  if (result.mode != node_mode::relay && result.topics.empty())
    return invalid("topics", "mode " + mode + " needs at least one topic (-t)");
  for (auto& text : cfg.get_list("peers").value_or(std::vector<std::string>{})) {
    auto addr = broker_tools::parse_address(text);
    if (!addr)
      return invalid("peers", addr.error_value().message());
    result.peers.push_back(std::move(*addr));
  }
  result.peer_retry = std::chrono::seconds{cfg.get_count("peer-retry").value_or(0)};
  result.verbose = cfg.get_bool("verbose").value_or(false);
  result.json = cfg.get_bool("json").value_or(false);
  result.status_url = cfg.get_string("status").value_or("");
  result.hash_token = cfg.get_bool("hash-token").value_or(false);
  result.rate = cfg.get_bool("rate").value_or(false);
  result.exit_on_stop = cfg.get_bool("exit-on-stop").value_or(false);
  result.listen = !cfg.get_bool("no-listen").value_or(false);
  result.listen_address = cfg.get_string("listen-address").value_or("");
  result.port = cfg.port();
  result.num_messages = cfg.get_count("num-messages").value_or(default_num_messages);
  result.payload_size = cfg.get_count("payload-size").value_or(default_payload_size);
  result.ping_timeout = std::chrono::seconds{
    cfg.get_count("ping-timeout").value_or(default_ping_timeout_seconds)};
  if (auto err = read_rendezvous_retry(cfg, result))
    return err;
  result.name = cfg.get_string("name").value_or("");
  if (auto id = cfg.get_string("endpoint-id").value_or(""); !id.empty())
    return invalid("endpoint-id", "choosing the endpoint id is not supported: every node "
                                  "picks a random version-4 UUID (got " + in_quotes(id) + ")");
  // WebSocket clients connect a gateway to the world; a metrics port alone does not.
  if (!result.listen && result.peers.empty() && cfg.web_socket_port() == 0)
    return invalid("no-listen", "a node that neither listens, nor dials --peers, nor serves "
                                "WebSocket clients (broker.web-socket.port) is isolated");
  if (auto err = read_store_options(cfg, result))
    return err;
  return result;
}

} // namespace broker_node
