#include "node_options.hh"

#include <limits>
#include <utility>

namespace broker_node {

using broker::ec;
using broker::error;
using broker::option_info;
using broker::option_type;

namespace {

// -- defaults and limits of the program options -------------------------------------------

/// Seconds between attempts to (re-)dial a peer of --peers.
constexpr uint64_t default_peer_retry_seconds = 1;

/// An hour between re-dials is already more patience than any operator wants.
constexpr uint64_t max_peer_retry_seconds = 3600;

/// Pings sent by ping mode.
constexpr uint64_t default_num_pings = 10;

/// Bound on --num-pings so that a typo cannot keep a node busy for days.
constexpr uint64_t max_num_pings = 10'000'000;

/// Payload bytes of each ping.
constexpr uint64_t default_payload_size = 64;

/// A ping must fit comfortably in one peering frame (64 MiB receive limit).
constexpr uint64_t max_payload_size = 16u * 1024u * 1024u;

/// Seconds ping mode waits for a path to a ponger, and then for each pong.
constexpr uint64_t default_ping_timeout_seconds = 10;

constexpr uint64_t max_ping_timeout_seconds = 3600;

constexpr std::string_view tcp_scheme = "tcp://";

// -- row builders ---------------------------------------------------------------------------

option_info row(std::string key, option_type type, std::string def, std::string help,
                char short_flag = 0) {
  option_info info;
  info.key = std::move(key);
  info.type = type;
  info.default_value = std::move(def);
  info.help = std::move(help);
  info.short_flag = short_flag;
  return info;
}

option_info count_row(std::string key, uint64_t def, uint64_t min, uint64_t max,
                      std::string help, char short_flag = 0) {
  auto info = row(std::move(key), option_type::count, std::to_string(def), std::move(help),
                  short_flag);
  info.min = min;
  info.max = max;
  return info;
}

error invalid(std::string_view key, std::string what) {
  return error{ec::invalid_config, std::string{key} + ": " + std::move(what)};
}

std::string quoted(std::string_view text) {
  return "\"" + std::string{text} + "\"";
}

/// Parses the decimal port of a peer URI: 1-65535, digits only.
bool parse_port(std::string_view text, uint16_t& result) {
  constexpr uint32_t max_port = std::numeric_limits<uint16_t>::max();
  if (text.empty() || text.size() > 5)
    return false;
  uint32_t value = 0;
  for (auto c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value == 0 || value > max_port)
    return false;
  result = static_cast<uint16_t>(value);
  return true;
}

std::string_view unwrap_angle_brackets(std::string_view text) {
  if (text.size() >= 2 && text.front() == '<' && text.back() == '>')
    return text.substr(1, text.size() - 2);
  return text;
}

} // namespace

error add_node_options(broker::configuration& cfg) {
  std::vector<option_info> rows;
  rows.push_back(row("topics", option_type::string_list, "[]",
                     "topic prefixes to subscribe to (and so relay); ping uses the first",
                     't'));
  rows.push_back(row("peers", option_type::string_list, "[]",
                     "peers to dial at start-up, each tcp://host:port"));
  rows.push_back(count_row("peer-retry", default_peer_retry_seconds, 0, max_peer_retry_seconds,
                           "seconds between re-dials of a failed or lost peer; 0: dial once"));
  auto mode = row("mode", option_type::choice, "relay",
                  "relay: subscribe and print; ping: time round trips; pong: answer pings",
                  'm');
  mode.choices = {"relay", "ping", "pong"};
  rows.push_back(std::move(mode));
  rows.push_back(row("verbose", option_type::boolean, "false",
                     "print status and error events and every received message, one per line",
                     'v'));
  rows.push_back(row("rate", option_type::boolean, "false",
                     "print the number of received messages every second", 'r'));
  rows.push_back(row("listen-address", option_type::string, "",
                     "address the peering port binds to; empty: all interfaces"));
  rows.push_back(row("no-listen", option_type::boolean, "false",
                     "accept no peerings (only dial --peers); otherwise -p 0 picks a free port"));
  rows.push_back(count_row("num-pings", default_num_pings, 1, max_num_pings,
                           "pings sent in ping mode", 'n'));
  rows.push_back(count_row("payload-size", default_payload_size, 0, max_payload_size,
                           "bytes of payload in each ping", 's'));
  rows.push_back(count_row("ping-timeout", default_ping_timeout_seconds, 1,
                           max_ping_timeout_seconds,
                           "seconds ping mode waits for a ponger, and then for each pong"));
  for (auto& info : rows)
    if (auto err = cfg.add_option(std::move(info)))
      return err;
  return {};
}

broker::expected<peer_address> parse_peer_uri(std::string_view text) {
  auto fail = [text] {
    return error{ec::invalid_config, "expected tcp://host:port, got " + quoted(text)};
  };
  auto uri = unwrap_angle_brackets(text);
  if (uri.substr(0, tcp_scheme.size()) != tcp_scheme)
    return fail();
  auto authority = uri.substr(tcp_scheme.size());
  peer_address result;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos || close + 1 >= authority.size()
        || authority[close + 1] != ':')
      return fail();
    result.host = std::string{authority.substr(1, close - 1)};
    port_text = authority.substr(close + 2);
  } else {
    auto colon = authority.rfind(':');
    if (colon == std::string_view::npos)
      return fail();
    result.host = std::string{authority.substr(0, colon)};
    port_text = authority.substr(colon + 1);
    if (result.host.find(':') != std::string::npos)
      return fail(); // An IPv6 address needs brackets.
  }
  if (result.host.empty() || !parse_port(port_text, result.port))
    return fail();
  return result;
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
      return invalid("topics", "reserved topic " + quoted(name) + " (prefix <$> is internal)");
    result.topics.emplace_back(name);
  }
  if (result.mode != node_mode::relay && result.topics.empty())
    return invalid("topics", "mode " + mode + " needs at least one topic (-t)");
  for (auto& text : cfg.get_list("peers").value_or(std::vector<std::string>{})) {
    auto addr = parse_peer_uri(text);
    if (!addr)
      return invalid("peers", addr.error_value().message());
    result.peers.push_back(std::move(*addr));
  }
  result.peer_retry = std::chrono::seconds{cfg.get_count("peer-retry").value_or(0)};
  result.verbose = cfg.get_bool("verbose").value_or(false);
  result.rate = cfg.get_bool("rate").value_or(false);
  result.listen = !cfg.get_bool("no-listen").value_or(false);
  result.listen_address = cfg.get_string("listen-address").value_or("");
  result.port = cfg.port();
  result.num_pings = cfg.get_count("num-pings").value_or(default_num_pings);
  result.payload_size = cfg.get_count("payload-size").value_or(default_payload_size);
  result.ping_timeout = std::chrono::seconds{
    cfg.get_count("ping-timeout").value_or(default_ping_timeout_seconds)};
  if (!result.listen && result.peers.empty())
    return invalid("no-listen", "a node that neither listens nor dials --peers is isolated");
  return result;
}

} // namespace broker_node
