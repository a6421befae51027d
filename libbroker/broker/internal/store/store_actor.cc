#include "broker/internal/store/store_actor.hh"

#include "broker/internal/config/logger.hh"
#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/core/router.hh"
#include "broker/internal/core/source_stats.hh"
#include "broker/status.hh"
#include "broker/topic.hh"

#include <caf/all.hpp>

#include <future>

namespace broker::internal {

/// A batch of command messages from the store's handler.
struct command_batch {
  std::vector<data_message> xs;
};

// The actor's other messages, one type each: the behavior dispatches on types.

/// Starts the logic.
struct start_msg {};

/// The periodic tick (heartbeats, timeouts, expiries).
struct tick_msg {};

/// A sink that was full has room again: route the backlog.
struct flush_msg {};

/// Commits the backend's batch after everything already in the mailbox.
struct commit_msg {};

} // namespace broker::internal

// Local-only message types: they never cross a process boundary, so they need no
// serialization (no inspect() and no type id; CAF 0.17 allows that with this macro).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::store_task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::command_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::start_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::tick_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::flush_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::commit_msg)

namespace broker::internal {

/// The handle every sender of mailbox messages shares; cut by stop().
struct store_link {
  std::mutex mtx;
  caf::actor hdl;

  template <class... Ts>
  bool send(Ts&&... xs) {
    std::lock_guard<std::mutex> guard{mtx};
    if (!hdl)
      return false;
    caf::anon_send(hdl, std::forward<Ts>(xs)...);
    return true;
  }

  void stop() {
    std::lock_guard<std::mutex> guard{mtx};
    if (hdl) {
      caf::anon_send_exit(hdl, caf::exit_reason::user_shutdown);
      hdl = nullptr;
    }
  }
};

// -- store_sink -----------------------------------------------------------------------------

void store_sink::deliver(const data_message* xs, size_t n) {
  if (n == 0)
    return;
  pending_.fetch_add(n, std::memory_order_acq_rel);
  deliver_(std::vector<data_message>(xs, xs + n));
}

bool store_sink::request_room(size_t n, size_t capacity, room_waiters::waker waker) {
  std::lock_guard<std::mutex> guard{mtx_};
  // Under the lock: consumed() takes it before looking at the waiters.
  if (pending() + n <= capacity)
    return true;
  low_water_ = capacity / 2;
  waiters_.add(std::move(waker));
  return false;
}

void store_sink::consumed(size_t n) {
  auto left = pending_.fetch_sub(n, std::memory_order_acq_rel) - n;
  std::vector<room_waiters::waker> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!waiters_.empty() && left <= low_water_)
      wake = waiters_.take();
  }
  room_waiters::wake(wake);
}

void store_sink::close() {
  std::vector<room_waiters::waker> wake;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    wake = waiters_.take();
  }
  room_waiters::wake(wake);
}

// -- store_frontend -------------------------------------------------------------------------

store_frontend::store_frontend(std::string name, bool master, uint64_t id,
                               entity_id publisher, timespan request_timeout)
  : name_(std::move(name)),
    master_(master),
    id_(id),
    publisher_(publisher),
    timeout_(request_timeout) {}

store_frontend::~store_frontend() {
  stop();
}

bool store_frontend::post(store_task fn) {
  return link != nullptr && link->send(std::move(fn));
}

error store_frontend::write(store_op op) {
  bool schedule = false;
  {
    std::unique_lock<std::mutex> guard{mtx_};
    if (!stopped_ && in_flight_ >= max_store_writes_in_flight) {
      ++waiters_;
      cv_.wait(guard, [this] { return stopped_ || in_flight_ < max_store_writes_in_flight; });
      --waiters_;
    }
    if (stopped_)
      return error{ec::shutting_down, "store " + name_ + " is closed"};
    ++in_flight_;
    writes_.push_back(std::move(op));
    schedule = !drain_scheduled_;
    drain_scheduled_ = true;
  }
  if (!schedule)
    return {};
  // One mailbox message per burst of writes: the task takes everything queued by then.
  // It may run after the last handle is gone, so it holds only a weak reference.
  std::weak_ptr<store_frontend> weak = shared_from_this();
  auto task = [weak](store_logic& logic, timestamp now) {
    auto self = weak.lock();
    if (!self)
      return;
    std::vector<store_op> ops;
    {
      std::lock_guard<std::mutex> guard{self->mtx_};
      ops.swap(self->writes_);
      self->drain_scheduled_ = false;
    }
    auto done = [weak] {
      if (auto fe = weak.lock())
        fe->write_done();
    };
    for (auto& op : ops)
      logic.write(std::move(op), now, done);
  };
  if (!post(std::move(task))) {
    std::lock_guard<std::mutex> guard{mtx_};
    in_flight_ -= std::min(in_flight_, writes_.size());
    writes_.clear();
    drain_scheduled_ = false;
    cv_.notify_all();
    return error{ec::shutting_down, "store " + name_ + " is closed"};
  }
  return {};
}

void store_frontend::write_done() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (in_flight_ > 0)
    --in_flight_;
  if (waiters_ > 0)
    cv_.notify_all();
}

expected<data>
store_frontend::query(std::function<void(store_logic&, timestamp, store_reply)> fn,
                      timespan timeout) {
  auto promise = std::make_shared<std::promise<expected<data>>>();
  auto future = promise->get_future();
  auto task = [promise, fn = std::move(fn)](store_logic& logic, timestamp now) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    fn(logic, now, [promise, done](expected<data> x) {
      if (!done->exchange(true))
        promise->set_value(std::move(x));
    });
  };
  if (!post(std::move(task)))
    return error{ec::shutting_down, "store " + name_ + " is closed"};
  try {
    if (future.wait_for(timeout) != std::future_status::ready)
      return error{ec::request_timeout, "store " + name_ + ": no answer within "
                                          + broker::to_string(timeout)};
    return future.get();
  } catch (const std::future_error&) {
    return error{ec::shutting_down, "store " + name_ + " is closed"};
  }
}

void store_frontend::stop() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopped_ = true;
    cv_.notify_all();
  }
  if (link)
    link->stop();
}

// -- the actor ------------------------------------------------------------------------------

namespace {

struct store_setup {
  std::shared_ptr<router> routing;
  route_source self;
  std::shared_ptr<source_stats> stats;
  std::shared_ptr<store_sink> sink;
  timespan tick_interval;
  std::function<std::unique_ptr<store_logic>(store_env&)> make_logic;
};

class store_actor : public caf::event_based_actor, public store_env {
public:
  store_actor(caf::actor_config& cfg, store_setup setup)
    : caf::event_based_actor(cfg),
      router_(std::move(setup.routing)),
      self_(setup.self),
      stats_(std::move(setup.stats)),
      sink_(std::move(setup.sink)),
      tick_(std::chrono::duration_cast<std::chrono::milliseconds>(setup.tick_interval)),
      logic_(setup.make_logic(*this)) {
    set_default_handler(caf::drop);
    if (tick_.count() < 1)
      tick_ = std::chrono::milliseconds{1};
  }

  caf::behavior make_behavior() override {
    return {
      [this](start_msg) {
        logic_->start(now());
        delayed_send(this, tick_, tick_msg{});
        after_work();
      },
      [this](const command_batch& batch) {
        auto t = now();
        for (auto& msg : batch.xs)
          logic_->handle(msg.topic(), msg.impl().binary(), t);
        sink_->consumed(batch.xs.size());
        after_work();
      },
      [this](const store_task& task) {
        task(*logic_, now());
        after_work();
      },
      [this](tick_msg) {
        logic_->tick(now());
        delayed_send(this, tick_, tick_msg{});
        after_work();
      },
      [this](flush_msg) {
        flush_pending_ = false;
        push_backlog();
      },
      [this](commit_msg) {
        commit_scheduled_ = false;
        logic_->flush();
        push_backlog();
      },
    };
  }

  void on_exit() override {
    if (logic_)
      logic_->flush();
    logic_.reset();
  }

  // -- store_env ------------------------------------------------------------------------

  void send_command(const std::string& topic, std::string bytes) override {
    // No value: a command is its bytes (a peer sends them as is; stores decode them).
    backlog_.emplace_back(new message_impl(topic, data{}, std::move(bytes), route_info{},
                                           message_kind::command));
  }

  void store_event(data ev) override {
    backlog_.emplace_back(new message_impl(std::string{topic::store_events}, std::move(ev)));
  }

  void write_failed(const error& err) override {
    backlog_.emplace_back(new message_impl(std::string{topic::errors}, to_data(err)));
  }

  void warn(const std::string& text) override {
    log(log_level::warning, "store", text);
  }

private:
  /// Commits the backend's batch after everything already in the mailbox: one
  /// transaction for a burst of writes.
  void after_work() {
    push_backlog();
    if (!commit_scheduled_) {
      commit_scheduled_ = true;
      send(this, commit_msg{});
    }
  }

  /// Routes what the logic published; what a full sink cannot take waits for its waker.
  void push_backlog() {
    if (flush_pending_ || backlog_pos_ == backlog_.size())
      return;
    auto before = backlog_pos_;
    auto res = router_->route(self_, backlog_.data(), backlog_.size(), backlog_pos_,
                              waker());
    stats_->add_routed(backlog_pos_ - before);
    if (res == route_status::parked) {
      flush_pending_ = true; // The waker sends flush_msg.
      stats_->set_state(true, backlog_.size() - backlog_pos_);
      return;
    }
    // Done, or the endpoint shut down (nobody left to receive the rest).
    stats_->set_state(false, 0);
    backlog_.clear();
    backlog_pos_ = 0;
  }

  room_waker waker() {
    return [hdl = caf::actor_cast<caf::actor>(this)] { caf::anon_send(hdl, flush_msg{}); };
  }

  static timestamp now() {
    return broker::now();
  }

  std::shared_ptr<router> router_;
  route_source self_;
  std::shared_ptr<source_stats> stats_;
  std::shared_ptr<store_sink> sink_;
  std::chrono::milliseconds tick_;
  std::unique_ptr<store_logic> logic_;
  std::vector<data_message> backlog_;
  size_t backlog_pos_ = 0;
  bool flush_pending_ = false;
  bool commit_scheduled_ = false;
};

} // namespace

std::shared_ptr<store_frontend>
spawn_store(core_runtime& rt, uint64_t id, handler_kind kind,
            const std::vector<std::string>& topics, size_t capacity, timespan tick_interval,
            std::shared_ptr<store_frontend> fe,
            std::function<std::unique_ptr<store_logic>(store_env&)> make_logic) {
  auto* sys = rt.actor_system();
  if (sys == nullptr)
    return nullptr;
  auto link = std::make_shared<store_link>();
  auto sink = std::make_shared<store_sink>([link](std::vector<data_message> xs) {
    link->send(command_batch{std::move(xs)});
  });
  auto stats = std::make_shared<source_stats>(source_kind::store);
  store_setup setup{rt.routing(), route_source{id, source_kind::store}, stats, sink,
                    tick_interval, std::move(make_logic)};
  link->hdl = sys->spawn<store_actor>(std::move(setup));
  fe->link = link;
  filter_type filter;
  for (auto& x : topics)
    filter.emplace_back(x);
  auto attached = rt.run([stats, sink, id, kind, capacity, filter](core_state& st) {
    st.add_source(id, stats);
    st.add_handler(std::make_shared<store_handler>(id, kind, capacity, sink), filter);
  });
  if (!attached) {
    fe->stop();
    return nullptr;
  }
  link->send(start_msg{});
  return fe;
}

} // namespace broker::internal
