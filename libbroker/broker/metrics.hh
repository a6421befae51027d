#pragma once

// Counters the endpoint keeps about its handlers: how many exist, how many messages they hold, and
// every message dropped or handler disconnected by an overflow policy. Nothing is dropped without
// being counted here (doc/architecture.md, "Core, handlers and overflow policies": no silent loss).

#include "broker/export.hh"
#include "broker/overflow_policy.hh"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace broker {

/// The kinds of output handler in the core's index.
enum class handler_kind : uint8_t {
  subscriber,
  hub,
  peer,
  web_socket,
  store_master,
  store_clone,
  zeromq, ///< The bridge to a ZeroMQ cluster (internal/zeromq/bridge.hh).
};

inline constexpr size_t num_handler_kinds = 7;
inline constexpr size_t num_overflow_policies = 4;

/// "subscriber", "hub", "peer", "web_socket", "store_master", "store_clone", "zeromq".
BROKER_API std::string_view to_string(handler_kind x) noexcept;

/// A snapshot of one handler kind's counters.
struct BROKER_API handler_kind_metrics {
  /// Handlers of this kind currently attached.
  uint64_t handlers = 0;
  /// Messages currently waiting in their queues (approximate while traffic flows).
  uint64_t buffered = 0;
  /// Messages delivered into their queues since start.
  uint64_t delivered = 0;
  /// Messages dropped, indexed by the policy that dropped them
  /// (static_cast<size_t>(overflow_policy::drop_oldest) etc.).
  std::array<uint64_t, num_overflow_policies> dropped{};
  /// Handlers closed because they overflowed under policy `disconnect`.
  uint64_t disconnects = 0;
  /// Connections closed because they exceeded a budget (subscriptions, control output).
  uint64_t limit_disconnects = 0;
};

/// A snapshot of the endpoint's counters.
struct BROKER_API endpoint_metrics {
  std::array<handler_kind_metrics, num_handler_kinds> kinds{};
  /// Messages the core has routed (one per message, however many receivers): data
  /// messages and store commands.
  uint64_t processed = 0;
  /// The store commands among `processed`.
  uint64_t processed_commands = 0;
  /// Messages nobody subscribed to.
  uint64_t unrouted = 0;
  /// Sources currently parked because a `block` sink was full.
  uint64_t suspended_sources = 0;
  /// Total number of times a source was parked.
  uint64_t suspensions = 0;
  /// Messages from peers suppressed because they arrived again over another path (a cycle)
  /// or came back to their origin. Not a loss: the first copy was delivered.
  uint64_t duplicates = 0;
  /// Messages from peers dropped because a newer message of the same origin had already
  /// been routed here: per-origin order is kept, so a copy that took a slower path (or
  /// outlived a drop on a faster one) is not delivered late. Counted as a loss.
  uint64_t out_of_order = 0;
  /// Messages from peers and WebSocket clients that access control refused to route
  /// (doc/security.md): a configured policy, counted per identity and rule in the audit
  /// counters as well.
  uint64_t refused = 0;

  const handler_kind_metrics& operator[](handler_kind k) const noexcept {
    return kinds[static_cast<size_t>(k)];
  }
  uint64_t dropped(handler_kind k, overflow_policy p) const noexcept {
    return kinds[static_cast<size_t>(k)].dropped[static_cast<size_t>(p)];
  }
};

} // namespace broker
