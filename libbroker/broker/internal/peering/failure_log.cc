#include "broker/internal/peering/failure_log.hh"

namespace broker::internal {

namespace {

std::string seconds_text(failure_log::clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

} // namespace

std::optional<std::string> failure_log::failed(const std::string& reason,
                                               const std::string& next,
                                               clock::time_point now) {
  ++failures_;
  auto then = next.empty() ? std::string{} : "; " + next;
  if (failures_ == 1 || reason != reason_) {
    auto line = reason + then;
    if (failures_ == 1 && !next.empty())
      line += " (repeats are summarized every " + seconds_text(interval_) + ")";
    else if (failures_ > 1)
      line += " (attempt " + std::to_string(failures_) + ")";
    reason_ = reason;
    unlogged_ = 0;
    logged_at_ = now;
    return line;
  }
  ++unlogged_;
  if (now - logged_at_ < interval_)
    return std::nullopt;
  auto line = "still failing after " + std::to_string(failures_) + " attempts ("
              + std::to_string(unlogged_) + " since the last line): " + reason + then;
  unlogged_ = 0;
  logged_at_ = now;
  return line;
}

std::optional<std::string> failure_log::succeeded(const std::string& what) {
  if (failures_ == 0)
    return std::nullopt;
  auto line = what + " succeeded after " + std::to_string(failures_) + " failed attempt"
              + (failures_ == 1 ? "" : "s");
  failures_ = 0;
  unlogged_ = 0;
  reason_.clear();
  return line;
}

} // namespace broker::internal
