#include "broker/internal/core/send_queue.hh"

#include <algorithm>

namespace broker::internal {

namespace {

/// The queue's item for message `x` with route `r`.
template <class Item>
Item make_item(data_message x, const route_info* r);

template <>
send_item make_item<send_item>(data_message x, const route_info* r) {
  return send_item{std::move(x), r != nullptr ? *r : route_info{}};
}

template <>
data_message make_item<data_message>(data_message x, const route_info*) {
  return x;
}

} // namespace

template <class Item>
basic_send_queue<Item>::basic_send_queue(size_t capacity, overflow_policy policy)
  : items_(capacity, policy) {
}

template <class Item>
void basic_send_queue<Item>::on_ready(std::function<void()> callback) {
  std::lock_guard<std::mutex> guard{mtx_};
  ready_ = std::move(callback);
}

template <class Item>
void basic_send_queue<Item>::schedule() {
  // Pairs with take(): it clears `scheduled_` and then looks at the queue, we filled the
  // queue and then look at `scheduled_`; one of the two sees the other.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (scheduled_.load(std::memory_order_seq_cst) || scheduled_.exchange(true))
    return;
  std::function<void()> cb;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    cb = ready_;
  }
  if (cb)
    cb();
}

template <class Item>
template <class Make>
push_result basic_send_queue<Item>::push_impl(size_t n, Make&& make) {
  auto before = items_.size();
  bool was_empty = false;
  auto result = items_.push(n, make, was_empty);
  if (result.disconnected) {
    overflowed_.store(true, std::memory_order_release);
    std::vector<room_waiters::waker> wake;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      closed_.store(true, std::memory_order_release);
      // Closed like close(): waiters must not depend on a take() (a closing connection
      // no longer takes) nor on a later close(), which finds the queue closed already.
      wake = waiters_.take();
    }
    room_waiters::wake(wake);
  }
  if (result.accepted > 0 || result.disconnected)
    schedule();
  auto limit = wake_at_.load(std::memory_order_relaxed);
  if (limit > 0 && before < limit && before + result.accepted >= limit) {
    std::function<void()> cb;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      cb = ready_;
    }
    if (cb)
      cb();
  }
  return result;
}

template <class Item>
push_result basic_send_queue<Item>::push(const data_message* xs, const route_info* routes, size_t n) {
  if (n == 0 || closed())
    return {};
  return push_impl(n, [xs, routes](size_t i) {
    return make_item<Item>(xs[i], routes != nullptr ? routes + i : nullptr);
  });
}

template <class Item>
push_result basic_send_queue<Item>::push_adopted(const data_message* xs, const route_info* routes,
                                     size_t n) {
  if (n == 0)
    return {};
  // The ring builds exactly the items it takes, in order, from one contiguous range of xs.
  size_t lo = n;
  size_t hi = 0;
  push_result result;
  if (!closed())
    result = push_impl(n, [xs, routes, &lo, &hi](size_t i) {
      lo = std::min(lo, i);
      hi = i + 1;
      return make_item<Item>(data_message::adopt(xs[i].impl()),
                             routes != nullptr ? routes + i : nullptr);
    });
  for (size_t i = 0; i < n; ++i)
    if (i < lo || i >= hi)
      xs[i].impl().deref();
  return result;
}

template <class Item>
push_result basic_send_queue<Item>::push(std::vector<data_message>& xs, std::vector<route_info>& routes) {
  auto result = push(xs.data(), routes.empty() ? nullptr : routes.data(), xs.size());
  xs.clear();
  routes.clear();
  return result;
}

template <class Item>
void basic_send_queue<Item>::announce(filter_type filter) {
  if (closed())
    return;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    announcement_ = std::move(filter);
    has_extra_.store(true, std::memory_order_seq_cst);
  }
  schedule();
}

template <class Item>
void basic_send_queue<Item>::close() {
  std::vector<room_waiters::waker> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_.exchange(true))
      return;
    wake = waiters_.take();
  }
  schedule();
  room_waiters::wake(wake);
}

template <class Item>
bool basic_send_queue<Item>::request_room(size_t n, room_waiters::waker waker) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (closed() || items_.size() + n <= items_.capacity())
    return true;
  waiters_.add(std::move(waker));
  has_extra_.store(true, std::memory_order_seq_cst);
  // Look again after registering: take() empties the queue and then looks for waiters.
  // (If it did meanwhile, the waker may still fire once; a spurious wake-up is harmless.)
  return items_.size() + n <= items_.capacity();
}

template <class Item>
bool basic_send_queue<Item>::take(std::vector<Item>& out,
                                  std::optional<filter_type>& announcement) {
  for (;;) {
    items_.pop(out, SIZE_MAX);
    std::vector<room_waiters::waker> wake;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (has_extra_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> guard{mtx_};
      if (announcement_) {
        announcement = std::move(announcement_);
        announcement_.reset();
      }
      wake = waiters_.take(); // Taking everything frees the whole queue.
      has_extra_.store(false, std::memory_order_relaxed);
    }
    room_waiters::wake(wake);
    if (!out.empty() || announcement)
      return true;
    if (closed())
      return false;
    // Nothing found: the connection goes idle and the next push must wake it. A push that
    // raced with this saw `scheduled_` still set, so look once more.
    scheduled_.store(false, std::memory_order_seq_cst);
    if (items_.size() == 0 && !has_extra_.load(std::memory_order_seq_cst))
      return true;
    if (scheduled_.exchange(true))
      return true; // A push scheduled the connection again; its wake-up will take.
  }
}

template class basic_send_queue<send_item>;
template class basic_send_queue<data_message>;

} // namespace broker::internal
