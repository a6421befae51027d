#pragma once

// core_runtime: the CAF actor system, the core actor and the router, behind a CAF-free
// interface.
//
// Threads: CAF's scheduler runs the core actor (doc/architecture.md, "Threads"), which
// changes the index and the tables; every other thread routes its own messages through
// routing() (router.hh) without involving the actor. Any thread may call post(), call() and
// run(); each is one mailbox message. They stay safe after shutdown: they hold a shared
// link that shutdown() cuts, after which they do nothing.
//
// Memory: the core frees retired snapshots and handlers after each task; while some are
// still visible to a routing thread it looks again after a short delay (a timer that runs
// only while something waits to be freed, so an idle node has none).
//
// Shutdown: shutdown() runs core_state::shutdown() on the core (consumers see the end of
// their streams, blocked publishers return, nothing routes any more), stops the actor and
// destroys the actor system. It never waits on an application thread, so it cannot hang on
// a slow consumer.

#include "broker/internal/core/core.hh"

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>

namespace caf {
class actor_system;
} // namespace caf

namespace broker::internal {

/// A unit of work that runs on the core actor's thread.
using core_task = std::function<void(core_state&)>;

/// See the file comment.
class core_runtime {
public:
  /// Starts the actor system with `scheduler_threads` workers and spawns the core.
  core_runtime(router_options opts, size_t scheduler_threads);
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
      auto result = fn(st);
      // Answer only once the change is published: a caller that subscribed and then
      // publishes must find its subscription in the snapshot it routes on.
      st.commit();
      promise->set_value(std::move(result));
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

  /// The router every source routes through (alive as long as someone holds it; after
  /// shutdown it routes nothing).
  const std::shared_ptr<router>& routing() const noexcept { return router_; }

  /// The CAF actor system (store_actor.cc spawns store actors in it), or nullptr after
  /// shutdown.
  caf::actor_system* actor_system() noexcept;

  /// See the file comment. Idempotent.
  void shutdown();

private:
  struct impl;
  std::shared_ptr<router> router_;
  std::unique_ptr<impl> impl_;
  std::shared_ptr<struct core_link> link_;
  std::mutex shutdown_mtx_;
};

} // namespace broker::internal
