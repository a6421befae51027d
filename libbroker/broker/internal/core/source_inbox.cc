#include "broker/internal/core/source_inbox.hh"

#include <algorithm>

namespace broker::internal {

source_inbox::source_inbox(uint64_t id, size_t capacity)
  : id_(id), capacity_(capacity == 0 ? 1 : capacity) {
}

void source_inbox::on_wake(std::function<void()> callback) {
  std::lock_guard<std::mutex> guard{mtx_};
  wake_ = std::move(callback);
}

bool source_inbox::schedule_locked() {
  if (scheduled_ || pending_.empty())
    return false;
  scheduled_ = true;
  return true;
}

bool source_inbox::push(std::vector<data_message>& xs, std::chrono::milliseconds timeout,
                        size_t* pushed) {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + timeout;
  size_t done = 0;
  bool ok = true;
  while (done < xs.size()) {
    std::function<void()> wake;
    {
      std::unique_lock<std::mutex> guard{mtx_};
      auto has_room = [this] { return closed_ || pending_.size() + in_flight_ < capacity_; };
      if (timeout.count() < 0) {
        room_.wait(guard, has_room);
      } else if (!room_.wait_until(guard, deadline, has_room)) {
        ok = false;
        break;
      }
      if (closed_) {
        ok = false;
        break;
      }
      auto room = capacity_ - pending_.size() - in_flight_;
      auto n = std::min(room, xs.size() - done);
      pending_.insert(pending_.end(), std::make_move_iterator(xs.begin() + done),
                      std::make_move_iterator(xs.begin() + done + n));
      done += n;
      if (schedule_locked())
        wake = wake_;
    }
    if (wake)
      wake();
  }
  if (pushed)
    *pushed = done;
  xs.clear();
  return ok;
}

bool source_inbox::push_one(data_message x, std::chrono::milliseconds timeout) {
  std::function<void()> wake;
  {
    std::unique_lock<std::mutex> guard{mtx_};
    auto has_room = [this] { return closed_ || pending_.size() + in_flight_ < capacity_; };
    if (timeout.count() < 0)
      room_.wait(guard, has_room);
    else if (!room_.wait_for(guard, timeout, has_room))
      return false;
    if (closed_)
      return false;
    pending_.push_back(std::move(x));
    if (schedule_locked())
      wake = wake_;
  }
  if (wake)
    wake();
  return true;
}

bool source_inbox::try_push(data_message x) {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_ || pending_.size() + in_flight_ >= capacity_)
      return false;
    pending_.push_back(std::move(x));
    if (schedule_locked())
      wake = wake_;
  }
  if (wake)
    wake();
  return true;
}

size_t source_inbox::try_push_some(std::vector<data_message>& xs, size_t from) {
  std::function<void()> wake;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return 0;
    auto used = pending_.size() + in_flight_;
    auto room = used < capacity_ ? capacity_ - used : 0;
    n = std::min(room, xs.size() - from);
    pending_.insert(pending_.end(), std::make_move_iterator(xs.begin() + from),
                    std::make_move_iterator(xs.begin() + from + n));
    if (from + n < xs.size())
      release_wanted_ = true;
    if (schedule_locked())
      wake = wake_;
  }
  if (wake)
    wake();
  return n;
}

void source_inbox::on_release(std::function<void()> callback) {
  std::lock_guard<std::mutex> guard{mtx_};
  released_ = std::move(callback);
}

size_t source_inbox::free_capacity() const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto used = pending_.size() + in_flight_;
  return used < capacity_ ? capacity_ - used : 0;
}

size_t source_inbox::buffered() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return pending_.size() + in_flight_;
}

void source_inbox::close() {
  std::function<void()> released;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    closed_ = true;
    if (release_wanted_) {
      release_wanted_ = false;
      released = released_;
    }
  }
  room_.notify_all();
  if (released)
    released();
}

bool source_inbox::closed() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return closed_;
}

size_t source_inbox::take(std::vector<data_message>& out) {
  std::lock_guard<std::mutex> guard{mtx_};
  scheduled_ = false;
  auto n = pending_.size();
  if (out.empty()) {
    out.swap(pending_);
  } else {
    out.insert(out.end(), std::make_move_iterator(pending_.begin()),
               std::make_move_iterator(pending_.end()));
    pending_.clear();
  }
  in_flight_ += n;
  return n;
}

void source_inbox::release(size_t n) {
  std::function<void()> released;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    in_flight_ -= std::min(n, in_flight_);
    if (release_wanted_ && n > 0) {
      release_wanted_ = false;
      released = released_;
    }
  }
  room_.notify_all();
  if (released)
    released();
}

} // namespace broker::internal
