#pragma once

// bounded_buffer: the one implementation of the overflow policies (doc/architecture.md, "Core,
// handlers and overflow policies"), used by the local queues of subscribers and hubs and by the
// send queues of peers and WebSocket clients.
//
// Ownership: embedded in a queue that guards it with its own mutex; no locking here.
//
// Storage is a vector with a moving head: appending is push_back, popping advances the
// head, and taking everything from the head swaps vectors, so a consumer that drains the
// whole queue (a connection's writer) costs no per-item move and no allocation in steady
// state.
//
// Policies, for a batch of n offered items:
//   block        the producer made sure they fit; all are appended.
//   drop_newest  as many as fit are appended, the rest are dropped.
//   drop_oldest  all are appended (at most the newest `capacity` of the batch), and the
//                oldest queued items are evicted to make room; evictions count as drops.
//   disconnect   as many as fit are appended; if some did not, the rest are dropped and
//                the result says `disconnected`.

#include "broker/overflow_policy.hh"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace broker::internal {

/// What a push did with the offered items.
struct push_result {
  size_t accepted = 0;
  size_t dropped = 0;
  bool disconnected = false;
};

template <class T>
class bounded_buffer {
public:
  bounded_buffer(size_t capacity, overflow_policy policy)
    : capacity_(capacity == 0 ? 1 : capacity), policy_(policy) {}

  size_t capacity() const noexcept { return capacity_; }
  overflow_policy policy() const noexcept { return policy_; }
  size_t size() const noexcept { return items_.size() - head_; }
  bool empty() const noexcept { return size() == 0; }

  /// Free slots (0 when full or beyond).
  size_t room() const noexcept { return capacity_ > size() ? capacity_ - size() : 0; }

  /// Appends the n items at `xs` (moved from) under the policy; see the file comment.
  push_result push(T* xs, size_t n) {
    return push_n(n, [xs](size_t i) { return std::move(xs[i]); });
  }

  /// Like push(), for items made on demand: `make(i)` builds offered item i (0 <= i < n)
  /// and is called only for the items that enter, in order.
  template <class F>
  push_result push_n(size_t n, F&& make) {
    push_result result;
    switch (policy_) {
      case overflow_policy::block:
        append(0, n, make);
        result.accepted = n;
        break;
      case overflow_policy::drop_newest:
      case overflow_policy::disconnect: {
        auto k = std::min(room(), n);
        append(0, k, make);
        result.accepted = k;
        result.dropped = n - k;
        result.disconnected = policy_ == overflow_policy::disconnect && k < n;
        break;
      }
      case overflow_policy::drop_oldest: {
        size_t first = n > capacity_ ? n - capacity_ : 0;
        result.dropped = first;
        auto incoming = n - first;
        if (size() + incoming > capacity_) {
          auto evict = size() + incoming - capacity_;
          pop_front(evict);
          result.dropped += evict;
        }
        append(first, n, make);
        result.accepted = n; // Every offered item entered; evictions count as drops.
        break;
      }
    }
    return result;
  }

  /// Moves up to `max` items from the front to the end of `out`; returns how many.
  size_t pop(std::vector<T>& out, size_t max) {
    auto n = std::min(max, size());
    if (n == size() && out.empty() && head_ == 0) {
      out.swap(items_);
      items_.clear();
      return n;
    }
    auto first = items_.begin() + static_cast<std::ptrdiff_t>(head_);
    out.insert(out.end(), std::make_move_iterator(first),
               std::make_move_iterator(first + static_cast<std::ptrdiff_t>(n)));
    pop_front(n);
    return n;
  }

  /// Moves everything to the end of `out`; returns how many.
  size_t take_all(std::vector<T>& out) {
    return pop(out, size());
  }

  void clear() noexcept {
    items_.clear();
    head_ = 0;
  }

private:
  template <class F>
  void append(size_t first, size_t last, F& make) {
    for (auto i = first; i < last; ++i)
      items_.push_back(make(i));
  }

  void pop_front(size_t n) {
    // Destroy the popped items now (they may hold the last reference to a message).
    for (size_t i = 0; i < n; ++i)
      items_[head_ + i] = T{};
    head_ += n;
    if (head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  size_t capacity_;
  overflow_policy policy_;
  std::vector<T> items_;
  size_t head_ = 0;
};

} // namespace broker::internal
