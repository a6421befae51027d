#pragma once

// The options of issue "operating a node": metrics naming and cardinality, the status API and
// the web view, and the log format. They are rows of the one options table (appended by
// make_options_table() after the core rows) and read here into one typed value, so that the
// rest of the library never looks them up by key.
//
// Keys: broker.metrics.endpoint-name (env BROKER_METRICS_ENDPOINT_NAME),
// broker.metrics.handler-series-limit, broker.metrics.status-page, broker.log-format,
// broker.web-socket.ping-interval.
// broker.log-level (env BROKER_CONSOLE_VERBOSITY) is a core row; its value is read here too.

#include "broker/configuration.hh"
#include "broker/internal/config/logger.hh"

#include <cstddef>
#include <string>
#include <vector>

namespace broker::internal {

/// Default of broker.metrics.handler-series-limit.
inline constexpr size_t default_handler_series_limit = 100;

/// Default of broker.web-socket.ping-interval: Zeek's server pings every 5 seconds.
inline constexpr size_t default_ping_interval_ms = 5000;

/// The typed values of the rows below.
struct operations_settings {
  /// broker.log-level.
  log_level level = log_level::info;
  /// broker.log-format.
  log_format format = log_format::text;
  /// broker.metrics.endpoint-name: the `endpoint` label of every metric; empty: no label.
  std::string endpoint_name;
  /// broker.metrics.handler-series-limit: peers (and, separately, WebSocket clients) that
  /// get their own label set in the per-peer / per-client families.
  size_t handler_series_limit = default_handler_series_limit;
  /// broker.metrics.status-page: serve GET /v1/status and the web view at /.
  bool status_page = true;
  /// broker.web-socket.ping-interval: milliseconds of silence after which a WebSocket
  /// client gets a ping (and as long again to answer); 0: no pings.
  size_t ping_interval_ms = default_ping_interval_ms;
};

/// Appends the rows of this file to the options table.
void append_operations_options(std::vector<option_info>& table);

/// Reads the rows from a (validated) configuration.
operations_settings read_operations_settings(const configuration& cfg);

} // namespace broker::internal
