#pragma once

// gate: lets any thread call into something that may go away, until it does.
//
// Callbacks that cross threads (an I/O thread waking the core, the core waking a
// connection's strand) must stop before their target is destroyed: the core actor's system,
// or an io_context. A gate is the one place that decides. pass() runs its function only
// while the gate is open; close() shuts it and waits until no pass() is running, so that
// after close() returns nothing reaches the target any more.
//
// Cost: pass() is two atomic read-modify-writes on the gate's counter and no lock, so a
// callback per message batch on a hot path is cheap and never contends on a mutex.
//
// Threads: any thread may pass(); close() blocks until passes in progress end, so it must
// not be called from inside pass() on the same gate.

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

namespace broker::internal {

class gate {
public:
  gate() = default;
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;

  /// Runs `f` if the gate is open; returns whether it ran.
  template <class F>
  bool pass(F&& f) {
    if (state_.fetch_add(1, std::memory_order_acquire) & closed_bit) {
      state_.fetch_sub(1, std::memory_order_release);
      return false;
    }
    std::forward<F>(f)();
    state_.fetch_sub(1, std::memory_order_release);
    return true;
  }

  /// Shuts the gate and waits until no pass() is running. Idempotent.
  void close() {
    state_.fetch_or(closed_bit, std::memory_order_acq_rel);
    while ((state_.load(std::memory_order_acquire) & ~closed_bit) != 0)
      std::this_thread::yield();
  }

  bool is_open() const noexcept {
    return (state_.load(std::memory_order_acquire) & closed_bit) == 0;
  }

private:
  static constexpr uint64_t closed_bit = uint64_t{1} << 63;
  std::atomic<uint64_t> state_{0};
};

} // namespace broker::internal
