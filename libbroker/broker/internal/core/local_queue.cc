#include "broker/internal/core/local_queue.hh"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace broker::internal {

local_queue::local_queue(size_t capacity, overflow_policy policy)
  : low_water_((capacity == 0 ? 1 : capacity) / 2), items_(capacity, policy) {
  fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

local_queue::~local_queue() {
  if (fd_ >= 0)
    ::close(fd_);
}

void local_queue::signal_ready() {
  uint64_t one = 1;
  // Cannot fail short of counter overflow: the counter stays tiny.
  [[maybe_unused]] auto n = ::write(fd_, &one, sizeof(one));
}

void local_queue::clear_ready() {
  uint64_t value = 0;
  [[maybe_unused]] auto n = ::read(fd_, &value, sizeof(value));
}

push_result local_queue::push(const data_message* xs, size_t n) {
  if (n == 0 || closed())
    return {}; // The consumer is gone (or was disconnected before): nobody can lose these.
  bool was_empty = false;
  auto result = items_.push(n, [xs](size_t i) { return xs[i]; }, was_empty);
  if (result.disconnected)
    closed_.store(true, std::memory_order_release);
  if (was_empty && (result.accepted > 0 || result.disconnected))
    signal_ready();
  return result;
}

push_result local_queue::push_adopted(const data_message* xs, size_t n) {
  size_t lo = n;
  size_t hi = 0;
  push_result result;
  if (n > 0 && !closed()) {
    bool was_empty = false;
    result = items_.push(
      n,
      [xs, &lo, &hi](size_t i) {
        lo = std::min(lo, i);
        hi = i + 1;
        return data_message::adopt(xs[i].impl());
      },
      was_empty);
    if (result.disconnected)
      closed_.store(true, std::memory_order_release);
    if (was_empty && (result.accepted > 0 || result.disconnected))
      signal_ready();
  }
  for (size_t i = 0; i < n; ++i)
    if (i < lo || i >= hi)
      xs[i].impl().deref();
  return result;
}

push_result local_queue::push(std::vector<data_message>& xs) {
  auto result = push(xs.data(), xs.size());
  xs.clear();
  return result;
}

bool local_queue::request_room(size_t needed, room_waiter_fn waker) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (closed() || items_.size() + needed <= items_.capacity())
    return true;
  waiters_.add(std::move(waker));
  has_waiters_.store(true, std::memory_order_seq_cst);
  // Look again after registering: a pop that shrank the queue before it saw the flag
  // left room that is visible here (the waker may then fire once more, harmlessly).
  return items_.size() + needed <= items_.capacity();
}

void local_queue::close() noexcept {
  std::vector<room_waiter_fn> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_.exchange(true))
      return;
    // Readable from now on: consumers notice the end after the last message.
    signal_ready();
    wake = waiters_.take();
    has_waiters_.store(false, std::memory_order_relaxed);
  }
  room_waiters::wake(wake);
}

size_t local_queue::pop(std::vector<data_message>& out, size_t max) {
  // Nothing queued: no exclusive section and no read() of a descriptor that cannot be
  // readable for anything but a race wait() resolves (a node polls its event subscriber
  // before every wait, so this saved a failing system call per round trip). A producer
  // waiting for room registered while the queue was full: the pop that emptied it woke it.
  if (items_.size() == 0)
    return 0;
  size_t left = 0;
  auto n = items_.pop(out, max, [this, &left](size_t have) {
    left = have;
    // Closed queues keep the descriptor readable so consumers notice the end.
    if (have == 0 && !closed())
      clear_ready();
  });
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (left <= low_water_ && has_waiters_.load(std::memory_order_seq_cst)) {
    std::vector<room_waiter_fn> wake;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      wake = waiters_.take();
      has_waiters_.store(false, std::memory_order_relaxed);
    }
    room_waiters::wake(wake);
  }
  return n;
}

bool local_queue::wait(std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + timeout;
  for (;;) {
    if (items_.size() > 0)
      return true;
    if (closed())
      return items_.size() > 0;
    int ms = -1;
    if (timeout.count() >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      if (left.count() <= 0)
        return false;
      ms = static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
    }
    pollfd pfd{fd_, POLLIN, 0};
    auto res = ::poll(&pfd, 1, ms);
    if (res < 0 && errno != EINTR)
      return false;
    if (res > 0 && items_.size() == 0 && !closed()) {
      // Readable but empty: a push raced with the last pop. Drain the descriptor where no
      // producer can push, so the next poll() blocks again.
      std::vector<data_message> none;
      items_.pop(none, 0, [this](size_t have) {
        if (have == 0)
          clear_ready();
      });
    }
  }
}

} // namespace broker::internal
