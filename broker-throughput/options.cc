#include "options.hh"

#include <limits>
#include <utility>

namespace broker_throughput {

using broker::ec;
using broker::error;
using broker::option_info;
using broker::option_type;

namespace {

// -- defaults and limits ----------------------------------------------------------------

constexpr uint64_t default_event_type = 1;
constexpr uint64_t min_event_type = 0;
constexpr uint64_t max_event_type = 3;

/// 0 means "as fast as possible" (Broker's default is 1 batch/s, a trickle; see README).
constexpr uint64_t default_batch_rate = 0;

/// Beyond a million batches per second the pacing clock is coarser than the interval.
constexpr uint64_t max_batch_rate = 1'000'000;

constexpr uint64_t default_batch_size = 1;

/// A batch is built in memory before it is published; type-3 events are ~10 KiB each.
constexpr uint64_t max_batch_size = 100'000;

/// A week: long enough for any soak run, short enough to catch a typo.
constexpr uint64_t max_duration_seconds = 7 * 24 * 3600;

constexpr uint64_t default_connect_timeout_seconds = 10;
constexpr uint64_t max_connect_timeout_seconds = 3600;

// -- row builders -----------------------------------------------------------------------

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

option_info flag_row(std::string key, std::string help, char short_flag = 0) {
  return row(std::move(key), option_type::boolean, "false", std::move(help), short_flag);
}

error invalid(std::string_view key, std::string what) {
  return error{ec::invalid_config, std::string{key} + ": " + std::move(what)};
}

std::string quoted(std::string_view text) {
  return "\"" + std::string{text} + "\"";
}

/// Parses a decimal port 0-65535, digits only.
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
  if (value > max_port)
    return false;
  result = static_cast<uint16_t>(value);
  return true;
}

} // namespace

error add_throughput_options(broker::configuration& cfg) {
  std::vector<option_info> rows;
  rows.push_back(flag_row("server", "receive and count events on <addr>:<port> instead of "
                                    "publishing to <host>[:<port>]"));
  rows.push_back(count_row("event-type", default_event_type, min_event_type, max_event_type,
                           "0: 64-byte string; 1: Zeek event(42, \"test\"); "
                           "2: conn.log-like log write; 3: timestamp + table of 100 sets",
                           't'));
  rows.push_back(count_row("batch-rate", default_batch_rate, 0, max_batch_rate,
                           "batches per second; 0: as fast as possible", 'r'));
  rows.push_back(count_row("batch-size", default_batch_size, 1, max_batch_size,
                           "events per batch", 's'));
  rows.push_back(count_row("count", 0, 0, std::numeric_limits<int64_t>::max(),
                           "events to send (server: to receive), then stop; 0: no limit",
                           'n'));
  rows.push_back(count_row("duration", 0, 0, max_duration_seconds,
                           "seconds to run, then stop; 0: until --count or SIGINT/SIGTERM"));
  rows.push_back(count_row("connect-timeout", default_connect_timeout_seconds, 1,
                           max_connect_timeout_seconds,
                           "seconds to keep dialing the node before giving up"));
  rows.push_back(flag_row("web-socket", "talk to a node's WebSocket JSON API "
                                        "(ws://host:port/v1/messages/json) instead of peering"));
  rows.push_back(flag_row("latency", "stamp each event with its send time; the server echoes "
                                     "it on /benchmark/echo; print p50/p99/p99.9 at the end"));
  rows.push_back(flag_row("json", "print one JSON object per line (reports and summary)"));
  rows.push_back(flag_row("verbose", "print status and error events on stderr", 'v'));
  for (auto& info : rows)
    if (auto err = cfg.add_option(std::move(info)))
      return err;
  return {};
}

error parse_address(std::string_view text, std::string& host, uint16_t& port) {
  auto fail = [text] {
    return error{ec::invalid_config,
                 "expected <host>[:<port>] or [<ipv6>]:<port>, got " + quoted(text)};
  };
  std::string_view host_part = text;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos)
      return fail();
    host_part = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return fail();
      port_text = rest.substr(1);
      if (port_text.empty())
        return fail();
    }
  } else if (auto colon = text.find(':'); colon != std::string_view::npos) {
    if (text.find(':', colon + 1) != std::string_view::npos)
      return fail(); // An IPv6 address needs brackets.
    host_part = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (port_text.empty())
      return fail();
  }
  uint16_t result = default_port;
  if (!port_text.empty() && !parse_port(port_text, result))
    return fail();
  host = std::string{host_part};
  port = result;
  return {};
}

broker::expected<throughput_options>
read_throughput_options(const broker::configuration& cfg, const std::vector<std::string>& rest) {
  throughput_options result;
  result.mode = cfg.get_bool("server").value_or(false) ? role::server : role::client;
  result.via = cfg.get_bool("web-socket").value_or(false) ? transport::web_socket
                                                          : transport::peering;
  result.event_type = cfg.get_count("event-type").value_or(default_event_type);
  result.batch_rate = cfg.get_count("batch-rate").value_or(default_batch_rate);
  result.batch_size = cfg.get_count("batch-size").value_or(default_batch_size);
  result.count = cfg.get_count("count").value_or(0);
  result.duration = std::chrono::seconds{cfg.get_count("duration").value_or(0)};
  result.connect_timeout = std::chrono::seconds{
    cfg.get_count("connect-timeout").value_or(default_connect_timeout_seconds)};
  result.latency = cfg.get_bool("latency").value_or(false);
  result.json = cfg.get_bool("json").value_or(false);
  result.verbose = cfg.get_bool("verbose").value_or(false);
  const char* what = result.mode == role::server ? "<addr>:<port>" : "<host>[:<port>]";
  if (rest.empty())
    return error{ec::invalid_config, std::string{"missing argument "} + what};
  if (rest.size() > 1)
    return error{ec::invalid_config, "unexpected argument " + quoted(rest[1])};
  if (auto err = parse_address(rest.front(), result.host, result.port))
    return error{ec::invalid_config, "address: " + err.message()};
  // A client, and a server that reads from a node's WebSocket API, dial out.
  if (result.mode == role::client || result.via == transport::web_socket) {
    if (result.host.empty())
      return error{ec::invalid_config, std::string{what} + ": missing host in "
                                         + quoted(rest.front())};
    if (result.port == 0)
      return error{ec::invalid_config, std::string{what} + ": cannot connect to port 0"};
  }
  if (result.latency) {
    if (result.via == transport::web_socket)
      return invalid("latency", "not available with --web-socket (JSON timestamps have "
                                "millisecond resolution)");
    if (result.mode == role::client && result.batch_rate == 0)
      return invalid("batch-rate", "--latency needs a fixed rate, e.g. -r 1000");
    if (result.mode == role::client && result.batch_size != 1)
      return invalid("batch-size", "--latency sends one event per batch, got "
                                     + std::to_string(result.batch_size));
  }
  return result;
}

} // namespace broker_throughput
