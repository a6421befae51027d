#include "broker/internal/core/local_source.hh"

namespace broker::internal {

local_source::local_source(std::shared_ptr<router> r, uint64_t id, source_kind kind)
  : router_(std::move(r)),
    src_{id, kind},
    stats_(std::make_shared<source_stats>(kind)),
    wait_(std::make_shared<wait_state>()) {
}

bool local_source::publish(const data_message* xs, size_t n, std::chrono::milliseconds timeout,
                           size_t* routed) {
  using clock = std::chrono::steady_clock;
  auto deadline = timeout.count() < 0 ? clock::time_point::max() : clock::now() + timeout;
  std::weak_ptr<wait_state> weak = wait_;
  auto waker = [weak] {
    if (auto st = weak.lock()) {
      std::lock_guard<std::mutex> guard{st->mtx};
      ++st->wakeups;
      st->cv.notify_all();
    }
  };
  size_t pos = 0;
  bool ok = true;
  while (pos < n) {
    uint64_t seen;
    {
      std::lock_guard<std::mutex> guard{wait_->mtx};
      if (wait_->closed) {
        ok = false;
        break;
      }
      seen = wait_->wakeups;
    }
    auto before = pos;
    auto res = router_->route(src_, xs, n, pos, waker);
    stats_->add_routed(pos - before);
    if (res == route_status::done)
      break;
    if (res == route_status::closed) {
      ok = false;
      break;
    }
    // Parked: wait for the sink's waker (or a close), then try again.
    stats_->set_state(true, n - pos);
    std::unique_lock<std::mutex> guard{wait_->mtx};
    auto woken = [&] { return wait_->wakeups != seen || wait_->closed; };
    if (deadline == clock::time_point::max())
      wait_->cv.wait(guard, woken);
    else if (!wait_->cv.wait_until(guard, deadline, woken)) {
      ok = false;
      break;
    }
  }
  stats_->set_state(false, 0);
  if (routed != nullptr)
    *routed = pos;
  return ok && pos == n;
}

bool local_source::try_publish(const data_message& x) {
  if (closed())
    return false;
  size_t pos = 0;
  auto res = router_->route(src_, &x, 1, pos);
  stats_->add_routed(pos);
  return res == route_status::done;
}

void local_source::close() {
  std::lock_guard<std::mutex> guard{wait_->mtx};
  wait_->closed = true;
  wait_->cv.notify_all();
}

bool local_source::closed() const {
  std::lock_guard<std::mutex> guard{wait_->mtx};
  return wait_->closed;
}

} // namespace broker::internal
