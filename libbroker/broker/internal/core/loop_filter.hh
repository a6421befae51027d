#pragma once

// loop_filter: which messages from peers to route, so that a message reaches each node
// once in any topology and each origin's messages arrive in order (doc/peering.md,
// "Cycles: what is guaranteed"; doc/protocol/peering.md §7).
//
// Between our nodes every data frame carries (origin, sequence). Per origin, a node routes
// sequence numbers in increasing order only: a copy that arrives after a newer message of
// its origin (it took a slower path, or the faster path dropped it) is dropped and counted,
// so every subscriber sees each origin's messages in order, and a gap shows up as a counted
// drop instead of a reordering. A message that comes back to its origin is a duplicate.
// Messages without an origin (from Broker peers) pass: only their TTL protects against
// loops.
//
// Memory: a sliding window of 4096 sequence numbers (512 bytes) per origin ever seen.
// Threads: none of its own; the router calls it under its relay lock.

#include "broker/endpoint_id.hh"
#include "broker/message.hh"

#include <cstdint>
#include <map>
#include <vector>

namespace broker::internal {

/// See the file comment.
class loop_filter {
public:
  /// What the filter makes of a message from a peer.
  enum class sighting : uint8_t {
    fresh,     ///< New: route it.
    duplicate, ///< Seen before (another path, or our own message back): not a loss.
    stale,     ///< Older than one of its origin already routed here: dropped for order.
  };

  /// Sequence numbers remembered per origin.
  static constexpr uint64_t window = 4096;

  explicit loop_filter(endpoint_id self) : self_(self) {}

  /// Classifies `route` and remembers it.
  sighting check(const route_info& route);

  /// Number of origins seen so far.
  size_t origins() const noexcept { return seen_.size(); }

private:
  struct seen_window {
    uint64_t highest = 0;
    std::vector<uint64_t> bits; // Bit i of the ring: sequence (highest - offset) was seen.
  };

  endpoint_id self_;
  std::map<endpoint_id, seen_window> seen_;
};

} // namespace broker::internal
