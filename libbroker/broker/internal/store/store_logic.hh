#pragma once

// store_logic: what a data store's master or clone does, free of CAF and sockets (DESIGN §8).
// The store actor (store_actor.cc) owns one and drives it with command messages, API
// requests and the time; the logic answers through its `env`. Unit tests drive two or more
// of them through a fake bus.
//
// Topics and envelopes. All traffic is `command` messages (peering frame type 2) whose value
// is one vector starting with a tag string:
//   to the master, on "<name>/<$>/data/master":
//     ["c", clone, msg]        a clone's consumer messages for the master's channel
//     ["w", clone, msg]        a clone's producer messages for its write channel
//     ["probe", master]        a new master asks whether another master runs
//     ["exists", to, master]   the answer: `master` runs already
//   to clones, on "<name>/<$>/data/clone":
//     ["c", to, master, msg]   the master's producer messages (to = 0: every clone)
//     ["w", to, master, msg]   the master's consumer messages for clone `to`'s write channel
//     ["r", to, req, inserted] the result of clone `to`'s put_unique number `req`
// `clone` and `master` are random 64-bit ids of one store incarnation; `msg` is a channel
// message (channel::encode).
//
// Two channels per clone (channel.hh): the master's producer keeps every clone's state equal
// to the master's (payloads are effects: put with the resulting value, erase, expire, clear;
// snapshots are [[key, value], ...]); each clone's producer carries its writes to the master
// in order (payloads are operations, see make_op()). A clone sends writes only while the
// master's consumer is attached to its write channel; before that they wait in the clone.
//
// Operations (API requests and write-channel payloads), each ending with the publisher (the
// writing endpoint's id as a string):
//   ["put", key, value, expiry|nil, publisher]          expiry: a relative timespan
//   ["put_unique", key, value, expiry|nil, clone, req, publisher]
//   ["erase", key, publisher]
//   ["add", key, value, init_type, expiry|nil, publisher]
//   ["subtract", key, value, expiry|nil, publisher]
//   ["clear", publisher]
//
// Store events (published on topic::store_events by master and clones):
//   ["insert", store, key, value, expiry|nil, publisher]
//   ["update", store, key, old_value, new_value, expiry|nil, publisher]
//   ["erase", store, key, publisher]
//   ["expire", store, key, publisher]

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/internal/store/replication_channel.hh"
#include "broker/internal/store/backend.hh"
#include "broker/time.hh"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace broker::internal {

/// Timing and limits of one store (from broker.store.*).
struct store_settings {
  timespan heartbeat_interval = std::chrono::seconds{1};
  uint32_t timeout_intervals = 10;
  /// How long a clone's put_unique waits for the master's answer.
  timespan request_timeout = std::chrono::seconds{10};
  /// How long a new master listens for an existing one (0: does not probe).
  timespan probe_timeout = std::chrono::milliseconds{300};
};

/// Where a store's outputs go. Calls happen on the store's thread.
class store_env {
public:
  virtual ~store_env();

  /// Publishes a command message.
  virtual void send_command(const std::string& topic, data msg) = 0;

  /// Publishes a store event on topic::store_events.
  virtual void store_event(data ev) = 0;

  /// Reports a failed write (an error event).
  virtual void write_failed(const error& err) = 0;
};

/// The topic a store's master listens on.
std::string master_topic(const std::string& name);

/// The topic a store's clones listen on.
std::string clone_topic(const std::string& name);

/// Writes a clone hands to its write channel before it waits for the master's acks (below
/// the channel's retransmit bound, so a slow master never makes the channel drop writes).
inline constexpr size_t clone_write_window = 4096;

/// Answers a query: the value, or the error.
using store_reply = std::function<void(expected<data>)>;

/// Builds the operation vectors listed in the file comment. `expiry` nil means none.
data make_op_put(data key, data value, std::optional<timespan> expiry, std::string publisher);
data make_op_erase(data key, std::string publisher);
data make_op_add(data key, data value, data::type init_type, std::optional<timespan> expiry,
                 std::string publisher);
data make_op_subtract(data key, data value, std::optional<timespan> expiry,
                      std::string publisher);
data make_op_clear(std::string publisher);

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
};

/// See the file comment. Single-threaded.
class store_logic {
public:
  virtual ~store_logic();

  const std::string& name() const noexcept { return name_; }

  /// This incarnation's random id (the master's channel epoch).
  uint64_t uid() const noexcept { return uid_; }

  virtual bool is_master() const noexcept = 0;

  /// Sends the first messages (a master's probe, a clone's attach).
  virtual void start(timestamp now) = 0;

  /// Processes the value of one command message that arrived on our topic.
  virtual void handle(const data& msg, timestamp now) = 0;

  /// Drives the channels' timers, expiries and request timeouts.
  virtual void tick(timestamp now) = 0;

  /// Ends a run of work: commits the backend's open batch, if any.
  virtual void flush() {}

  /// Applies (master) or forwards (clone) a write; see make_op_*(). Calls `done` once the
  /// write left the store's hands: applied by a master; handed to the write channel by a
  /// clone, which holds writes back while its master has too many unacknowledged (that is
  /// how a writer is slowed down to the pace of the master).
  virtual void write(data op, timestamp now, std::function<void()> done = {}) = 0;

  /// Inserts unless present; replies with a boolean (true: inserted).
  virtual void put_unique(data key, data value, std::optional<timespan> expiry,
                          std::string publisher, timestamp now, store_reply reply) = 0;

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

protected:
  store_logic(std::string name, uint64_t uid) : name_(std::move(name)), uid_(uid) {}

  std::string name_;
  uint64_t uid_;
};

/// A master over `backend`. Loads the backend's expiries.
std::unique_ptr<store_logic> make_master_logic(std::string name, uint64_t uid,
                                               std::unique_ptr<store_backend> backend,
                                               store_settings settings, store_env& env);

/// A clone with an in-memory copy.
std::unique_ptr<store_logic> make_clone_logic(std::string name, uint64_t uid,
                                              store_settings settings, store_env& env);

} // namespace broker::internal
