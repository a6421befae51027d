#include "broker/internal/core/core_runtime.hh"

#include "broker/internal/io/gate.hh"

#include <caf/all.hpp>

#include <mutex>

// Local-only message types: they never cross a process boundary, so they need no
// serialization (no inspect() and no type id; CAF 0.17 allows that with this macro).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(broker::internal::core_task)

namespace broker::internal {

namespace {

using wake_atom = caf::atom_constant<caf::atom("wake")>;
using room_atom = caf::atom_constant<caf::atom("room")>;
using run_atom = caf::atom_constant<caf::atom("run")>;

/// The core actor: a thin shell that forwards its mailbox to core_state.
class core_actor : public caf::event_based_actor {
public:
  core_actor(caf::actor_config& cfg, core_options opts)
    : caf::event_based_actor(cfg), state_(std::move(opts)) {
    // An unexpected message is a bug, not a reason to print and die.
    set_default_handler(caf::drop);
    // A source that keeps the core busy yields after a few rounds and wakes itself again.
    state_.on_reschedule([this](uint64_t id) {
      send(caf::actor_cast<caf::actor>(this), wake_atom::value, id);
    });
  }

  caf::behavior make_behavior() override {
    return {
      [this](wake_atom, uint64_t id) { state_.on_wake(id); },
      [this](room_atom, uint64_t id) { state_.on_room(id); },
      [this](run_atom, const core_task& task) {
        task(state_);
        state_.settle();
      },
    };
  }

  void on_exit() override {
    state_.shutdown();
  }

private:
  core_state state_;
};

} // namespace

/// The handle that callbacks share. Its gate closes on shutdown, so late callbacks do
/// nothing, and callbacks in flight finish before the actor system goes away. Passing the
/// gate takes no lock: every wake of the core from an I/O thread goes through here.
struct core_link {
  gate open;
  caf::actor hdl; // Set before the first callback exists; reset only after the gate closed.

  template <class... Ts>
  void send(Ts&&... xs) {
    open.pass([&] { caf::anon_send(hdl, std::forward<Ts>(xs)...); });
  }
};

/// CAF settings for the endpoint's actor system.
///
/// Scheduler: CAF's work-stealing workers poll for jobs before they sleep: by default 100
/// tight attempts, then 500 attempts 50 us apart (25 ms), then a condition variable with
/// a 10 ms timeout. An idle node then still wakes each worker 100 times a second, and a
/// node receiving a message every 50 us spends most of its CPU in those short sleeps. Our
/// workers spin briefly (a burst usually brings the next job within microseconds), then
/// block on the condition variable, which the enqueue of the next job signals; the
/// timeout only bounds how late a worker steals from a busy neighbour.
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
  impl(core_options opts, size_t threads) : cfg(threads), sys(cfg) {
    core = sys.spawn<core_actor>(std::move(opts));
  }

  runtime_config cfg; // Must outlive sys, which keeps a reference.
  caf::actor_system sys;
  caf::actor core;
};

core_runtime::core_runtime(core_options opts, size_t scheduler_threads)
  : impl_(std::make_unique<impl>(std::move(opts), scheduler_threads == 0 ? 1
                                                                          : scheduler_threads)),
    link_(std::make_shared<core_link>()) {
  link_->hdl = impl_->core;
}

core_runtime::~core_runtime() {
  shutdown();
}

void core_runtime::post(core_task task) {
  link_->send(run_atom::value, std::move(task));
}

std::function<void()> core_runtime::wake_callback(uint64_t source_id) {
  return [link = link_, source_id] { link->send(wake_atom::value, source_id); };
}

std::function<void()> core_runtime::room_callback(uint64_t handler_id) {
  return [link = link_, handler_id] { link->send(room_atom::value, handler_id); };
}

void* core_runtime::actor_system() noexcept {
  std::lock_guard<std::mutex> guard{shutdown_mtx_};
  return impl_ ? &impl_->sys : nullptr;
}

void core_runtime::shutdown() {
  // Close the gate first: from now on no callback reaches the actor.
  link_->open.close();
  std::lock_guard<std::mutex> guard{shutdown_mtx_};
  link_->hdl = nullptr;
  if (!impl_)
    return;
  // on_exit() closes every handler and source, so nobody keeps waiting on us.
  caf::anon_send_exit(impl_->core, caf::exit_reason::user_shutdown);
  impl_->core = nullptr;
  // Destroying the system waits for the core actor to terminate; the core never blocks,
  // so this is bounded.
  impl_.reset();
}

} // namespace broker::internal
