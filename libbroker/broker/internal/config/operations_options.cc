#include "broker/internal/config/operations_options.hh"

namespace broker::internal {

namespace {

/// Per-handler label sets beyond this many would make a Prometheus server suffer more
/// than it helps anyone: a scrape of 100 000 series per node is already too much.
constexpr uint64_t max_handler_series = 100'000;

/// An hour: a longer interval would not notice a dead client in any useful time.
constexpr uint64_t max_ping_interval_ms = 3'600'000;

option_info row(std::string key, option_type type, std::string def, std::string help) {
  option_info info;
  info.key = std::move(key);
  info.type = type;
  info.default_value = std::move(def);
  info.help = std::move(help);
  return info;
}

} // namespace

void append_operations_options(std::vector<option_info>& table) {
  auto name = row("broker.metrics.endpoint-name", option_type::string, "",
                  "value of the endpoint label on every metric; empty: no endpoint label");
  name.env = "BROKER_METRICS_ENDPOINT_NAME";
  table.push_back(std::move(name));
  auto limit = row("broker.metrics.handler-series-limit", option_type::count,
                   std::to_string(default_handler_series_limit),
                   "peers, and WebSocket clients, with their own label set in the per-peer "
                   "and per-client metrics; the rest are summed under \"other\"");
  limit.min = 0;
  limit.max = max_handler_series;
  table.push_back(std::move(limit));
  table.push_back(row("broker.metrics.status-page", option_type::boolean, "true",
                      "serve GET /v1/status (JSON) and the live web view at / beside /metrics"));
  auto format = row("broker.log-format", option_type::choice, "text",
                    "format of log lines on stderr: text, or one JSON object per line");
  format.choices = {"text", "json"};
  table.push_back(std::move(format));
  auto ping = row("broker.web-socket.ping-interval", option_type::count,
                  std::to_string(default_ping_interval_ms),
                  "milliseconds a WebSocket client may stay silent before it gets a ping; "
                  "one that stays silent as long again is closed (1001); 0: no pings");
  ping.min = 0;
  ping.max = max_ping_interval_ms;
  table.push_back(std::move(ping));
}

operations_settings read_operations_settings(const configuration& cfg) {
  operations_settings result;
  // The table validated every value, so the fallbacks below are never taken.
  if (auto x = parse_log_level(cfg.log_level()))
    result.level = *x;
  if (auto x = parse_log_format(cfg.get_string("broker.log-format").value_or("text")))
    result.format = *x;
  result.endpoint_name = cfg.get_string("broker.metrics.endpoint-name").value_or("");
  result.handler_series_limit = cfg.get_count("broker.metrics.handler-series-limit")
                                  .value_or(default_handler_series_limit);
  result.status_page = cfg.get_bool("broker.metrics.status-page").value_or(true);
  result.ping_interval_ms = cfg.get_count("broker.web-socket.ping-interval")
                              .value_or(default_ping_interval_ms);
  return result;
}

} // namespace broker::internal
