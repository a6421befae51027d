#pragma once

// source_stats: what one source routed (a publisher, a hub, a store, a peering, a WebSocket
// client). The source's own thread writes it after each batch; the core reads it for the
// status page and the metrics. Relaxed atomics: these are statistics, not synchronization.

#include "broker/internal/core/router.hh"

#include <atomic>
#include <cstdint>

namespace broker::internal {

struct source_stats {
  explicit source_stats(source_kind k) : kind(k) {}

  const source_kind kind;

  /// Messages routed so far.
  std::atomic<uint64_t> routed{0};

  /// Messages decoded (or published) but not routed yet: the source is parked on a full
  /// sink, or a connection's batch waits for the next turn.
  std::atomic<uint64_t> pending{0};

  /// True while the source waits for room in a sink.
  std::atomic<bool> parked{false};

  void add_routed(uint64_t n) noexcept {
    if (n > 0)
      routed.fetch_add(n, std::memory_order_relaxed);
  }

  /// Records the state after a route() call that left `left` messages behind.
  void set_state(bool is_parked, uint64_t left) noexcept {
    parked.store(is_parked, std::memory_order_relaxed);
    pending.store(left, std::memory_order_relaxed);
  }
};

} // namespace broker::internal
