#pragma once

// audit: what access control refused, per identity and per rule, and a rate-limited log
// of failed authentications (doc/security.md, "Audit").
//
// Ownership: one audit_log per endpoint, shared (shared_ptr) by every rule set built for
// it, so counters survive a reload: a rule keeps its counters as long as its identity,
// action, effect and prefix stay the same, wherever it moves in the file. Slots are never
// freed; a rule removed by a reload keeps its last counts (Prometheus counters must not
// go backwards).
//
// Threads: slot() and rows() lock a mutex (rule-set builds and scrapes); the counters are
// atomics that any thread increments without a lock. auth_failure_log locks its own mutex
// per call (failures are rare, and when they are not, they are the thing to slow down).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace broker::internal::security {

/// The counters of one identity (totals) or one rule.
struct audit_counters {
  std::atomic<uint64_t> refused_publishes{0};
  std::atomic<uint64_t> refused_subscriptions{0};
  /// Deliveries dropped under a granted but filtered subscription (check_receive).
  std::atomic<uint64_t> refused_deliveries{0};
  std::atomic<uint64_t> authentication_failures{0};
  /// Attempts refused unchecked: their address failed too often lately (throttle.hh).
  std::atomic<uint64_t> authentication_throttled{0};
};

/// A plain copy of one slot, for metrics and the status page.
struct audit_row {
  /// The identity; empty for authentication failures nobody could be named for.
  std::string identity;
  /// The rule (`deny publish "/zeek/control/"`, `default subscribe`); empty for the
  /// identity's totals; the mechanism (`token`, `certificate`, `curve-key`) for
  /// authentication failures without an identity.
  std::string rule;
  uint64_t refused_publishes = 0;
  uint64_t refused_subscriptions = 0;
  uint64_t refused_deliveries = 0;
  uint64_t authentication_failures = 0;
  uint64_t authentication_throttled = 0;
};

/// See the file comment.
class audit_log {
public:
  /// The counters of (`identity`, `rule`); created on first use, stable forever.
  audit_counters& slot(const std::string& identity, const std::string& rule);

  /// Every slot, sorted by identity and rule.
  std::vector<audit_row> rows() const;

private:
  mutable std::mutex mtx_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<audit_counters>> slots_;
};

/// Logs failed authentications with the remote address: at most `burst` lines per
/// `period`; the first line after a quiet spell says how many were left out.
class auth_failure_log {
public:
  using clock = std::chrono::steady_clock;

  /// Receives one finished line (the caller logs it as a warning).
  using sink_fn = std::function<void(std::string_view line)>;

  static constexpr size_t default_burst = 10;
  static constexpr std::chrono::seconds default_period{60};

  explicit auth_failure_log(sink_fn sink, size_t burst = default_burst,
                            clock::duration period = default_period);

  /// One failure: `mechanism` (token, certificate, ...), the remote `address`
  /// ("10.0.0.7:51234") and what was wrong (`reason`). Control characters in the
  /// arguments are escaped. Returns true if a line was written.
  bool failed(std::string_view mechanism, std::string_view address, std::string_view reason,
              clock::time_point now = clock::now());

  /// Failures not logged so far.
  uint64_t suppressed() const;

private:
  mutable std::mutex mtx_;
  sink_fn sink_;
  size_t burst_;
  clock::duration period_;
  clock::time_point window_start_{};
  size_t in_window_ = 0;
  uint64_t suppressed_ = 0;       ///< Since the last line.
  uint64_t suppressed_total_ = 0; ///< Ever.
  bool started_ = false;
};

/// `text` with backslashes and control characters escaped, at most 200 bytes of it: for
/// strings from the network (addresses, topics) in log lines.
std::string printable(std::string_view text);

} // namespace broker::internal::security
