#include "broker/internal/core/core_runtime.hh"

#include "broker/internal/io/gate.hh"

#include <caf/all.hpp>

#include <mutex>

namespace broker::internal {

/// Asks the core to free retired snapshots and handlers (core_runtime.hh, "Memory").
struct collect_msg {};

} // namespace broker::internal

// Local-only message types: they never cross a process boundary, so they need no
// serialization (no inspect() and no type id; CAF 0.17 allows that with this macro). Each
// kind of message is a type of its own, so the behavior dispatches on types, not atoms.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::core_task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::collect_msg)

namespace broker::internal {

namespace {

/// How long the core waits before it looks again for garbage that a reader still held.
constexpr std::chrono::milliseconds collect_delay{5};

/// The core actor: a thin shell that runs tasks on core_state.
class core_actor : public caf::event_based_actor {
public:
  core_actor(caf::actor_config& cfg, endpoint_id id, std::shared_ptr<router> r)
    : caf::event_based_actor(cfg), state_(id, std::move(r)) {
    // An unexpected message is a bug, not a reason to print and die.
    set_default_handler(caf::drop);
  }

  caf::behavior make_behavior() override {
    return {
      [this](const core_task& task) {
        task(state_);
        state_.commit();
        collect_later();
      },
      [this](collect_msg) {
        collect_scheduled_ = false;
        collect_later();
      },
    };
  }

  void on_exit() override {
    state_.shutdown();
  }

private:
  void collect_later() {
    if (!collect_scheduled_ && state_.collect_garbage()) {
      collect_scheduled_ = true;
      delayed_send(this, collect_delay, collect_msg{});
    }
  }

  core_state state_;
  bool collect_scheduled_ = false;
};

} // namespace

/// The handle that callers share. Its gate closes on shutdown, so late posts do nothing,
/// and posts in flight finish before the actor system goes away.
struct core_link {
  gate open;
  caf::actor hdl; // Set before the first post; reset only after the gate closed.

  template <class... Ts>
  void send(Ts&&... xs) {
    open.pass([&] { caf::anon_send(hdl, std::forward<Ts>(xs)...); });
  }
};

/// CAF settings for the endpoint's actor system.
///
/// Scheduler: CAF's work-stealing workers poll for jobs before they sleep: by default 100
/// tight attempts, then 500 attempts 50 us apart (25 ms), then a condition variable with
/// a 10 ms timeout. An idle node then still wakes each worker 100 times a second. Our
/// workers spin briefly, then block on the condition variable, which the enqueue of the
/// next job signals; the timeout only bounds how late a worker steals from a busy
/// neighbour. Since data no longer passes through the actors, jobs are rare (subscription
/// changes, store traffic), so a short spin is enough.
struct runtime_config : caf::actor_system_config {
  explicit runtime_config(size_t threads) {
    set("scheduler.max-threads", threads);
    set("work-stealing.aggressive-poll-attempts", size_t{aggressive_poll_attempts});
    set("work-stealing.moderate-poll-attempts", size_t{0});
    set("work-stealing.relaxed-sleep-duration", caf::timespan{relaxed_sleep});
  }

  static constexpr size_t aggressive_poll_attempts = 100;
  static constexpr std::chrono::milliseconds relaxed_sleep{1000};
};

struct core_runtime::impl {
  impl(const endpoint_id& id, std::shared_ptr<router> r, size_t threads)
    : cfg(threads), sys(cfg) {
    core = sys.spawn<core_actor>(id, std::move(r));
  }

  runtime_config cfg; // Must outlive sys, which keeps a reference.
  caf::actor_system sys;
  caf::actor core;
};

core_runtime::core_runtime(router_options opts, size_t scheduler_threads)
  : router_(std::make_shared<router>(opts)), link_(std::make_shared<core_link>()) {
  // A handler that overflows under `disconnect` is removed by the core; the router tells
  // it from whichever thread noticed.
  std::weak_ptr<core_link> weak = link_;
  router_->on_disconnect([weak](uint64_t id) {
    if (auto link = weak.lock())
      link->send(core_task{[id](core_state& st) { st.on_overflow(id); }});
  });
  impl_ = std::make_unique<impl>(opts.id, router_,
                                 scheduler_threads == 0 ? 1 : scheduler_threads);
  link_->hdl = impl_->core;
}

core_runtime::~core_runtime() {
  shutdown();
}

void core_runtime::post(core_task task) {
  link_->send(std::move(task));
}

caf::actor_system* core_runtime::actor_system() noexcept {
  std::lock_guard<std::mutex> guard{shutdown_mtx_};
  return impl_ ? &impl_->sys : nullptr;
}

void core_runtime::shutdown() {
  // Close the gate first: from now on nothing reaches the actor.
  link_->open.close();
  std::lock_guard<std::mutex> guard{shutdown_mtx_};
  link_->hdl = nullptr;
  if (!impl_)
    return;
  // on_exit() closes every handler and unpublishes the index, so nobody keeps waiting on us.
  caf::anon_send_exit(impl_->core, caf::exit_reason::user_shutdown);
  impl_->core = nullptr;
  // Destroying the system waits for the core actor to terminate; the core never blocks,
  // so this is bounded.
  impl_.reset();
  // Should the actor not have run its on_exit (it never started), stop routing here.
  router_->shutdown();
}

} // namespace broker::internal
