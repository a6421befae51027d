#pragma once

// core_runtime: the CAF actor system and the core actor, behind a CAF-free interface.
//
// Threads: CAF's scheduler runs the core actor (doc/architecture.md, "Threads"). Any thread may
// call post(), call() and the wake/room callbacks; they turn into one mailbox message each. The
// callbacks stay safe after shutdown: they hold a shared link that shutdown() cuts, after which
// they do nothing.
//
// Shutdown: shutdown() runs core_state::shutdown() on the core (consumers see the end of
// their streams, blocked publishers return), stops the actor and destroys the actor system.
// It never waits on an application thread, so it cannot hang on a slow consumer.

#include "broker/internal/core/core.hh"

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>

namespace broker::internal {

/// A unit of work that runs on the core actor's thread.
using core_task = std::function<void(core_state&)>;

/// See the file comment.
class core_runtime {
public:
  /// Starts the actor system with `scheduler_threads` workers and spawns the core.
  core_runtime(core_options opts, size_t scheduler_threads);
  ~core_runtime();

  core_runtime(const core_runtime&) = delete;
  core_runtime& operator=(const core_runtime&) = delete;

  /// Runs `task` on the core, asynchronously. Dropped silently after shutdown.
  void post(core_task task);

  /// Runs `fn` on the core and waits for its (non-void) result; nullopt after shutdown
  /// or if the core does not answer within `timeout`.
  template <class F>
  auto call(F fn, std::chrono::milliseconds timeout = default_call_timeout)
    -> std::optional<decltype(fn(std::declval<core_state&>()))> {
    using result_type = decltype(fn(std::declval<core_state&>()));
    auto promise = std::make_shared<std::promise<result_type>>();
    auto future = promise->get_future();
    post([promise, fn = std::move(fn)](core_state& st) mutable {
      promise->set_value(fn(st));
    });
    try {
      if (future.wait_for(timeout) != std::future_status::ready)
        return std::nullopt;
      return future.get();
    } catch (const std::future_error&) {
      return std::nullopt; // The task was dropped unrun: the core is gone.
    }
  }

  /// Runs `fn` on the core and waits until it ran; false after shutdown or timeout.
  template <class F>
  bool run(F fn, std::chrono::milliseconds timeout = default_call_timeout) {
    return call([fn = std::move(fn)](core_state& st) mutable {
             fn(st);
             return true;
           }, timeout)
      .has_value();
  }

  /// How long call() and run() wait for the core by default.
  static constexpr std::chrono::milliseconds default_call_timeout{30000};

  /// A callback that tells the core that source `id` has pending messages.
  std::function<void()> wake_callback(uint64_t source_id);

  /// A callback that tells the core that handler `id` has room again.
  std::function<void()> room_callback(uint64_t handler_id);

  /// The CAF actor system as an opaque pointer (store_actor.cc spawns store actors in
  /// it), or nullptr after shutdown. Keeps CAF out of this header.
  void* actor_system() noexcept;

  /// See the file comment. Idempotent.
  void shutdown();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
  std::shared_ptr<struct core_link> link_;
  std::mutex shutdown_mtx_;
};

} // namespace broker::internal
