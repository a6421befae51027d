#include "broker/internal/core/core_runtime.hh"

#include <caf/all.hpp>

#include <mutex>

// Local-only message types: they never cross a process boundary, so they need no
// serialization (TOOLCHAIN.md §5).
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

/// The handle that callbacks share; cut on shutdown so late callbacks do nothing.
struct core_link {
  std::mutex mtx;
  caf::actor hdl;

  template <class... Ts>
  void send(Ts&&... xs) {
    std::lock_guard<std::mutex> guard{mtx};
    if (hdl)
      caf::anon_send(hdl, std::forward<Ts>(xs)...);
  }
};

/// CAF settings for the endpoint's actor system.
struct runtime_config : caf::actor_system_config {
  explicit runtime_config(size_t threads) {
    set("scheduler.max-threads", threads);
    // The default policy would print "*** unhandled down message" etc.; we handle all.
  }
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
  {
    // Cut the link first: from now on no callback reaches the actor.
    std::lock_guard<std::mutex> guard{link_->mtx};
    link_->hdl = nullptr;
  }
  std::lock_guard<std::mutex> guard{shutdown_mtx_};
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
