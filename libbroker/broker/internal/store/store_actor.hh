#pragma once

// store_actor: runs one data store (master or clone) as an actor on CAF's scheduler
// (doc/architecture.md, "Threads" and "Data stores"), behind a CAF-free interface.
//
// Pieces and threads:
//   - store_handler (any routing thread): the store's output handler in the core's index,
//     policy `block`, accepting command messages only. A push hands the run to the actor as
//     one mailbox message; buffered() counts what the actor has not processed yet, so
//     sources park when a store falls behind and no other handler loses anything.
//   - the actor (a CAF worker): drives store_logic with those batches (each command's received
//     bytes: the logic decodes them), with API requests and with a periodic tick; it routes
//     what it publishes itself (core/router.hh) and never blocks: what a full sink cannot
//     take waits in the actor until the sink's waker tells it to try again. Commands it
//     publishes carry their encoding as the message's binary form, which peers send as is.
//   - store_frontend (any thread): what the public `store` handles share. Requests become
//     mailbox messages; blocking calls wait on a promise with a timeout. Writes are bounded
//     in flight: a writer waits while too many of its writes are unprocessed.

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/internal/core/handler.hh"
#include "broker/internal/core/room_waiters.hh"
#include "broker/internal/store/store_logic.hh"
#include "broker/time.hh"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace broker::internal {

class core_runtime;
struct store_link;

/// Counts the commands a store's handler handed to its actor (see the file comment).
class store_sink {
public:
  using deliver_fn = std::function<void(std::vector<data_message>)>;

  explicit store_sink(deliver_fn fn) : deliver_(std::move(fn)) {}

  size_t pending() const noexcept { return pending_.load(std::memory_order_acquire); }

  /// Routing side: hands copies of `n` messages to the actor.
  void deliver(const data_message* xs, size_t n);

  /// Routing side: true if `n` more fit under `capacity` now; otherwise `waker` runs once
  /// when the actor has worked the backlog down to half the capacity (or the store stops).
  bool request_room(size_t n, size_t capacity, room_waiters::waker waker);

  /// Actor side: `n` commands were processed.
  void consumed(size_t n);

  /// The store stops: wakes every waiting source.
  void close();

private:
  deliver_fn deliver_;
  std::atomic<size_t> pending_{0};
  std::mutex mtx_;
  size_t low_water_ = 0;
  room_waiters waiters_;
};

/// The store's handler in the core (see the file comment).
class store_handler : public handler {
public:
  store_handler(uint64_t id, handler_kind kind, size_t capacity,
                std::shared_ptr<store_sink> sink)
    : handler(id, kind, overflow_policy::block, capacity), sink_(std::move(sink)) {
    accepted_kinds(kind_bit(message_kind::command));
  }

  size_t buffered() const noexcept override { return sink_->pending(); }

  bool request_room(size_t n, room_waker waker) override {
    return sink_->request_room(n, capacity(), std::move(waker));
  }

  void close() override {
    handler::close();
    sink_->close();
  }

protected:
  push_result do_push(const data_message* xs, const route_info*, size_t n) override {
    push_result result;
    result.accepted = n;
    sink_->deliver(xs, n);
    return result;
  }

private:
  std::shared_ptr<store_sink> sink_;
};

/// What an API call runs on the store's thread.
using store_task = std::function<void(store_logic&, timestamp now)>;

/// What a store's handles share (see the file comment).
class store_frontend : public std::enable_shared_from_this<store_frontend> {
public:
  store_frontend(std::string name, bool master, uint64_t id, entity_id publisher,
                 timespan request_timeout);
  ~store_frontend();

  const std::string& name() const noexcept { return name_; }
  bool is_master() const noexcept { return master_; }
  uint64_t id() const noexcept { return id_; }

  /// Who writes through this store's handles: the endpoint and the store's id. Store
  /// events name the endpoint.
  const entity_id& publisher() const noexcept { return publisher_; }

  timespan request_timeout() const noexcept { return timeout_; }

  /// Runs `fn` on the store's thread. False if the store is gone.
  bool post(store_task fn);

  /// Hands `op` (store_logic.hh) to the store, waiting while too many writes are in flight.
  /// Errors: shutting_down if the store is gone.
  error write(store_op op);

  /// Runs a query; `fn` must call its reply exactly once. Errors: request_timeout after
  /// `timeout`, shutting_down if the store is gone.
  expected<data> query(std::function<void(store_logic&, timestamp, store_reply)> fn,
                       timespan timeout);

  /// Stops the actor; later calls fail with shutting_down. Idempotent.
  void stop();

  /// Set by spawn_store().
  std::shared_ptr<store_link> link;

  /// Called by the actor when it processed a write.
  void write_done();

private:
  std::string name_;
  bool master_;
  uint64_t id_;
  entity_id publisher_;
  timespan timeout_;
  std::mutex mtx_;
  std::condition_variable cv_;
  size_t in_flight_ = 0;
  size_t waiters_ = 0;
  std::vector<store_op> writes_; ///< Queued for the next drain task.
  bool drain_scheduled_ = false;
  bool stopped_ = false;
};

/// Writes a store may have in flight before write() waits.
inline constexpr size_t max_store_writes_in_flight = 4096;

/// Spawns the actor for `logic`, attaches its handler (subscribed to `topics`, see
/// store_topics()) and source to the core, and starts the logic. `capacity` bounds the
/// handler and the source.
std::shared_ptr<store_frontend>
spawn_store(core_runtime& rt, uint64_t id, handler_kind kind,
            const std::vector<std::string>& topics, size_t capacity, timespan tick_interval,
            std::shared_ptr<store_frontend> fe,
            std::function<std::unique_ptr<store_logic>(store_env&)> make_logic);

} // namespace broker::internal
