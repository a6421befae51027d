#pragma once

#include "broker/export.hh"

#include <optional>
#include <string_view>

namespace broker {

/// What a handler does with a message that finds its bounded queue full
/// (doc/architecture.md, "Core, handlers and overflow policies").
enum class overflow_policy : unsigned char {
  /// Lossless: the source of the message is parked until the queue has room. Only for local
  /// sinks (subscribers, hubs, stores).
  block,
  /// Evict the queue head, then append the new message.
  drop_oldest,
  /// Discard the incoming message; the queue stays as it is.
  drop_newest,
  /// Close the handler (its consumer sees the end of the stream / a closed connection).
  disconnect,
};

/// "block", "drop_oldest", "drop_newest" or "disconnect".
BROKER_API std::string_view to_string(overflow_policy x) noexcept;

/// Parses the names above (also accepts hyphens instead of underscores).
BROKER_API std::optional<overflow_policy> parse_overflow_policy(std::string_view text) noexcept;

} // namespace broker
