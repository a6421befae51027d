#include "broker/internal/core/send_queue.hh"

#include "broker/internal/core/local_queue.hh"

namespace broker::internal {

send_queue::send_queue(size_t capacity, overflow_policy policy)
  : capacity_(capacity == 0 ? 1 : capacity), policy_(policy) {
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
    if (closed_) {
      xs.clear();
      routes.clear();
      return result;
    }
    size_t first = 0;
    size_t n = xs.size();
    switch (policy_) {
      case overflow_policy::drop_oldest:
        if (n > capacity_) {
          result.dropped += n - capacity_;
          first = n - capacity_;
        }
        while (items_.size() + (n - first) > capacity_) {
          items_.pop_front();
          ++result.dropped;
        }
        result.accepted = n; // Evictions count as drops, as for local queues.
        break;
      case overflow_policy::drop_newest:
      case overflow_policy::block: // Not allowed for peers; behave like drop_newest.
      case overflow_policy::disconnect: {
        auto room = capacity_ > items_.size() ? capacity_ - items_.size() : 0;
        if (n > room) {
          result.dropped = n - room;
          n = room;
          if (policy_ == overflow_policy::disconnect) {
            result.disconnected = true;
            overflowed_ = true;
            closed_ = true;
          }
        }
        result.accepted = n;
        break;
      }
    }
    for (size_t i = first; i < n; ++i)
      items_.push_back(send_item{std::move(xs[i]), i < routes.size() ? routes[i] : route_info{}});
    size_.store(items_.size(), std::memory_order_relaxed);
    notify_locked(cb);
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
  if (items_.size() + n <= capacity_ || closed_)
    return true;
  wakeup_ = true;
  return false;
}

void send_queue::on_room(std::function<void()> callback) {
  std::lock_guard<std::mutex> guard{mtx_};
  room_ = std::move(callback);
}

bool send_queue::take(std::vector<send_item>& out, std::optional<filter_type>& announcement) {
  std::function<void()> room;
  std::unique_lock<std::mutex> guard{mtx_};
  if (wakeup_) {
    wakeup_ = false;
    room = room_;
  }
  scheduled_ = false;
  out.insert(out.end(), std::make_move_iterator(items_.begin()),
             std::make_move_iterator(items_.end()));
  items_.clear();
  size_.store(0, std::memory_order_relaxed);
  if (announcement_) {
    announcement = std::move(announcement_);
    announcement_.reset();
  }
  bool result = !closed_ || !out.empty() || announcement;
  guard.unlock();
  if (room)
    room();
  return result;
}

} // namespace broker::internal
