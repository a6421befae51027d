#include "known_issues.hh"

#include <cstdlib>
#include <limits>
#include <string_view>

namespace broker::fuzz::known_issues {

namespace channel = internal::channel;

namespace {

// BROKER_FUZZ_KNOWN_ISSUES=trip lets the inputs through: to reproduce a finding, or to
// check its fix.
bool stepping_around() {
  static const bool result = [] {
    auto* mode = std::getenv("BROKER_FUZZ_KNOWN_ISSUES");
    return mode == nullptr || std::string_view{mode} != "trip";
  }();
  return result;
}

} // namespace

bool channel_interval_overflows(const channel::message& msg, uint32_t timeout_intervals) {
  auto* hs = std::get_if<channel::handshake>(&msg);
  if (!stepping_around() || hs == nullptr || timeout_intervals == 0)
    return false;
  auto max = std::numeric_limits<timespan::rep>::max() / timeout_intervals;
  return hs->heartbeat_interval.count() > max;
}

bool write_expiry_overflows(const data& op) {
  auto* xs = get_if<vector>(op);
  if (!stepping_around() || xs == nullptr || xs->empty())
    return false;
  auto* tag = get_if<std::string>(xs->front());
  if (tag == nullptr)
    return false;
  // The expiry's position in each operation (store_logic.hh).
  size_t at = *tag == "put" || *tag == "put_unique" || *tag == "subtract" ? 3
              : *tag == "add"                                             ? 4
                                                                          : 0;
  if (at == 0 || at >= xs->size())
    return false;
  auto* expiry = get_if<timespan>((*xs)[at]);
  return expiry != nullptr && expiry->count() > std::numeric_limits<timespan::rep>::max() / 2;
}

bool store_command_trips(const data& cmd, uint32_t timeout_intervals) {
  auto* xs = get_if<vector>(cmd);
  if (xs == nullptr)
    return false;
  for (const auto& x : *xs) {
    auto msg = channel::decode(x);
    if (!msg)
      continue;
    if (channel_interval_overflows(*msg, timeout_intervals))
      return true;
    if (auto* ev = std::get_if<channel::event>(&*msg); ev && write_expiry_overflows(ev->payload))
      return true;
  }
  return false;
}

} // namespace broker::fuzz::known_issues
