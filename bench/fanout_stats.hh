#pragma once

// fanout_stats: what every fan-out program shares (bench/README.md, "Fan-out"): the 64-byte
// payload that carries its send time, a latency histogram, and the RESULT line.
//
// The payload is plain ASCII, so it travels unchanged as a broker string, inside a JSON
// frame, as a Redis bulk string and as a NATS message body:
//
//   offset  0: send time, CLOCK_MONOTONIC nanoseconds, 20 decimal digits
//   offset 21: sequence number, 12 decimal digits (1, 2, ... per run; 0 for probes)
//   offset 34: kind: P probe, L latency phase, T throughput phase, E end of the run
//   offset 35: '!' if the receiver must acknowledge it (peered receivers only), else '-'
//   then 'x' up to 64 bytes; single spaces between the fields.
//
// CLOCK_MONOTONIC is one clock for every process of a host, so a receiver in another
// process subtracts the sender's stamp from its own clock directly.
//
// No broker header here: the Redis and NATS clients include this file too.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fanout {

/// Bytes of every published payload, for every system.
constexpr size_t payload_size = 64;

/// CLOCK_MONOTONIC in nanoseconds: comparable across the processes of one host.
inline uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

/// The phase a message belongs to (payload offset 34).
enum class kind : char { probe = 'P', latency = 'L', throughput = 'T', end = 'E' };

/// What a payload carries.
struct stamp {
  uint64_t sent_ns = 0;
  uint64_t seq = 0;
  kind what = kind::probe;
  bool ack = false;
};

/// Writes the payload of `s` into `out` (payload_size bytes, no terminator).
inline void format_payload(char* out, const stamp& s) {
  auto digits = [](char* at, size_t len, uint64_t x) {
    for (size_t i = len; i > 0; --i, x /= 10)
      at[i - 1] = static_cast<char>('0' + x % 10);
  };
  digits(out, 20, s.sent_ns);
  out[20] = ' ';
  digits(out + 21, 12, s.seq);
  out[33] = ' ';
  out[34] = static_cast<char>(s.what);
  out[35] = s.ack ? '!' : '-';
  std::memset(out + 36, 'x', payload_size - 36);
}

inline std::string make_payload(const stamp& s) {
  std::string result(payload_size, 'x');
  format_payload(result.data(), s);
  return result;
}

/// Reads a payload written by format_payload(); false if `p` is not one.
inline bool parse_payload(std::string_view p, stamp& s) {
  if (p.size() < 36 || p[20] != ' ' || p[33] != ' ')
    return false;
  auto digits = [&](size_t from, size_t len, uint64_t& out) {
    uint64_t x = 0;
    for (size_t i = from; i < from + len; ++i) {
      auto c = p[i];
      if (c < '0' || c > '9')
        return false;
      x = x * 10 + static_cast<uint64_t>(c - '0');
    }
    out = x;
    return true;
  };
  if (!digits(0, 20, s.sent_ns) || !digits(21, 12, s.seq))
    return false;
  s.what = static_cast<kind>(p[34]);
  s.ack = p[35] == '!';
  return true;
}

/// Latency histogram in nanoseconds: exact below 128 ns, then 64 buckets per power of two
/// (at most 1.6 % error), up to 2^64. Recording is an index computation and an increment.
class histogram {
public:
  static constexpr size_t buckets = 59 * 64; // index_of(2^64 - 1) is 3775

  histogram() : counts_(buckets, 0) {}

  void record(uint64_t ns) {
    ++counts_[index_of(ns)];
    ++total_;
    max_ = std::max(max_, ns);
  }

  void merge(const histogram& other) {
    for (size_t i = 0; i < buckets; ++i)
      counts_[i] += other.counts_[i];
    total_ += other.total_;
    max_ = std::max(max_, other.max_);
  }

  uint64_t count() const noexcept { return total_; }

  uint64_t max() const noexcept { return max_; }

  /// The value at quantile `q` (0..1, nearest rank), as the middle of its bucket; 0 if empty.
  uint64_t percentile(double q) const {
    if (total_ == 0)
      return 0;
    auto rank = static_cast<uint64_t>(q * static_cast<double>(total_) + 0.5);
    rank = std::clamp<uint64_t>(rank, 1, total_);
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets; ++i) {
      seen += counts_[i];
      if (seen >= rank)
        return std::min(max_, (lower_bound(i) + upper_bound(i)) / 2);
    }
    return max_;
  }

  /// Non-empty buckets as (index, count) pairs, to ship a histogram between processes.
  std::vector<std::pair<uint64_t, uint64_t>> sparse() const {
    std::vector<std::pair<uint64_t, uint64_t>> result;
    for (size_t i = 0; i < buckets; ++i)
      if (counts_[i] != 0)
        result.emplace_back(i, counts_[i]);
    return result;
  }

  /// Adds what sparse() returned on the other side; `max` is the sender's max().
  void add_sparse(const std::vector<std::pair<uint64_t, uint64_t>>& xs, uint64_t max) {
    for (auto [i, n] : xs) {
      if (i < buckets) {
        counts_[i] += n;
        total_ += n;
      }
    }
    max_ = std::max(max_, max);
  }

private:
  static size_t index_of(uint64_t v) {
    if (v < 128)
      return static_cast<size_t>(v);
    auto e = 63 - __builtin_clzll(v); // 7..63
    auto top = v >> (e - 6);          // 64..127
    return static_cast<size_t>((e - 6) * 64 + top);
  }

  static uint64_t lower_bound(size_t i) {
    if (i < 128)
      return i;
    auto e = i / 64 + 5;
    auto top = i % 64 + 64;
    return static_cast<uint64_t>(top) << (e - 6);
  }

  static uint64_t upper_bound(size_t i) {
    if (i < 128)
      return i;
    auto e = i / 64 + 5;
    auto top = i % 64 + 64;
    return ((static_cast<uint64_t>(top) + 1) << (e - 6)) - 1;
  }

  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t max_ = 0;
};

/// What one run measured; print() writes the RESULT line the scripts parse.
struct run_result {
  std::string system;    ///< broker, redis, nats
  std::string mode;      ///< local, peer, ws, channel, pattern, wildcard, ...
  size_t receivers = 0;
  uint64_t sent = 0;      ///< Throughput-phase messages published.
  uint64_t delivered = 0; ///< Throughput-phase messages received, summed over receivers.
  uint64_t lost = 0;      ///< Sequence gaps seen by receivers (must be 0).
  double seconds = 0;     ///< First throughput publish to the last delivery.
  double latency_rate = 0; ///< Messages/s of the latency phase.
  size_t window = 0;      ///< Messages in flight per receiver (flow control), 0 if n/a.
  histogram latency;      ///< Latency phase, every delivery.
  histogram loaded;       ///< Throughput phase, every delivery.
  double cpu_seconds = 0; ///< This process, whole run (-1: not measured).
  double peak_rss_mb = 0; ///< This process's VmHWM (0: not measured here).
  bool complete = false;

  void print() const {
    auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
    std::printf("RESULT system=%s mode=%s N=%zu sent=%llu delivered=%llu lost=%llu "
                "seconds=%.3f rate=%.0f window=%zu lat_rate=%.0f lat_samples=%llu "
                "p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f load_p50_us=%.1f "
                "load_p99_us=%.1f cpu_s=%.3f peak_rss_mb=%.1f complete=%d\n",
                system.c_str(), mode.c_str(), receivers, static_cast<unsigned long long>(sent),
                static_cast<unsigned long long>(delivered), static_cast<unsigned long long>(lost),
                seconds, seconds > 0 ? static_cast<double>(delivered) / seconds : 0.0, window,
                latency_rate, static_cast<unsigned long long>(latency.count()),
                us(latency.percentile(0.5)), us(latency.percentile(0.99)),
                us(latency.percentile(0.999)), us(latency.max()), us(loaded.percentile(0.5)),
                us(loaded.percentile(0.99)), cpu_seconds, peak_rss_mb, complete ? 1 : 0);
    std::fflush(stdout);
  }
};

/// Messages/s of the latency phase for `n` receivers: 1 000/s, but at most 20 000
/// deliveries/s (2/s at N = 10 000), a load every system here sustains at every N, so that
/// the phase measures delay rather than saturation.
inline double default_latency_rate(size_t n) {
  return std::clamp(20000.0 / static_cast<double>(std::max<size_t>(n, 1)), 1.0, 1000.0);
}

/// Messages in flight per receiver in the throughput phase: 256, but at most about
/// 256 000 in flight over all receivers (server buffers), and at least 16.
inline size_t default_window(size_t n) {
  return std::clamp<size_t>(256000 / std::max<size_t>(n, 1), 16, 256);
}

} // namespace fanout
