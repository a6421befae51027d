#include "options.hh"

#include <limits>
#include <utility>

namespace broker_throughput {

using broker::ec;
using broker::error;
using broker_tools::count_row;
using broker_tools::flag_row;
using broker_tools::in_quotes;

/// `key: what` (ec::invalid_config).
constexpr auto invalid = broker_tools::option_error;

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

} // namespace

error add_throughput_options(broker::configuration& cfg) {
  std::vector<broker::option_info> rows;
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
  return broker_tools::add_rows(cfg, std::move(rows));
}

namespace {

/// What --latency needs from the other options.
broker::expected<throughput_options> check_latency(const throughput_options& result) {
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

} // namespace

broker::expected<throughput_options>
read_throughput_options(const broker::configuration& cfg, const std::vector<std::string>& rest,
                        bool need_address) {
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
  if (rest.empty() && !need_address)
    return check_latency(result); // --check-config, --dump-config: the address may wait.
  if (rest.empty())
    return error{ec::invalid_config, std::string{"missing argument "} + what};
  if (rest.size() > 1)
    return error{ec::invalid_config, "unexpected argument " + in_quotes(rest[1])};
  // A server binds (":9999" is every interface, port 0 a free one); a client dials.
  broker_tools::address_rules rules;
  rules.default_port = default_port;
  rules.allow_empty_host = result.mode == role::server;
  rules.allow_port_zero = result.mode == role::server;
  auto address = broker_tools::parse_address(rest.front(), rules);
  if (!address)
    return error{ec::invalid_config, "address: " + address.error_value().message()};
  result.host = std::move(address->host);
  result.port = address->port;
  // A client, and a server that reads from a node's WebSocket API, dial out.
  if (result.mode == role::client || result.via == transport::web_socket) {
    if (result.host.empty())
      return error{ec::invalid_config, std::string{what} + ": missing host in "
                                         + in_quotes(rest.front())};
    if (result.port == 0)
      return error{ec::invalid_config, std::string{what} + ": cannot connect to port 0"};
  }
  return check_latency(result);
}

} // namespace broker_throughput
