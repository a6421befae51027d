#pragma once

// Helpers for the unit tests that run threads against the I/O and queue primitives (io/,
// core/). Every wait is bounded: a condition that does not come true fails the test, and a
// thread that does not finish aborts the binary with its name on stderr (a stuck thread
// cannot be undone in-process), so a lost wake-up shows up as a named failure, not a hang.
//
// Catch2 v2 assertions are not thread-safe: threads record what they saw, and the test
// thread checks it after join().

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <utility>

namespace broker::internal::test {

/// Generous: every wait in these tests ends within milliseconds on an idle machine.
inline constexpr std::chrono::seconds wait_bound{20};

/// Polls `pred` until it holds (yielding first, then sleeping 1 ms); false after
/// wait_bound.
template <class Pred>
bool eventually(Pred&& pred) {
  auto deadline = std::chrono::steady_clock::now() + wait_bound;
  for (int spins = 0; !pred(); ++spins) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    if (spins < 100)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return true;
}

/// A thread that is joined with a bound (see the file comment).
class bounded_thread {
public:
  template <class F>
  bounded_thread(std::string name, F f) : name_(std::move(name)) {
    std::packaged_task<void()> task{std::move(f)};
    done_ = task.get_future();
    thread_ = std::thread{std::move(task)};
  }

  bounded_thread(const bounded_thread&) = delete;
  bounded_thread& operator=(const bounded_thread&) = delete;
  bounded_thread(bounded_thread&&) = default;
  bounded_thread& operator=(bounded_thread&&) = delete;

  ~bounded_thread() { join(); }

  /// True once the thread's function returned.
  bool finished() const {
    return done_.valid() && done_.wait_for(std::chrono::seconds{0}) == std::future_status::ready;
  }

  /// Waits for the thread at most wait_bound; aborts the binary if it is stuck.
  void join() {
    if (!thread_.joinable())
      return;
    if (done_.wait_for(wait_bound) != std::future_status::ready) {
      std::fprintf(stderr, "HANG: thread '%s' did not finish within %lld s\n", name_.c_str(),
                   static_cast<long long>(wait_bound.count()));
      std::fflush(stderr);
      std::abort();
    }
    thread_.join();
  }

private:
  std::string name_;
  std::future<void> done_;
  std::thread thread_;
};

} // namespace broker::internal::test
