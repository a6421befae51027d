#include "broker/internal/security/audit.hh"

#include <cstdio>

namespace broker::internal::security {

audit_counters& audit_log::slot(const std::string& identity, const std::string& rule) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& ptr = slots_[{identity, rule}];
  if (!ptr)
    ptr = std::make_unique<audit_counters>();
  return *ptr;
}

std::vector<audit_row> audit_log::rows() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<audit_row> result;
  result.reserve(slots_.size());
  for (const auto& [key, counters] : slots_) {
    audit_row row;
    row.identity = key.first;
    row.rule = key.second;
    row.refused_publishes = counters->refused_publishes.load(std::memory_order_relaxed);
    row.refused_subscriptions = counters->refused_subscriptions.load(std::memory_order_relaxed);
    row.refused_deliveries = counters->refused_deliveries.load(std::memory_order_relaxed);
    row.authentication_failures =
      counters->authentication_failures.load(std::memory_order_relaxed);
    row.authentication_throttled =
      counters->authentication_throttled.load(std::memory_order_relaxed);
    result.push_back(std::move(row));
  }
  return result;
}

auth_failure_log::auth_failure_log(sink_fn sink, size_t burst, clock::duration period)
  : sink_(std::move(sink)), burst_(burst == 0 ? 1 : burst), period_(period) {
}

bool auth_failure_log::failed(std::string_view mechanism, std::string_view address,
                              std::string_view reason, clock::time_point now) {
  std::string line;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!started_ || now - window_start_ >= period_) {
      started_ = true;
      window_start_ = now;
      in_window_ = 0;
    }
    if (in_window_ >= burst_) {
      ++suppressed_;
      ++suppressed_total_;
      return false;
    }
    ++in_window_;
    line = "authentication failed (" + printable(mechanism) + ") from " + printable(address)
           + ": " + printable(reason);
    if (suppressed_ > 0) {
      line += " (" + std::to_string(suppressed_) + " more failures were not logged before "
              "this one)";
      suppressed_ = 0;
    }
  }
  if (sink_)
    sink_(line);
  return true;
}

uint64_t auth_failure_log::suppressed() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return suppressed_total_;
}

std::string printable(std::string_view text) {
  constexpr size_t max_shown = 200;
  std::string result;
  for (size_t i = 0; i < text.size() && i < max_shown; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\') {
      result += "\\\\";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      result += buf;
    } else {
      result += static_cast<char>(c);
    }
  }
  if (text.size() > max_shown)
    result += "...";
  return result;
}

} // namespace broker::internal::security
