#pragma once

// The Prometheus text exposition (format 0.0.4) of GET /metrics.
//
// Two groups of families (doc/metrics.md lists every one; a unit test keeps that page and
// metric_families() in step):
//   - Broker's own names, labels and meanings, so that dashboards written for Zeek Broker
//     work unchanged: broker_connections{type="native"|"web-socket"},
//     broker_processed_messages_total{type=...}, broker_buffered_messages{type=...},
//     broker_store_*{name=...}.
//   - Ours, under names Broker does not use: handlers, queues, drops by policy,
//     disconnects, suspensions, unrouted and duplicate messages, per-peer and per-client
//     queues and counters, broker_build_info.
// Every sample carries endpoint="<broker.metrics.endpoint-name>" when that option is set.
// Per-peer and per-client families give at most `handler_series_limit` peers (clients)
// their own label set, the oldest first; the rest are summed under peer="other"
// (client="other"), so a node with 10 000 clients does not swamp its Prometheus server.
//
// Threads: a pure function of a node_snapshot; runs on the I/O thread of the request.

#include "broker/internal/ops/snapshot.hh"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal {

/// How the metrics are rendered (operations_options.hh).
struct prometheus_options {
  std::string endpoint_name;
  size_t handler_series_limit = 100;
};

/// One metric family, as doc/metrics.md lists it.
struct metric_family {
  std::string_view name;
  std::string_view type;   ///< "gauge" or "counter".
  std::string_view labels; ///< Label names and values, e.g. `type: native, web-socket`.
  bool broker = false;     ///< True for Broker's own families.
  std::string_view help;
};

/// Every family /metrics serves, in the order it serves them.
const std::vector<metric_family>& metric_families();

/// The text of GET /metrics for `snap`.
std::string render_prometheus(const node_snapshot& snap, const prometheus_options& opts);

/// The reference table of doc/metrics.md, rendered from metric_families().
std::string metric_families_markdown();

} // namespace broker::internal
