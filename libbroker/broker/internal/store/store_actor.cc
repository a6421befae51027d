#include "broker/internal/store/store_actor.hh"

#include "broker/internal/config/logger.hh"
#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/core/source_inbox.hh"
#include "broker/status.hh"
#include "broker/topic.hh"

#include <caf/all.hpp>

#include <future>

namespace broker::internal {

/// A batch of command messages from the store's handler.
struct command_batch {
  std::vector<data_message> xs;
};

} // namespace broker::internal

// Local-only message types: they never cross a process boundary, so they need no
// serialization (no inspect() and no type id; CAF 0.17 allows that with this macro).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::store_task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::command_batch)

namespace broker::internal {

namespace {

using cmd_atom = caf::atom_constant<caf::atom("cmd")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using commit_atom = caf::atom_constant<caf::atom("commit")>;
using start_atom = caf::atom_constant<caf::atom("start")>;

} // namespace

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

void store_sink::deliver(std::vector<data_message>& xs) {
  if (xs.empty())
    return;
  pending_.fetch_add(xs.size(), std::memory_order_acq_rel);
  deliver_(std::move(xs));
  xs.clear();
}

bool store_sink::request_wakeup(size_t n, size_t capacity) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (pending() + n <= capacity)
    return true;
  wakeup_ = true;
  low_water_ = capacity / 2;
  // Re-check under the lock: consumed() takes it before looking at wakeup_.
  if (pending() + n <= capacity) {
    wakeup_ = false;
    return true;
  }
  return false;
}

void store_sink::consumed(size_t n) {
  auto left = pending_.fetch_sub(n, std::memory_order_acq_rel) - n;
  std::function<void()> fire;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (wakeup_ && left <= low_water_) {
      wakeup_ = false;
      fire = room_;
    }
  }
  if (fire)
    fire();
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
  return link != nullptr && link->send(run_atom::value, std::move(fn));
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
  std::shared_ptr<source_inbox> inbox;
  std::shared_ptr<store_sink> sink;
  timespan tick_interval;
  std::function<std::unique_ptr<store_logic>(store_env&)> make_logic;
};

class store_actor : public caf::event_based_actor, public store_env {
public:
  store_actor(caf::actor_config& cfg, store_setup setup)
    : caf::event_based_actor(cfg),
      inbox_(std::move(setup.inbox)),
      sink_(std::move(setup.sink)),
      tick_(std::chrono::duration_cast<std::chrono::milliseconds>(setup.tick_interval)),
      logic_(setup.make_logic(*this)) {
    set_default_handler(caf::drop);
    if (tick_.count() < 1)
      tick_ = std::chrono::milliseconds{1};
  }

  caf::behavior make_behavior() override {
    return {
      [this](start_atom) {
        logic_->start(now());
        delayed_send(this, tick_, tick_atom::value);
        after_work();
      },
      [this](cmd_atom, const command_batch& batch) {
        auto t = now();
        for (auto& msg : batch.xs)
          logic_->handle(msg.topic(), msg.impl().binary(), t);
        sink_->consumed(batch.xs.size());
        after_work();
      },
      [this](run_atom, const store_task& task) {
        task(*logic_, now());
        after_work();
      },
      [this](tick_atom) {
        logic_->tick(now());
        delayed_send(this, tick_, tick_atom::value);
        after_work();
      },
      [this](flush_atom) { push_backlog(); },
      [this](commit_atom) {
        commit_scheduled_ = false;
        logic_->flush();
        push_backlog();
      },
    };
  }

  void on_exit() override {
    if (logic_)
      logic_->flush();
    inbox_->close();
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
      send(this, commit_atom::value);
    }
  }

  void push_backlog() {
    if (backlog_pos_ < backlog_.size())
      backlog_pos_ += inbox_->try_push_some(backlog_, backlog_pos_);
    if (backlog_pos_ == backlog_.size()) {
      backlog_.clear();
      backlog_pos_ = 0;
    }
  }

  static timestamp now() {
    return broker::now();
  }

  std::shared_ptr<source_inbox> inbox_;
  std::shared_ptr<store_sink> sink_;
  std::chrono::milliseconds tick_;
  std::unique_ptr<store_logic> logic_;
  std::vector<data_message> backlog_;
  size_t backlog_pos_ = 0;
  bool commit_scheduled_ = false;
};

} // namespace

std::shared_ptr<store_frontend>
spawn_store(core_runtime& rt, uint64_t id, handler_kind kind,
            const std::vector<std::string>& topics, size_t capacity, timespan tick_interval,
            std::shared_ptr<store_frontend> fe,
            std::function<std::unique_ptr<store_logic>(store_env&)> make_logic) {
  auto* sys = static_cast<caf::actor_system*>(rt.actor_system());
  if (sys == nullptr)
    return nullptr;
  auto link = std::make_shared<store_link>();
  auto sink = std::make_shared<store_sink>([link](std::vector<data_message> xs) {
    link->send(cmd_atom::value, command_batch{std::move(xs)});
  });
  sink->on_room(rt.room_callback(id));
  auto inbox = std::make_shared<source_inbox>(id, capacity);
  inbox->on_wake(rt.wake_callback(id));
  inbox->on_release([link] { link->send(flush_atom::value); });
  store_setup setup{inbox, sink, tick_interval, std::move(make_logic)};
  link->hdl = sys->spawn<store_actor>(std::move(setup));
  fe->link = link;
  filter_type filter;
  for (auto& x : topics)
    filter.emplace_back(x);
  auto attached = rt.run([inbox, sink, id, kind, capacity, filter](core_state& st) {
    st.add_source(inbox);
    st.add_handler(std::make_unique<store_handler>(id, kind, capacity, sink), filter);
  });
  if (!attached) {
    fe->stop();
    return nullptr;
  }
  link->send(start_atom::value);
  return fe;
}

} // namespace broker::internal
