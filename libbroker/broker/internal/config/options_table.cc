#include "broker/internal/config/options_table.hh"

#include <cassert>
#include <cstdio>
#include <limits>
#include <utility>

#include "broker/internal/config/config_file.hh"
#include "broker/internal/config/operations_options.hh"
#include "broker/internal/config/zeromq_options.hh"
#include "broker/internal/config/security_options.hh"

namespace broker::internal {

namespace {

// -- limits of the table ----------------------------------------------------------------------

// Queues and caches are bounded by configuration so that a typo (an extra digit or two) cannot
// ask a handler for a queue that exhausts memory; 16 Mi entries is far above any sane setting.
constexpr uint64_t max_queue_entries = uint64_t{1} << 24;
constexpr uint64_t max_threads = 64;
constexpr uint64_t max_ttl = 65535;
constexpr uint64_t min_nesting_depth = 16;
constexpr uint64_t max_nesting_depth = 4096;
constexpr uint64_t max_port = 65535;
constexpr uint64_t max_clients = 1'000'000;
constexpr uint64_t min_message_size = 1024;
constexpr uint64_t max_message_size = uint64_t{1} << 31; // Broker's frame limit.
constexpr uint64_t max_subscriptions = 10'000'000;
constexpr uint64_t default_message_size = uint64_t{16} << 20; // doc/protocol/websocket.md §3.
constexpr uint64_t max_timeout_ms = 3'600'000;
constexpr const char* loopback_address = "127.0.0.1";

// -- row builders -----------------------------------------------------------------------------

option_info count_option(std::string key, uint64_t def, uint64_t min, uint64_t max,
                         std::string help) {
  option_info result;
  result.key = std::move(key);
  result.type = option_type::count;
  result.default_value = std::to_string(def);
  result.help = std::move(help);
  result.min = min;
  result.max = max;
  return result;
}

option_info bool_option(std::string key, bool def, std::string help) {
  option_info result;
  result.key = std::move(key);
  result.type = option_type::boolean;
  result.default_value = def ? "true" : "false";
  result.help = std::move(help);
  return result;
}

option_info string_option(std::string key, std::string help) {
  option_info result;
  result.key = std::move(key);
  result.type = option_type::string;
  result.help = std::move(help);
  return result;
}

// A string whose value no printer shows (option_info::secret).
// A bind address that defaults to the loopback interface: servers without authentication
// are reachable from this host only until the operator names an interface.
option_info local_address_option(std::string key, std::string help) {
  auto result = string_option(std::move(key), std::move(help));
  result.default_value = loopback_address;
  return result;
}

option_info secret_option(std::string key, std::string help) {
  auto result = string_option(std::move(key), std::move(help));
  result.secret = true;
  return result;
}

option_info port_option(std::string key, std::string env, char short_flag, std::string help) {
  option_info result;
  result.key = std::move(key);
  result.type = option_type::port;
  result.default_value = "0";
  result.help = std::move(help);
  result.env = std::move(env);
  result.short_flag = short_flag;
  return result;
}

option_info choice_option(std::string key, std::string def, std::vector<std::string> choices,
                          std::string help) {
  option_info result;
  result.key = std::move(key);
  result.type = option_type::choice;
  result.default_value = std::move(def);
  result.help = std::move(help);
  result.choices = std::move(choices);
  return result;
}

// Remote sinks must never slow anyone down (doc/architecture.md, "Core, handlers and overflow
// policies"), hence no `block` for them.
std::vector<std::string> remote_policies() {
  return {"drop_oldest", "drop_newest", "disconnect"};
}

std::vector<std::string> all_policies() {
  return {"block", "drop_oldest", "drop_newest", "disconnect"};
}

// CAF's verbosity names, which Broker's config files and variables use: quiet writes
// nothing, trace is debug (we have no finer level).
std::vector<std::string> log_levels() {
  return {"quiet", "error", "warning", "info", "debug", "trace"};
}

// -- parsing helpers --------------------------------------------------------------------------

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

std::string_view trim(std::string_view text) noexcept {
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  return text;
}

// Plain decimal digits only: no sign, no hex, no suffix; nullopt on overflow.
std::optional<uint64_t> parse_u64(std::string_view text) noexcept {
  if (text.empty())
    return std::nullopt;
  uint64_t result = 0;
  constexpr auto limit = std::numeric_limits<uint64_t>::max();
  for (auto c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    auto digit = static_cast<uint64_t>(c - '0');
    if (result > (limit - digit) / 10)
      return std::nullopt;
    result = result * 10 + digit;
  }
  return result;
}

bool all_digits(std::string_view text) noexcept {
  if (text.empty())
    return false;
  for (auto c : text)
    if (c < '0' || c > '9')
      return false;
  return true;
}

error invalid(std::string expected, std::string_view got) {
  return error{ec::invalid_config, "expected " + std::move(expected) + ", got "
                                     + quote_for_message(got)};
}

std::string range_text(const option_info& info) {
  return "an integer between " + std::to_string(info.min) + " and " + std::to_string(info.max);
}

std::string choices_text(const option_info& info) {
  std::string result = "one of ";
  for (size_t i = 0; i < info.choices.size(); ++i) {
    if (i > 0)
      result += ", ";
    result += info.choices[i];
  }
  return result;
}

bool same_choice(std::string_view text, std::string_view name) noexcept {
  if (text.size() != name.size())
    return false;
  for (size_t i = 0; i < text.size(); ++i) {
    auto normalize = [](char c) { return c == '-' ? '_' : c; };
    if (normalize(text[i]) != normalize(name[i]))
      return false;
  }
  return true;
}

expected<option_value> parse_count(const option_info& info, std::string_view text) {
  auto digits = trim(text);
  if (!all_digits(digits))
    return invalid(info.min > 0 ? "a positive integer" : "a non-negative integer", text);
  auto value = parse_u64(digits);
  if (!value || *value < info.min || *value > info.max)
    return invalid(range_text(info), text);
  return option_value{*value};
}

expected<option_value> parse_port(std::string_view text) {
  auto str = trim(text);
  constexpr std::string_view tcp_suffix = "/tcp";
  if (str.size() > tcp_suffix.size() && str.substr(str.size() - tcp_suffix.size()) == tcp_suffix)
    str.remove_suffix(tcp_suffix.size());
  auto value = all_digits(str) ? parse_u64(str) : std::nullopt;
  if (!value || *value > max_port)
    return invalid("a port number 0-65535, optionally followed by /tcp", text);
  return option_value{*value};
}

// "[::1]:9999" (and a list of such addresses, comma-separated) is no list literal.
bool starts_with_ipv6_address(std::string_view text) noexcept {
  auto close = text.find(']');
  if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
    return false;
  for (auto c : text.substr(1, close - 1))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
          || c == ':' || c == '.'))
      return false;
  return true;
}

expected<option_value> parse_list(std::string_view text) {
  auto str = trim(text);
  if (!str.empty() && str.front() == '[' && !starts_with_ipv6_address(str)) {
    if (auto items = parse_list_literal(str))
      return option_value{std::move(*items)};
    return invalid("a list such as [\"/a\", \"/b\"] or /a,/b", text);
  }
  std::vector<std::string> items;
  if (str.empty())
    return option_value{std::move(items)};
  // A comma-separated list: no element may be empty, so that a stray comma is not silently
  // swallowed.
  for (;;) {
    auto comma = str.find(',');
    auto item = trim(str.substr(0, comma));
    if (item.empty())
      return invalid("a list such as [\"/a\", \"/b\"] or /a,/b", text);
    items.emplace_back(item);
    if (comma == std::string_view::npos)
      break;
    str.remove_prefix(comma + 1);
  }
  return option_value{std::move(items)};
}

} // namespace

std::vector<option_info> make_options_table() {
  using bo = builtin_option;
  std::vector<option_info> table;
  table.reserve(static_cast<size_t>(bo::num_options));
  auto add = [&table](bo id, option_info info) {
    // The typed getters index the table by builtin_option: keep the two in step.
    assert(table.size() == static_cast<size_t>(id));
    static_cast<void>(id);
    table.emplace_back(std::move(info));
  };
  add(bo::peer_buffer_size,
      count_option("broker.peer-buffer-size", 2048, 1, max_queue_entries,
                   "messages queued per peer before the peer overflow policy applies"));
  add(bo::peer_overflow_policy,
      choice_option("broker.peer-overflow-policy", "disconnect", remote_policies(),
                    "what happens to a message for a peer whose queue is full"));
  add(bo::peer_write_delay,
      count_option("broker.peer-write-delay", 2000, 0, max_timeout_ms * 1000,
                   "microseconds a peering that streams without hearing back gathers its "
                   "writes (0: write at once); an exchange the peer answers is never held"));
  add(bo::web_socket_buffer_size,
      count_option("broker.web-socket-buffer-size", 512, 1, max_queue_entries,
                   "messages queued per WebSocket client before its overflow policy applies"));
  add(bo::web_socket_overflow_policy,
      choice_option("broker.web-socket-overflow-policy", "disconnect", remote_policies(),
                    "what happens to a message for a WebSocket client whose queue is full"));
  add(bo::subscriber_buffer_size,
      count_option("broker.subscriber-buffer-size", 1024, 1, max_queue_entries,
                   "messages queued per local subscriber or hub"));
  add(bo::subscriber_overflow_policy,
      choice_option("broker.subscriber-overflow-policy", "block", all_policies(),
                    "what happens to a message for a full subscriber; block parks its source"));
  add(bo::publisher_buffer_size,
      count_option("broker.publisher-buffer-size", 1024, 1, max_queue_entries,
                   "what a publisher's capacity() reports when make_publisher() is not given "
                   "one (publishing routes at once: nothing waits in a window)"));
  add(bo::disable_forwarding,
      bool_option("broker.disable-forwarding", false,
                  "do not relay messages received from one peer to other peers"));
  add(bo::ttl, count_option("broker.ttl", 16, 1, max_ttl,
                            "hops a message may travel before it is no longer forwarded"));
  add(bo::disable_ssl,
      bool_option("broker.disable-ssl", false,
                  "use plain TCP for peerings and ws:// for WebSocket instead of TLS (without broker.ssl.* settings: anonymous ECDH, as Broker)"));
  add(bo::port, port_option("broker.port", "BROKER_PORT", 'p',
                            "TCP port that accepts peerings; 0: do not listen"));
  add(bo::io_threads, count_option("broker.io-threads", 1, 1, max_threads,
                                   "threads running the sockets in Asio's io_context"));
  add(bo::topic_cache_size,
      count_option("broker.topic-cache-size", 1024, 0, max_queue_entries,
                   "result-cache entries of the topic index; 0 disables the cache"));
  add(bo::max_nesting_depth,
      count_option("broker.max-nesting-depth", 128, min_nesting_depth, max_nesting_depth,
                   "deepest container nesting accepted when decoding data"));
  add(bo::log_level, choice_option("broker.log-level", "info", log_levels(),
                                   "least severe level written to stderr; quiet: nothing"));
  add(bo::ssl_certificate,
      string_option("broker.ssl.certificate", "path of this node's PEM certificate"));
  add(bo::ssl_key, string_option("broker.ssl.key", "path of the certificate's private key"));
  add(bo::ssl_passphrase,
      secret_option("broker.ssl.passphrase", "passphrase that decrypts the private key"));
  add(bo::ssl_cafile,
      string_option("broker.ssl.cafile", "file of concatenated PEM certificates of trusted CAs"));
  add(bo::ssl_capath,
      string_option("broker.ssl.capath", "OpenSSL-style directory of trusted CA certificates"));
  add(bo::web_socket_address,
      local_address_option("broker.web-socket.address",
                           "address the WebSocket server binds to; 0.0.0.0 or :: (or empty): "
                           "all interfaces"));
  add(bo::web_socket_port, port_option("broker.web-socket.port", "BROKER_WEB_SOCKET_PORT", 0,
                                       "TCP port of the WebSocket server; 0: off"));
  add(bo::metrics_address,
      local_address_option("broker.metrics.address",
                           "address the metrics server (/metrics, /v1/status, the web view) "
                           "binds to; 0.0.0.0 or :: (or empty): all interfaces"));
  add(bo::metrics_port, port_option("broker.metrics.port", "BROKER_METRICS_PORT", 0,
                                    "TCP port of the Prometheus /metrics endpoint; 0: off"));
  add(bo::scheduler_max_threads,
      count_option("broker.scheduler.max-threads", 1, 1, max_threads,
                   "worker threads of the CAF scheduler, which runs the core and store actors"));
  add(bo::web_socket_max_clients,
      count_option("broker.web-socket.max-clients", 10000, 1, max_clients,
                   "concurrent WebSocket clients; more are refused with HTTP 503"));
  add(bo::web_socket_max_message_size,
      count_option("broker.web-socket.max-message-size", default_message_size, min_message_size,
                   max_message_size,
                   "largest (reassembled) WebSocket message in bytes; larger ones close 1009"));
  add(bo::web_socket_handshake_timeout,
      count_option("broker.web-socket.handshake-timeout", 10000, 1, max_timeout_ms,
                   "milliseconds a client has to upgrade and send its subscriptions"));
  add(bo::store_buffer_size,
      count_option("broker.store.buffer-size", 1024, 1, max_queue_entries,
                   "store commands queued per store before its sources wait (policy block)"));
  add(bo::store_heartbeat_interval,
      count_option("broker.store.heartbeat-interval", 1000, 10, max_timeout_ms,
                   "milliseconds between a store channel's heartbeats and acknowledgements"));
  add(bo::store_timeout_intervals,
      count_option("broker.store.timeout-intervals", 10, 1, 1000,
                   "heartbeat intervals of silence after which a master or clone counts as gone"));
  add(bo::store_request_timeout,
      count_option("broker.store.request-timeout", 10000, 1, max_timeout_ms,
                   "milliseconds a blocking store call waits before request_timeout"));
  add(bo::store_tick_interval,
      count_option("broker.store.tick-interval", 100, 1, max_timeout_ms,
                   "milliseconds between a store's timer checks (expiry resolution)"));
  add(bo::store_master_probe_timeout,
      count_option("broker.store.master-probe-timeout", 300, 0, max_timeout_ms,
                   "milliseconds attach_master waits for an existing master to object"));
  add(bo::log_file,
      string_option("broker.log-file",
                    "also log to this file; [PID] and [TIMESTAMP] are replaced; empty: no file"));
  add(bo::log_file_level,
      choice_option("broker.log-file-level", "info", log_levels(),
                    "least severe level written to broker.log-file"));
  // Budgets of one connection: exceeding the first three ends the connection with an error
  // naming the option (counted as a limit disconnect); the last one is flow control.
  add(bo::peer_max_subscriptions,
      count_option("broker.peer-max-subscriptions", 100000, 1, max_subscriptions,
                   "prefixes one peer may announce; more end the peering with an error"));
  add(bo::web_socket_max_subscriptions,
      count_option("broker.web-socket.max-subscriptions", 100000, 1, max_subscriptions,
                   "prefixes one WebSocket client may subscribe to; more close it with an "
                   "error frame"));
  add(bo::max_pending_control_bytes,
      count_option("broker.max-pending-control-bytes", 1024 * 1024, 1024, max_message_size,
                   "bytes of control frames (pongs, error frames) waiting for one connection "
                   "that does not read; more end it with an error"));
  assert(table.size() == static_cast<size_t>(bo::num_options));
  // Rows read by key, not by builtin_option (operations_options.hh, security_options.hh).
  append_operations_options(table);
  append_security_options(table);
  append_zeromq_options(table);
  return table;
}

error secret_value_error(const option_info& info) {
  return error{ec::invalid_config, "expected a " + std::string{to_string(info.type)}
                                     + ", got an invalid value (not shown: the option is "
                                       "secret)"};
}

expected<option_value> parse_option_value(const option_info& info, std::string_view text) {
  switch (info.type) {
    case option_type::boolean: {
      auto str = trim(text);
      if (str == "true")
        return option_value{true};
      if (str == "false")
        return option_value{false};
      return invalid("true or false", text);
    }
    case option_type::count:
      return parse_count(info, text);
    case option_type::port:
      return parse_port(text);
    case option_type::string:
      return option_value{std::string{text}};
    case option_type::string_list:
      return parse_list(text);
    case option_type::choice: {
      auto str = trim(text);
      for (const auto& name : info.choices)
        if (same_choice(str, name))
          return option_value{name};
      return invalid(choices_text(info), text);
    }
  }
  return error{ec::invalid_config, "option has an invalid type"};
}

error check_option_value(const option_info& info, const option_value& value) {
  auto wrong_type = [&info] {
    return error{ec::invalid_config,
                 "expected a value of type " + std::string{to_string(info.type)}};
  };
  switch (info.type) {
    case option_type::boolean:
      return std::holds_alternative<bool>(value) ? error{} : wrong_type();
    case option_type::count:
    case option_type::port: {
      auto x = std::get_if<uint64_t>(&value);
      if (!x)
        return wrong_type();
      auto min = info.type == option_type::port ? 0 : info.min;
      auto max = info.type == option_type::port ? max_port : info.max;
      if (*x < min || *x > max) {
        auto range = "an integer between " + std::to_string(min) + " and " + std::to_string(max);
        return error{ec::invalid_config, "expected " + range + ", got " + std::to_string(*x)};
      }
      return {};
    }
    case option_type::string:
      return std::holds_alternative<std::string>(value) ? error{} : wrong_type();
    case option_type::string_list:
      return std::holds_alternative<std::vector<std::string>>(value) ? error{} : wrong_type();
    case option_type::choice: {
      auto x = std::get_if<std::string>(&value);
      if (!x)
        return wrong_type();
      for (const auto& name : info.choices)
        if (*x == name)
          return {};
      return invalid(choices_text(info), *x);
    }
  }
  return wrong_type();
}

std::string quote_for_message(std::string_view text) {
  // Long enough for any real value, short enough to keep a hostile input from flooding logs.
  constexpr size_t max_shown = 80;
  std::string result = "\"";
  for (size_t i = 0; i < text.size() && i < max_shown; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      result += '\\';
      result += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      result += buf;
    } else {
      result += static_cast<char>(c);
    }
  }
  if (text.size() > max_shown)
    result += "...";
  result += '"';
  return result;
}

bool is_valid_key(std::string_view key) noexcept {
  if (key.empty() || key.front() == '.' || key.back() == '.')
    return false;
  char prev = 0;
  for (auto c : key) {
    auto word_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                     || c == '_' || c == '-';
    if (!word_char && !(c == '.' && prev != '.'))
      return false;
    prev = c;
  }
  return true;
}

} // namespace broker::internal
