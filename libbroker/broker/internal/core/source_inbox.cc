#include "broker/internal/core/source_inbox.hh"

#include <algorithm>

namespace broker::internal {

namespace {

source_inbox::callback make_callback(std::function<void()> f) {
  if (!f)
    return nullptr;
  return std::make_shared<const std::function<void()>>(std::move(f));
}

void fire(const source_inbox::callback& cb) {
  if (cb)
    (*cb)();
}

} // namespace

source_inbox::source_inbox(uint64_t id, size_t capacity)
  : id_(id), capacity_(capacity == 0 ? 1 : capacity) {
}

void source_inbox::on_wake(std::function<void()> f) {
  auto cb = make_callback(std::move(f));
  std::lock_guard<std::mutex> guard{mtx_};
  wake_ = std::move(cb);
}

void source_inbox::on_release(std::function<void()> f) {
  auto cb = make_callback(std::move(f));
  std::lock_guard<std::mutex> guard{mtx_};
  released_ = std::move(cb);
}

bool source_inbox::schedule_locked() {
  if (scheduled_ || (pending_.empty() && events_.empty()))
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
    callback wake;
    {
      std::unique_lock<std::mutex> guard{mtx_};
      auto has_room = [this] { return closed_ || room_locked() > 0; };
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
      auto n = std::min(room_locked(), xs.size() - done);
      pending_.insert(pending_.end(), std::make_move_iterator(xs.begin() + done),
                      std::make_move_iterator(xs.begin() + done + n));
      if (max_bytes_ > 0)
        sizes_.insert(sizes_.end(), n, 0);
      done += n;
      if (schedule_locked())
        wake = wake_;
    }
    fire(wake);
  }
  if (pushed)
    *pushed = done;
  xs.clear();
  return ok;
}

bool source_inbox::push_one(data_message x, std::chrono::milliseconds timeout) {
  callback wake;
  {
    std::unique_lock<std::mutex> guard{mtx_};
    auto has_room = [this] { return closed_ || room_locked() > 0; };
    if (timeout.count() < 0)
      room_.wait(guard, has_room);
    else if (!room_.wait_for(guard, timeout, has_room))
      return false;
    if (closed_)
      return false;
    pending_.push_back(std::move(x));
    if (max_bytes_ > 0)
      sizes_.push_back(0);
    if (schedule_locked())
      wake = wake_;
  }
  fire(wake);
  return true;
}

bool source_inbox::try_push(data_message x) {
  callback wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_ || room_locked() == 0)
      return false;
    pending_.push_back(std::move(x));
    if (max_bytes_ > 0)
      sizes_.push_back(0);
    if (schedule_locked())
      wake = wake_;
  }
  fire(wake);
  return true;
}

size_t source_inbox::try_push_some(std::vector<data_message>& xs, size_t from) {
  callback wake;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return 0;
    n = std::min(room_locked(), xs.size() - from);
    pending_.insert(pending_.end(), std::make_move_iterator(xs.begin() + from),
                    std::make_move_iterator(xs.begin() + from + n));
    if (max_bytes_ > 0)
      sizes_.insert(sizes_.end(), n, 0);
    if (from + n < xs.size())
      release_wanted_ = true;
    if (schedule_locked())
      wake = wake_;
  }
  fire(wake);
  return n;
}

bool source_inbox::try_push_some(input_batch& in) {
  callback wake;
  bool all = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return false;
    auto room = room_locked();
    auto next_is_detach = [&] {
      return in.event_pos < in.events.size() && in.events[in.event_pos].first == in.msg_pos
             && in.events[in.event_pos].second.what == source_event::kind::detach;
    };
    // Hand over messages up to the next event, then the event, and so on, while the window
    // has room (a detach always goes in).
    while ((room > 0 && !bytes_full_locked()) || next_is_detach()) {
      auto next_event = in.event_pos < in.events.size() ? in.events[in.event_pos].first
                                                        : in.msgs.size();
      if (in.msg_pos < next_event) {
        auto size = in.msg_pos < in.sizes.size() ? in.sizes[in.msg_pos] : 0;
        pending_.push_back(std::move(in.msgs[in.msg_pos]));
        if (max_bytes_ > 0)
          track_locked(size);
        ++in.msg_pos;
        --room;
        continue;
      }
      if (in.event_pos == in.events.size())
        break;
      events_.emplace_back(pending_.size(), std::move(in.events[in.event_pos].second));
      if (max_bytes_ > 0)
        track_locked(0);
      ++in.event_pos;
      room -= std::min<size_t>(room, 1);
    }
    all = in.done();
    if (!all)
      release_wanted_ = true;
    if (schedule_locked())
      wake = wake_;
  }
  fire(wake);
  return all;
}

void source_inbox::push_final(input_batch& in) {
  callback wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!closed_) {
      auto move_msgs_until = [&](size_t end) {
        for (; in.msg_pos < end; ++in.msg_pos) {
          pending_.push_back(std::move(in.msgs[in.msg_pos]));
          if (max_bytes_ > 0)
            track_locked(in.msg_pos < in.sizes.size() ? in.sizes[in.msg_pos] : 0);
        }
      };
      for (; in.event_pos < in.events.size(); ++in.event_pos) {
        auto& [pos, ev] = in.events[in.event_pos];
        move_msgs_until(pos);
        events_.emplace_back(pending_.size(), std::move(ev));
        if (max_bytes_ > 0)
          track_locked(0);
      }
      move_msgs_until(in.msgs.size());
      release_wanted_ = false;
      if (schedule_locked())
        wake = wake_;
    }
    released_ = nullptr;
  }
  in.clear();
  fire(wake);
}

size_t source_inbox::free_capacity() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return bytes_full_locked() ? 0 : room_locked();
}

size_t source_inbox::buffered() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return pending_.size() + events_.size() + in_flight_;
}

size_t source_inbox::pending_events() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return events_.size();
}

void source_inbox::close() {
  callback released;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    closed_ = true;
    if (release_wanted_) {
      release_wanted_ = false;
      released = released_;
    }
  }
  room_.notify_all();
  fire(released);
}

bool source_inbox::closed() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return closed_;
}

size_t source_inbox::take(std::vector<data_message>& msgs,
                          std::vector<positioned_event>& events) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto offset = msgs.size();
  auto n = pending_.size() + events_.size();
  if (n == 0) {
    scheduled_ = false;
    return 0;
  }
  for (auto& ev : events_)
    events.emplace_back(ev.first + offset, std::move(ev.second));
  events_.clear();
  if (msgs.empty()) {
    msgs.swap(pending_);
  } else {
    msgs.insert(msgs.end(), std::make_move_iterator(pending_.begin()),
                std::make_move_iterator(pending_.end()));
    pending_.clear();
  }
  in_flight_ += n;
  taken_ += msgs.size() - offset;
  return n;
}

void source_inbox::release(size_t n) {
  callback released;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    in_flight_ -= std::min(n, in_flight_);
    for (size_t i = 0; i < n && !sizes_.empty(); ++i) {
      bytes_ -= sizes_.front();
      sizes_.pop_front();
    }
    if (release_wanted_ && n > 0) {
      release_wanted_ = false;
      released = released_;
    }
  }
  room_.notify_all();
  fire(released);
}

} // namespace broker::internal
