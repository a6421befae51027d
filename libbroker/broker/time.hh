#pragma once

#include "broker/export.hh"

#include <chrono>
#include <cstdint>
#include <string>

namespace broker {

/// A signed duration in nanoseconds.
using timespan = std::chrono::duration<int64_t, std::nano>;

/// Nanoseconds since the Unix epoch, UTC, no leap seconds.
using timestamp = std::chrono::time_point<std::chrono::system_clock, timespan>;

/// The current wall-clock time.
BROKER_API timestamp now() noexcept;

/// Broker's unit choice: "0s", "1500ns", "2us", "15ms", "60s" (doc/protocol/websocket.md §6.8).
BROKER_API std::string to_string(timespan x);

/// "YYYY-MM-DDThh:mm:ss.mmm", UTC, milliseconds floored (doc/protocol/websocket.md §6.7).
BROKER_API std::string to_string(timestamp x);

} // namespace broker
