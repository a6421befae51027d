#pragma once

// room_waiters: the sources waiting for room in one sink (policy `block`, or store commands
// to a peer). Embedded in a queue and guarded by the queue's mutex; the consumer takes the
// waiters when it frees room (or the queue closes) and calls them after unlocking.

#include <functional>
#include <utility>
#include <vector>

namespace broker::internal {

/// See the file comment.
class room_waiters {
public:
  using waker = std::function<void()>;

  /// Pre: the queue's mutex is held.
  void add(waker w) { xs_.push_back(std::move(w)); }

  /// Pre: the queue's mutex is held.
  bool empty() const noexcept { return xs_.empty(); }

  /// Moves every waiter out. Pre: the queue's mutex is held; call them after unlocking.
  std::vector<waker> take() { return std::exchange(xs_, {}); }

  /// Calls each of `ws` once.
  static void wake(std::vector<waker>& ws) {
    for (auto& w : ws)
      if (w)
        w();
    ws.clear();
  }

private:
  std::vector<waker> xs_;
};

} // namespace broker::internal
