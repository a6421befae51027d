#pragma once

// mpsc_ring: the bounded multi-producer, single-consumer buffer inside every sink queue
// (local_queue, send_queue), and the one implementation of the overflow policies
// (doc/architecture.md, "Core, handlers and overflow policies").
//
// Producers are the routing threads: with more than one I/O thread, several of them push
// into one sink at once. The common case takes no lock (the reservation scheme of
// CockroachDB's concurrent proposal buffer):
//   1. A producer reserves k slots with one compare-and-swap on `state_`, which counts
//      the reserved slots and the producers writing right now.
//   2. If the reservation fits the ring, it writes its items into its own slots (no other
//      producer touches them), then leaves with one atomic subtract.
//   3. If it does not fit (the ring is full, or not yet grown), or the consumer is taking,
//      the producer takes the slow path below.
// Exclusive sections (the consumer taking items, a producer on the slow path): under the
// mutex, set the `exclusive` bit so that no new reservation succeeds, wait until the
// producers still writing have left (they never block while writing: a few copies), then
// work on the ring alone and publish the new count, which clears the bit.
//
// The slow path applies the policy for a batch of n offered items:
//   block        the producer made sure they fit (concurrent producers may overfill by at
//                most one batch each; the ring grows past the capacity for them).
//   drop_newest  as many as fit are appended, the rest are dropped.
//   drop_oldest  all are appended (at most the newest `capacity` of the batch), and the
//                oldest queued items are evicted to make room; evictions count as drops.
//   disconnect   as many as fit are appended; if some did not, the rest are dropped and
//                the result says `disconnected`.
//
// Memory: the ring starts empty and grows (doubling, in the slow path, in powers of two) to
// what the bursts need, at most the capacity rounded up; when the consumer keeps finding it
// mostly empty it shrinks back, so an idle sink costs a few dozen bytes and a busy one what
// its burst needs.
//
// Order: reservations are ordered by the compare-and-swap, so one producer's batches, and the
// batches of producers that hold a common lock (the router's origin and relay locks), keep
// their order in the ring.

#include "broker/overflow_policy.hh"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace broker::internal {

/// What a push did with the offered items.
struct push_result {
  size_t accepted = 0;
  size_t dropped = 0;
  bool disconnected = false;
};

/// See the file comment.
template <class T>
class mpsc_ring {
public:
  /// The smallest ring the buffer grows to (and shrinks back to).
  static constexpr size_t min_slots = 16;

  mpsc_ring(size_t capacity, overflow_policy policy)
    : capacity_(capacity == 0 ? 1 : capacity), policy_(policy) {}

  mpsc_ring(const mpsc_ring&) = delete;
  mpsc_ring& operator=(const mpsc_ring&) = delete;

  size_t capacity() const noexcept { return capacity_; }
  overflow_policy policy() const noexcept { return policy_; }

  /// Items in the ring (exact only in an exclusive section; a snapshot otherwise).
  size_t size() const noexcept { return count_of(state_.load(std::memory_order_acquire)); }

  /// Slots of memory the ring holds now (for tests of the memory bound).
  size_t slots() const noexcept { return slots_.load(std::memory_order_relaxed); }

  /// Offers n items, built by `make(i)` for the items that enter (in order). Returns what
  /// happened and, in `was_empty`, whether the ring was empty before (the consumer may need
  /// a wake-up). Any thread.
  template <class F>
  push_result push(size_t n, F&& make, bool& was_empty) {
    was_empty = false;
    if (n == 0)
      return {};
    // Fast path: reserve n slots and register as a writer in one compare-and-swap. A
    // reservation that cannot succeed never touches the count, so a later producer's
    // slots always follow the items before them.
    auto s = state_.load(std::memory_order_acquire);
    for (;;) {
      auto count = count_of(s);
      if ((s & exclusive_bit) != 0 || count + n > slots_.load(std::memory_order_acquire)
          || count + n > capacity_)
        break;
      if (state_.compare_exchange_weak(s, s + n + writer_one, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        auto first = head_ + count;
        auto mask = ring_.size() - 1;
        for (size_t i = 0; i < n; ++i)
          ring_[(first + i) & mask] = make(i);
        state_.fetch_sub(writer_one, std::memory_order_release);
        was_empty = count == 0;
        push_result result;
        result.accepted = n;
        return result;
      }
    }
    std::lock_guard<std::mutex> guard{mtx_};
    auto have = enter_exclusive();
    was_empty = have == 0;
    auto result = push_locked(have, n, make);
    leave_exclusive(have);
    return result;
  }

  /// Moves up to `max` items from the front to the end of `out`; returns how many and, in
  /// `now_empty`, whether the ring is empty afterwards. `locked(n_left)` runs inside the
  /// exclusive section, where no producer can push (e.g. to clear a readiness flag while
  /// the ring is still empty). The consumer's side; one thread at a time.
  template <class F>
  size_t pop(std::vector<T>& out, size_t max, F&& locked) {
    std::lock_guard<std::mutex> guard{mtx_};
    auto have = enter_exclusive();
    auto n = std::min(max, have);
    auto mask = ring_.size() - 1;
    out.reserve(out.size() + n);
    // Moving leaves each slot empty: it holds no reference to a message any more.
    for (size_t i = 0; i < n; ++i)
      out.push_back(std::move(ring_[(head_ + i) & mask]));
    have -= n;
    head_ = have == 0 ? 0 : (head_ + n) & mask;
    if (have == 0)
      maybe_shrink(n);
    locked(have);
    leave_exclusive(have);
    return n;
  }

  size_t pop(std::vector<T>& out, size_t max) {
    return pop(out, max, [](size_t) {});
  }

  /// Drops everything (the sink closed).
  void clear() {
    std::lock_guard<std::mutex> guard{mtx_};
    enter_exclusive();
    ring_.clear();
    ring_.shrink_to_fit();
    head_ = 0;
    slots_.store(0, std::memory_order_relaxed);
    leave_exclusive(0);
  }

private:
  static constexpr uint64_t count_bits = 40;
  static constexpr uint64_t count_mask = (uint64_t{1} << count_bits) - 1;
  static constexpr uint64_t writer_one = uint64_t{1} << count_bits;
  static constexpr uint64_t exclusive_bit = uint64_t{1} << 63;
  static constexpr uint64_t writer_mask = ~count_mask & ~exclusive_bit;

  static size_t count_of(uint64_t s) noexcept { return static_cast<size_t>(s & count_mask); }

  /// Pre: mtx_ held. Stops new reservations, waits for writers, returns the item count.
  size_t enter_exclusive() {
    auto s = state_.fetch_or(exclusive_bit, std::memory_order_acq_rel);
    // Producers with a reservation write a few items and leave; they never block, so
    // this wait is short.
    while (((s = state_.load(std::memory_order_acquire)) & writer_mask) != 0)
      std::this_thread::yield();
    return count_of(s);
  }

  /// Pre: in an exclusive section. Publishes `count` and lets producers in again.
  void leave_exclusive(size_t count) {
    state_.store(count, std::memory_order_release);
  }

  /// Pre: in an exclusive section with `have` items. Applies the policy.
  template <class F>
  push_result push_locked(size_t& have, size_t n, F& make) {
    push_result result;
    size_t first = 0; // Offered items before it are dropped.
    size_t take = n;
    switch (policy_) {
      case overflow_policy::block:
        break;
      case overflow_policy::drop_newest:
      case overflow_policy::disconnect:
        take = std::min(n, capacity_ > have ? capacity_ - have : 0);
        result.dropped = n - take;
        result.disconnected = policy_ == overflow_policy::disconnect && take < n;
        break;
      case overflow_policy::drop_oldest: {
        if (n > capacity_) {
          first = n - capacity_;
          take = capacity_;
        }
        result.dropped = first;
        if (have + take > capacity_) {
          auto evict = have + take - capacity_;
          auto mask = ring_.size() - 1;
          for (size_t i = 0; i < evict; ++i)
            ring_[(head_ + i) & mask] = T{};
          head_ = (head_ + evict) & mask;
          have -= evict;
          result.dropped += evict;
        }
        break;
      }
    }
    reserve(have, have + take);
    auto mask = ring_.size() - 1;
    for (size_t i = 0; i < take; ++i)
      ring_[(head_ + have + i) & mask] = make(first + i);
    have += take;
    // drop_oldest: every offered item entered (evictions count as drops).
    result.accepted = policy_ == overflow_policy::drop_oldest ? n : take;
    return result;
  }

  /// Pre: in an exclusive section with `have` items. Grows the ring to hold `need`. Ring
  /// sizes are powers of two (slots are found with a mask, not a division); the capacity
  /// bounds the items, not the slots.
  void reserve(size_t have, size_t need) {
    if (need <= ring_.size())
      return;
    auto size = std::max(ring_.size() * 2, min_slots);
    while (size < need)
      size *= 2;
    resize(have, size);
  }

  /// Pre: in an exclusive section with `have` items. Moves them to a ring of `size` slots
  /// (a power of two), starting at slot 0.
  void resize(size_t have, size_t size) {
    std::vector<T> next(size);
    if (!ring_.empty()) {
      auto mask = ring_.size() - 1;
      for (size_t i = 0; i < have; ++i)
        next[i] = std::move(ring_[(head_ + i) & mask]);
    }
    ring_.swap(next);
    head_ = 0;
    slots_.store(size, std::memory_order_release);
  }

  /// Pre: in an exclusive section, empty. A ring that stayed much larger than what the
  /// consumer took, for `shrink_after` takes in a row, shrinks by half (toward min_slots):
  /// an idle sink gives its memory back, a busy one does not resize back and forth.
  void maybe_shrink(size_t taken) {
    constexpr unsigned shrink_after = 64;
    auto size = ring_.size();
    if (size <= min_slots || taken >= size / 4) {
      small_takes_ = 0;
      return;
    }
    if (++small_takes_ < shrink_after)
      return;
    small_takes_ = 0;
    resize(0, std::max(size / 2, min_slots));
  }

  const size_t capacity_;
  const overflow_policy policy_;
  std::atomic<uint64_t> state_{0}; // Count | writers << count_bits | exclusive_bit.
  std::atomic<size_t> slots_{0};   // ring_.size(), readable by producers.
  std::vector<T> ring_;            // Changes size only in exclusive sections.
  size_t head_ = 0;                // Index of the oldest item; exclusive sections only.
  unsigned small_takes_ = 0;       // Takes in a row far below the ring's size (maybe_shrink).
  std::mutex mtx_;                 // Serializes exclusive sections.
};

} // namespace broker::internal
