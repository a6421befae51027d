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
    policy_(policy) {
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

push_result local_queue::push(std::vector<data_message>& xs) {
  push_result result;
  if (xs.empty())
    return result;
  std::lock_guard<std::mutex> guard{mtx_};
  if (closed_.load(std::memory_order_relaxed)) {
    // The consumer is gone (or was disconnected before): nobody can lose these.
    xs.clear();
    return result;
  }
  bool was_empty = items_.empty();
  auto room = capacity_ > items_.size() ? capacity_ - items_.size() : 0;
  switch (policy_) {
    case overflow_policy::block:
      // The core checked for room before staging; appending all keeps the invariant.
      items_.insert(items_.end(), std::make_move_iterator(xs.begin()),
                    std::make_move_iterator(xs.end()));
      result.accepted = xs.size();
      break;
    case overflow_policy::drop_newest: {
      auto n = std::min(room, xs.size());
      items_.insert(items_.end(), std::make_move_iterator(xs.begin()),
                    std::make_move_iterator(xs.begin() + n));
      result.accepted = n;
      result.dropped = xs.size() - n;
      break;
    }
    case overflow_policy::drop_oldest: {
      // Only the newest `capacity_` of (queue + batch) survive.
      auto first = xs.begin();
      if (xs.size() > capacity_) {
        result.dropped += xs.size() - capacity_;
        first = xs.end() - capacity_;
      }
      auto incoming = static_cast<size_t>(xs.end() - first);
      while (items_.size() + incoming > capacity_) {
        items_.pop_front();
        ++result.dropped;
      }
      items_.insert(items_.end(), std::make_move_iterator(first),
                    std::make_move_iterator(xs.end()));
      // Every offered message entered the queue; the evicted ones count as dropped.
      result.accepted = xs.size();
      break;
    }
    case overflow_policy::disconnect: {
      auto n = std::min(room, xs.size());
      items_.insert(items_.end(), std::make_move_iterator(xs.begin()),
                    std::make_move_iterator(xs.begin() + n));
      result.accepted = n;
      if (n < xs.size()) {
        result.dropped = xs.size() - n;
        result.disconnected = true;
        closed_.store(true, std::memory_order_release);
      }
      break;
    }
  }
  xs.clear();
  size_.store(items_.size(), std::memory_order_release);
  if (was_empty && (!items_.empty() || result.disconnected))
    signal_ready();
  return result;
}

void local_queue::on_room(std::function<void()> callback) {
  std::lock_guard<std::mutex> guard{mtx_};
  room_callback_ = std::move(callback);
}

bool local_queue::request_wakeup(size_t needed) {
  wakeup_wanted_.store(true, std::memory_order_seq_cst);
  // Re-check after publishing the request: a pop that ran before the store did not see
  // it, so its room must be visible here.
  if (size() + needed <= capacity_ || closed()) {
    wakeup_wanted_.store(false, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void local_queue::close() noexcept {
  std::lock_guard<std::mutex> guard{mtx_};
  if (closed_.exchange(true))
    return;
  if (items_.empty())
    signal_ready();
}

size_t local_queue::pop(std::vector<data_message>& out, size_t max) {
  std::function<void()> callback;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    n = std::min(max, items_.size());
    if (n == 0)
      return 0;
    out.insert(out.end(), std::make_move_iterator(items_.begin()),
               std::make_move_iterator(items_.begin() + n));
    items_.erase(items_.begin(), items_.begin() + n);
    size_.store(items_.size(), std::memory_order_seq_cst);
    // Closed queues keep the descriptor readable so consumers notice the end.
    if (items_.empty() && !closed_.load(std::memory_order_relaxed))
      clear_ready();
    if (items_.size() <= low_water_ && wakeup_wanted_.load(std::memory_order_seq_cst)
        && wakeup_wanted_.exchange(false))
      callback = room_callback_;
  }
  if (callback)
    callback();
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
