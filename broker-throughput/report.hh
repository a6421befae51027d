#pragma once

// What broker-throughput prints, in text or (--json) one JSON object per line.
//
// stdout carries only reports, so scripts can read it line by line (each line is flushed):
//   listening on <port>                     {"type":"listening","port":N}
//   connected to <url>                      {"type":"connected","url":"<url>"}
//   rate: N events/s                        {"type":"rate","role":R,"time":T,"events":N,"rate":X}
//   summary: events=N duration=Ts rate=X events/s cpu=Cs [dropped=D]
//                                           {"type":"summary",...}
// `cpu` is the process's user + system CPU time since it started (all threads): on a shared
// machine, CPU per event varies much less than events per second.
//   latency: p50=Aus p99=Bus p99.9=Cus max=Dus samples=N (<method>)
//                                           (inside the JSON summary as "latency":{...})
// Diagnostics (errors, --verbose status events) go to stderr.
//
// Threads: main thread only.

#include "options.hh"

#include <broker/time.hh>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace broker_throughput {

/// Writes `line` and a newline to stdout and flushes.
void print_line(std::string_view line);

/// Writes `broker-throughput: <line>` to stderr.
void print_diagnostic(std::string_view line);

/// Percentiles of latency samples (nearest rank).
struct latency_summary {
  std::string method; ///< "one-way" (server) or "round-trip/2" (client).
  uint64_t samples = 0;
  double p50_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
};

/// Collects latency samples.
class latency_recorder {
public:
  /// Negative samples (clock steps) count as 0.
  void add(broker::timespan sample);

  uint64_t size() const noexcept { return samples_.size(); }

  /// Sorts the samples and summarizes them; all zero if there are none.
  latency_summary summarize(std::string method);

private:
  std::vector<int64_t> samples_; ///< Nanoseconds.
};

/// The final numbers of a run.
struct run_summary {
  uint64_t events = 0;
  double seconds = 0; ///< First event to last (README.md says which events per role).
  /// Client over peering: messages the peer's send queue dropped (should stay 0).
  std::optional<uint64_t> dropped;
  std::optional<latency_summary> latency;
};

/// Formats reports for one run.
class reporter {
public:
  reporter(const throughput_options& opts);

  void listening(uint16_t port) const;

  /// A --web-socket server is connected to the node at `url` and receiving.
  void connected(const std::string& url) const;

  /// `events` during the last `interval_s` seconds, at `time_s` since the first event.
  void rate(uint64_t events, double interval_s, double time_s) const;

  void summary(const run_summary& result) const;

private:
  const throughput_options& opts_;
};

} // namespace broker_throughput
