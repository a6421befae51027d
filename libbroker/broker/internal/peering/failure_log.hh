#pragma once

// failure_log: decides which failures of a repeated attempt are worth a log line
// (doc/peering.md, "When a peering fails"). A dial re-tried every second, or a peer that
// keeps dialing us with the wrong TLS setting, would otherwise write the same line every
// second, forever.
//
//   - the first failure is logged, with what happens next;
//   - a failure with another reason than the last one is logged;
//   - repeats are counted and summarized once per summary interval:
//     "still failing after 61 attempts: <reason>";
//   - a success after failures is logged with their number.
//
// Pure bookkeeping: no clock, no logger, no locking (the owner passes the time and guards
// it). One instance per outgoing peering (peer_manager_impl.hh) or per remote address.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace broker::internal {

class failure_log {
public:
  using clock = std::chrono::steady_clock;

  /// How often repeats of the same failure are summarized.
  static constexpr auto default_summary_interval = std::chrono::seconds{60};

  explicit failure_log(clock::duration summary_interval = default_summary_interval)
    : interval_(summary_interval) {}

  /// One more failure with `reason` (a complete sentence, e.g. "peering with h:1 failed:
  /// connection refused"); `next` says what happens now ("retrying every 1 s"), empty if
  /// nothing. Returns the line to log, or nothing.
  std::optional<std::string> failed(const std::string& reason, const std::string& next,
                                    clock::time_point now);

  /// A success: the line to log if failures preceded it (`what` names the attempt, e.g.
  /// "peering with h:1"), or nothing. Starts over.
  std::optional<std::string> succeeded(const std::string& what);

  /// Failures since the last success.
  uint64_t failures() const noexcept { return failures_; }

  /// When the last line was logged (for pruning tables of these).
  clock::time_point last_logged() const noexcept { return logged_at_; }

private:
  clock::duration interval_;
  uint64_t failures_ = 0;
  uint64_t unlogged_ = 0; // Failures since the last line.
  std::string reason_;
  clock::time_point logged_at_;
};

} // namespace broker::internal
