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

push_result send_queue::push(std::vector<data_message>& xs, std::vector<route_info>& routes) {
  push_result result;
  std::function<void()> cb;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!closed_) {
      scratch_.clear();
      for (size_t i = 0; i < xs.size(); ++i)
        scratch_.push_back(send_item{std::move(xs[i]), i < routes.size() ? routes[i] : route_info{}});
      result = items_.push(scratch_.data(), scratch_.size());
      scratch_.clear();
      if (result.disconnected) {
        overflowed_ = true;
        closed_ = true;
      }
      size_.store(items_.size(), std::memory_order_relaxed);
      notify_locked(cb);
    }
  }
  xs.clear();
  routes.clear();
  if (cb)
    cb();
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
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_.exchange(true))
      return;
    notify_locked(cb);
  }
  if (cb)
    cb();
}

bool send_queue::request_wakeup(size_t n) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (items_.size() + n <= items_.capacity() || closed_)
    return true;
  wakeup_ = true;
  return false;
}

void send_queue::on_room(std::function<void()> callback) {
  std::lock_guard<std::mutex> guard{mtx_};
  room_ = std::move(callback);
}

bool send_queue::take(send_batch& out, std::optional<filter_type>& announcement) {
  std::function<void()> room;
  std::unique_lock<std::mutex> guard{mtx_};
  if (wakeup_) {
    wakeup_ = false;
    room = room_;
  }
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
  if (room)
    room();
  return result;
}

} // namespace broker::internal
