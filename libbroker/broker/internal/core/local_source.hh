#pragma once

// local_source: a source in the application's own threads (a publisher, a hub, the
// endpoint's publish calls). publish() routes on the calling thread (router.hh) and, when
// a sink with policy `block` is full, waits until that sink has room: this is how
// back-pressure reaches a publishing thread. Nothing is queued in between.
//
// Threads: any number of threads may publish through one local_source at once; each call
// routes its own messages in order. close() (or the end of the endpoint) makes waiting
// calls return.

#include "broker/internal/core/router.hh"
#include "broker/internal/core/source_stats.hh"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace broker::internal {

/// See the file comment.
class local_source {
public:
  local_source(std::shared_ptr<router> r, uint64_t id, source_kind kind = source_kind::local);

  uint64_t id() const noexcept { return src_.id; }

  /// What this source routed, for the status page.
  const std::shared_ptr<source_stats>& stats() const noexcept { return stats_; }

  /// Routes xs[0, n), waiting while a sink lacks room (a negative timeout waits forever).
  /// Returns false if the endpoint shut down, the source was closed or `timeout` expired;
  /// `routed` (if not null) then tells how many went.
  bool publish(const data_message* xs, size_t n, std::chrono::milliseconds timeout,
               size_t* routed = nullptr);

  bool publish(std::vector<data_message>& xs, std::chrono::milliseconds timeout) {
    return publish(xs.data(), xs.size(), timeout);
  }

  /// Routes `x` only if no sink would make it wait; never blocks.
  bool try_publish(const data_message& x);

  /// Makes waiting and later calls fail.
  void close();
  bool closed() const;

private:
  /// Shared with the wakers a sink may still hold after this source is gone.
  struct wait_state {
    std::mutex mtx;
    std::condition_variable cv;
    uint64_t wakeups = 0;
    bool closed = false;
  };

  std::shared_ptr<router> router_;
  route_source src_;
  std::shared_ptr<source_stats> stats_;
  std::shared_ptr<wait_state> wait_;
};

} // namespace broker::internal
