#pragma once

// GET /v1/status: the node's state as one JSON document (doc/operations.md shows it): the
// endpoint and its uptime, peerings (and outgoing peerings not up right now), WebSocket
// clients, local subscribers, hubs and stores, the subscriptions each peer announced,
// counters, and rates over the last seconds.
//
// Rates: rate_tracker keeps samples of the counters, at most one per second and only when
// someone asks (the web view polls once a second), for the last rate_window; a rate is the
// difference to the oldest sample that has the counter, over the time between them. So a
// node nobody watches does no work for rates at all.
//
// Threads: rate_tracker is shared by the requests of one server (a mutex); the rendering is
// a pure function of the snapshot, run on the request's I/O thread.

#include "broker/internal/ops/snapshot.hh"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>

namespace broker::internal {

/// Rates are computed over (at most) this long.
inline constexpr std::chrono::seconds rate_window{10};

/// Samples are at least this far apart.
inline constexpr std::chrono::milliseconds rate_sample_interval{1000};

/// Counters per second.
struct rate_set {
  double window = 0; ///< Seconds between the samples compared; 0: no rate yet.
  double processed = 0;
  double delivered = 0;
  double dropped = 0;
  double unrouted = 0;
  double duplicates = 0;
  /// Per handler id: messages into its queue, taken from its source, dropped.
  struct handler_rates {
    double out = 0;
    double in = 0;
    double dropped = 0;
  };
  std::unordered_map<uint64_t, handler_rates> handlers;
};

/// See the file comment.
class rate_tracker {
public:
  /// Records `snap` (if the last sample is old enough) and returns the current rates.
  rate_set update(const node_snapshot& snap);

private:
  struct counters {
    uint64_t out = 0;
    uint64_t in = 0;
    uint64_t dropped = 0;
  };
  struct sample {
    std::chrono::steady_clock::time_point time;
    uint64_t processed = 0;
    uint64_t delivered = 0;
    uint64_t dropped = 0;
    uint64_t unrouted = 0;
    uint64_t duplicates = 0;
    std::unordered_map<uint64_t, counters> handlers;
  };

  static sample make_sample(const node_snapshot& snap);

  std::mutex mtx_;
  std::deque<sample> samples_;
};

/// What a request asks for.
struct status_query {
  /// Entries listed per list (peers, clients, subscribers, ...); the fullest queues first
  /// when there are more. The rest are only counted.
  size_t limit = std::numeric_limits<size_t>::max();
};

/// Parses the query string of /v1/status (`limit=N`); nullopt-like error text on failure.
std::string parse_status_query(std::string_view query, status_query& out);

/// The JSON document of GET /v1/status.
std::string render_status(const node_snapshot& snap, const rate_set& rates,
                          const status_query& query);

} // namespace broker::internal
