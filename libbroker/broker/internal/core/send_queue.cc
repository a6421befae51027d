#include "broker/internal/core/send_queue.hh"


namespace broker::internal {

send_queue::send_queue(size_t capacity, overflow_policy policy) : items_(capacity, policy) {
}

void send_queue::on_ready(std::function<void()> callback) {
  std::lock_guard<std::mutex> guard{mtx_};
  ready_ = std::move(callback);
}

void send_queue::notify_locked(std::function<void()>& cb) {
  if (!scheduled_ && (!items_.empty() || announcement_ || closed_)) {
    scheduled_ = true;
    cb = ready_;
  }
}

push_result send_queue::push(const data_message* xs, const route_info* routes, size_t n) {
  push_result result;
  std::function<void()> cb;
  std::vector<room_waiters::waker> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!closed_) {
      result = items_.push_n(n, [xs, routes](size_t i) {
        return send_item{xs[i], routes != nullptr ? routes[i] : route_info{}};
      });
      if (result.disconnected) {
        overflowed_ = true;
        closed_ = true;
        // Closed like close(): waiters must not depend on a take() (a closing connection
        // no longer takes) nor on a later close(), which finds the queue closed already.
        wake = waiters_.take();
      }
      size_.store(items_.size(), std::memory_order_relaxed);
      notify_locked(cb);
    }
  }
  if (cb)
    cb();
  room_waiters::wake(wake);
  return result;
}

push_result send_queue::push(std::vector<data_message>& xs, std::vector<route_info>& routes) {
  auto result = push(xs.data(), routes.empty() ? nullptr : routes.data(), xs.size());
  xs.clear();
  routes.clear();
  return result;
}

void send_queue::announce(filter_type filter) {
  std::function<void()> cb;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return;
    announcement_ = std::move(filter);
    notify_locked(cb);
  }
  if (cb)
    cb();
}

void send_queue::close() {
  std::function<void()> cb;
  std::vector<room_waiters::waker> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_.exchange(true))
      return;
    notify_locked(cb);
    wake = waiters_.take();
  }
  if (cb)
    cb();
  room_waiters::wake(wake);
}

bool send_queue::request_room(size_t n, room_waiters::waker waker) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (items_.size() + n <= items_.capacity() || closed_)
    return true;
  waiters_.add(std::move(waker));
  return false;
}

bool send_queue::take(send_batch& out, std::optional<filter_type>& announcement) {
  std::vector<room_waiters::waker> wake;
  std::unique_lock<std::mutex> guard{mtx_};
  if (!waiters_.empty())
    wake = waiters_.take(); // Taking everything frees the whole queue.
  auto n = items_.take_all(out);
  size_.store(0, std::memory_order_relaxed);
  if (announcement_) {
    announcement = std::move(announcement_);
    announcement_.reset();
  }
  // Nothing found: the connection goes idle and the next push must wake it.
  if (n == 0 && !announcement)
    scheduled_ = false;
  bool result = !closed_ || n > 0 || announcement;
  guard.unlock();
  room_waiters::wake(wake);
  return result;
}

} // namespace broker::internal
