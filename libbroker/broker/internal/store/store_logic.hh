#pragma once

// store_logic: what a data store's master or clone does, free of CAF and sockets
// (doc/architecture.md, "Data stores").
// The store actor (store_actor.cc) owns one and drives it with command messages, API
// requests and the time; the logic answers through its `env`. Unit tests drive two or more
// of them through a fake bus. The master is master.hh, the clone clone.hh; this file holds
// what both share.
//
// Wire: every message is one of Zeek Broker's store commands (store_wire.hh), the payload of
// a peering command frame, so our masters and clones replicate with Broker's
// (doc/protocol/stores.md). Topics: clones (and a new master's probe) send on
// "<name>/<$>/data/master", masters on "<name>/<$>/data/clone". Each store incarnation has an
// entity (endpoint id, random object id); a clone's reads come through a channel whose
// consumer entity changes with every (re-)attach (object = uid + attach id), its writes go
// through a channel under its fixed entity (object = uid).
//
// Operations (API requests and the payloads of a clone's write channel) are the action
// commands put, put_unique, erase, add, subtract and clear; make_op_*() build them.
//
// Store events (published on topic::store_events by master and clones), `publisher` being
// the writing endpoint's id as a string ("" if unknown):
//   ["insert", store, key, value, expiry|nil, publisher]
//   ["update", store, key, old_value, new_value, expiry|nil, publisher]
//   ["erase", store, key, publisher]
//   ["expire", store, key, publisher]

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/internal/store/backend.hh"
#include "broker/internal/store/store_wire.hh"
#include "broker/time.hh"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal {

using store_wire::entity_id;

/// Timing and limits of one store (from broker.store.*).
struct store_settings {
  timespan heartbeat_interval = std::chrono::seconds{1};
  uint32_t timeout_intervals = 10;
  /// How long a clone's put_unique waits for the master's answer.
  timespan request_timeout = std::chrono::seconds{10};
  /// How long a new master listens for an existing one (0: does not probe).
  timespan probe_timeout = std::chrono::milliseconds{300};
  /// One tick of the store's clock. Broker counts heartbeat intervals in ticks on the wire
  /// (its default tick is 100 ms as well).
  timespan tick_interval = std::chrono::milliseconds{100};
};

/// Where a store's outputs go. Calls happen on the store's thread.
class store_env {
public:
  virtual ~store_env();

  /// Publishes a command message (an encoded store command).
  virtual void send_command(const std::string& topic, std::string bytes) = 0;

  /// Publishes a store event on topic::store_events.
  virtual void store_event(data ev) = 0;

  /// Reports a failed write (an error event).
  virtual void write_failed(const error& err) = 0;

  /// Logs a problem that is no one's request (a malformed command, a second master).
  virtual void warn(const std::string& text);
};

/// The topic a store's master listens on.
std::string master_topic(const std::string& name);

/// The topic a store's clones listen on.
std::string clone_topic(const std::string& name);

/// The topics a master (both) or a clone (the clone topic) subscribes to.
std::vector<std::string> store_topics(const std::string& name, bool master);

/// Writes a clone hands to its write channel before it waits for the master's acks (below
/// the channel's retransmit bound, so a slow master never makes the channel drop writes).
inline constexpr size_t clone_write_window = 4096;

/// Answers a query: the value, or the error.
using store_reply = std::function<void(expected<data>)>;

/// A write: one of the action commands put, put_unique, erase, add, subtract, clear.
using store_op = store_wire::content;

/// Build the operations. `expiry` is relative to the moment the master applies the write.
store_op make_op_put(data key, data value, std::optional<timespan> expiry,
                     entity_id publisher);
store_op make_op_erase(data key, entity_id publisher);
store_op make_op_add(data key, data value, data::type init_type,
                     std::optional<timespan> expiry, entity_id publisher);
store_op make_op_subtract(data key, data value, std::optional<timespan> expiry,
                          entity_id publisher);
store_op make_op_clear(entity_id publisher);

/// What a store reports for Broker's broker_store_* metrics and the status page.
struct store_stats {
  std::string name;
  bool master = false;
  size_t entries = 0;              ///< Keys held locally.
  size_t input_channels = 0;       ///< Channels this store consumes (master: clones' writes).
  size_t output_channels = 0;      ///< Channels it produces for (master: its clones).
  size_t out_of_order_updates = 0; ///< Updates held until the ones before them arrive.
  size_t unacknowledged_updates = 0; ///< Produced updates held until acknowledged.
  uint64_t processed_updates = 0;  ///< Produced updates acknowledged by every consumer.
  uint64_t rejected_writes = 0;    ///< Master: writes it rejected (type_clash, ...).
};

/// See the file comment. Single-threaded.
class store_logic {
public:
  virtual ~store_logic();

  const std::string& name() const noexcept { return name_; }

  /// This incarnation's entity (a clone's writer entity).
  const entity_id& id() const noexcept { return self_; }

  virtual bool is_master() const noexcept = 0;

  /// The topics the store's handler subscribes to (store_topics()).
  std::vector<std::string> topics() const { return store_topics(name_, is_master()); }

  /// Sends the first messages (a master's probe, a clone's attach).
  virtual void start(timestamp now) = 0;

  /// Processes one command message that arrived on `topic`. Malformed ones are counted and
  /// dropped.
  virtual void handle(const std::string& topic, std::string_view bytes, timestamp now) = 0;

  /// Drives the channels' timers, expiries and request timeouts.
  virtual void tick(timestamp now) = 0;

  /// Ends a run of work: commits the backend's open batch, if any.
  virtual void flush() {}

  /// Applies (master) or forwards (clone) a write. Calls `done` once the write left the
  /// store's hands: applied by a master; handed to the write channel by a clone, which holds
  /// writes back while its master has too many unacknowledged (that is how a writer is
  /// slowed down to the pace of the master).
  virtual void write(store_op op, timestamp now, std::function<void()> done = {}) = 0;

  /// The master's verdict on the writes made through this store since the previous call
  /// (doc/stores.md, "The master's verdict"): replies `true` once the master has processed
  /// them all and rejected none; the first rejection as an error (type_clash, ...); or
  /// `none` if the master took them but does not report rejections (a Zeek Broker master).
  /// A clone asks its master through the write channel (a put_unique_result that our
  /// masters answer, and Broker's ignore); a master answers at once.
  virtual void verdict(timestamp now, store_reply reply) = 0;

  /// Inserts unless present; replies with a boolean (true: inserted).
  virtual void put_unique(data key, data value, std::optional<timespan> expiry,
                          entity_id publisher, timestamp now, store_reply reply) = 0;

  // Queries, answered at once from the local state.
  virtual void get(const data& key, const store_reply& reply) = 0;
  virtual void get_index_from_value(const data& key, const data& index,
                                    const store_reply& reply) = 0;
  virtual void exists(const data& key, const store_reply& reply) = 0;
  virtual void keys(const store_reply& reply) = 0;

  /// Master: false while probing for another master (a clone is always ready).
  /// Clone: true once a snapshot of the master arrived.
  virtual bool ready() const noexcept = 0;

  /// Master: a failure that ends the store (master_exists found by the probe).
  virtual const error& failure() const noexcept = 0;

  /// The number of keys held locally (for metrics and tests).
  virtual size_t size() const = 0;

  /// The counters of store_stats, taken now.
  virtual store_stats stats() const = 0;

  /// Command messages dropped because they did not decode or made no sense.
  uint64_t malformed() const noexcept { return malformed_; }

protected:
  store_logic(std::string name, entity_id self, store_settings st, store_env& env);

  /// Decodes a received command; counts, logs and drops a malformed one.
  std::optional<store_wire::command> parse(std::string_view bytes);

  /// Counts and logs a command that decoded but cannot be right (e.g. an action without a
  /// sequence number).
  void reject(const store_wire::command& cmd, const char* why);

  /// Encodes and publishes `cmd` on `topic`.
  void send(const std::string& topic, const store_wire::command& cmd);

  /// A heartbeat interval as Broker's ticks (at least 1), and back (0: ours).
  uint16_t to_ticks(timespan interval) const noexcept;
  timespan from_ticks(uint16_t ticks) const noexcept;

  // Store events (see the file comment).
  void emit_insert(const data& key, const data& value, std::optional<timespan> expiry,
                   const entity_id& publisher);
  void emit_update(const data& key, const data& old_value, const data& new_value,
                   std::optional<timespan> expiry, const entity_id& publisher);
  void emit_erase(const char* what, const data& key, const entity_id& publisher);

  std::string name_;
  entity_id self_;
  store_settings st_;
  store_env& env_;
  std::string mtopic_;
  std::string ctopic_;

private:
  uint64_t malformed_ = 0;
};

/// A master over `backend`, entity `self`. Loads the backend's expiries.
std::unique_ptr<store_logic> make_master_logic(std::string name, entity_id self,
                                               std::unique_ptr<store_backend> backend,
                                               store_settings settings, store_env& env);

/// A clone with an in-memory copy; `self` is its writer entity.
std::unique_ptr<store_logic> make_clone_logic(std::string name, entity_id self,
                                              store_settings settings, store_env& env);

} // namespace broker::internal
