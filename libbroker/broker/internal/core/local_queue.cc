#include "broker/internal/core/local_queue.hh"

#include <cerrno>
#include <cstdint>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace broker::internal {

local_queue::local_queue(size_t capacity, overflow_policy policy)
  : capacity_(capacity == 0 ? 1 : capacity),
    low_water_(capacity_ / 2),
    items_(capacity_, policy) {
  fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

local_queue::~local_queue() {
  if (fd_ >= 0)
    ::close(fd_);
}

void local_queue::signal_ready() {
  uint64_t one = 1;
  // Cannot fail short of counter overflow: the counter only ever holds 0 or 1 here.
  [[maybe_unused]] auto n = ::write(fd_, &one, sizeof(one));
}

void local_queue::clear_ready() {
  uint64_t value = 0;
  [[maybe_unused]] auto n = ::read(fd_, &value, sizeof(value));
}

push_result local_queue::push(const data_message* xs, size_t n) {
  push_result result;
  if (n == 0)
    return result;
  std::lock_guard<std::mutex> guard{mtx_};
  if (closed_.load(std::memory_order_relaxed)) {
    // The consumer is gone (or was disconnected before): nobody can lose these.
    return result;
  }
  bool was_empty = items_.empty();
  result = items_.push_n(n, [xs](size_t i) { return xs[i]; });
  if (result.disconnected)
    closed_.store(true, std::memory_order_release);
  size_.store(items_.size(), std::memory_order_release);
  if (was_empty && (!items_.empty() || result.disconnected))
    signal_ready();
  return result;
}

push_result local_queue::push(std::vector<data_message>& xs) {
  auto result = push(xs.data(), xs.size());
  xs.clear();
  return result;
}

bool local_queue::request_room(size_t needed, room_waiter_fn waker) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (items_.size() + needed <= capacity_ || closed_.load(std::memory_order_relaxed))
    return true;
  waiters_.add(std::move(waker));
  return false;
}

void local_queue::close() noexcept {
  std::vector<room_waiter_fn> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_.exchange(true))
      return;
    if (items_.empty())
      signal_ready();
    wake = waiters_.take();
  }
  room_waiters::wake(wake);
}

size_t local_queue::pop(std::vector<data_message>& out, size_t max) {
  std::vector<room_waiter_fn> wake;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    n = items_.pop(out, max);
    if (n == 0)
      return 0;
    size_.store(items_.size(), std::memory_order_release);
    // Closed queues keep the descriptor readable so consumers notice the end.
    if (items_.empty() && !closed_.load(std::memory_order_relaxed))
      clear_ready();
    if (items_.size() <= low_water_ && !waiters_.empty())
      wake = waiters_.take();
  }
  room_waiters::wake(wake);
  return n;
}

bool local_queue::wait(std::chrono::milliseconds timeout) const {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (!items_.empty())
        return true;
      if (closed_.load(std::memory_order_relaxed))
        return false;
    }
    int ms = -1;
    if (timeout.count() >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      if (left.count() <= 0)
        return false;
      ms = static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
    }
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, ms) < 0 && errno != EINTR)
      return false;
  }
}

} // namespace broker::internal
