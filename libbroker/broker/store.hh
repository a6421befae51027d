#pragma once

// store: a handle to a data store attached to an endpoint (doc/stores.md).
//
//   auto users = ep.attach_master("users", broker::backend::sqlite, {{"path", "users.db"}});
//   users->put("alice", 42);
//   auto v = users->get("alice");            // expected<data>: 42
//
//   auto copy = other_ep.attach_clone("users"); // on a peered endpoint
//   copy->await_ready(std::chrono::seconds{5});
//   copy->increment("alice", broker::count{1});   // goes to the master, then to every clone
//
// A master owns the data; clones hold a copy that converges to the master's state and send
// their writes to the master. Reads are answered locally, from the master's backend or from
// the clone's copy, so a clone may briefly return a value the master has already replaced.
//
// Writes are asynchronous and ordered: put() returns once the write is queued; writes made
// through one handle reach the master in order. A write the master rejects (e.g. type_clash
// on increment) is logged and counted by the master and reported as an error event on its
// node (endpoint::make_status_subscriber). await_verdict() waits for the master's verdict on
// the writes made so far, also through a clone; put_unique() always waits for its answer.
//
// Queries block for at most the request timeout (broker.store.request-timeout, or the
// `timeout` argument). The asynchronous variants live in store::proxy, whose answers arrive
// on a file descriptor an application can poll().
//
// Errors, all as values: no_such_key, type_clash, request_timeout, stale_data (a clone that
// has no data from its master yet), no_such_master (a clone's put_unique with no master
// reachable), master_exists (attach_master), backend_failure and cannot_open_file (SQLite),
// shutting_down (the endpoint is gone).
//
// Threads: handles are cheap to copy and every member is thread-safe. The store lives until
// its endpoint shuts down, whether or not handles remain.

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/export.hh"
#include "broker/time.hh"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace broker {

namespace internal {
class store_frontend;
struct proxy_state;
} // namespace internal

/// Where a master keeps its data.
enum class backend : uint8_t {
  memory, ///< A sorted map in memory; gone when the process ends.
  sqlite, ///< One SQLite file (options: path, synchronous, journal_mode, integrity_check).
};

/// What await_verdict() learned from the master.
enum class write_verdict : uint8_t {
  applied,      ///< The master processed every write and rejected none.
  acknowledged, ///< The master took every write but reports no rejections (Zeek Broker).
};

/// "applied" or "acknowledged".
BROKER_API std::string_view to_string(write_verdict x) noexcept;

/// Backend options, name to value (doc/stores.md lists them).
using backend_options = std::map<std::string, std::string>;

/// See the file comment.
class BROKER_API store {
public:
  using request_id = uint64_t;

  /// An answer delivered through a proxy.
  struct response {
    expected<data> answer;
    request_id id = 0;
  };

  class proxy;

  /// An invalid handle (every operation fails with ec::shutting_down).
  store() noexcept;
  ~store();

  store(const store&) = default;
  store(store&&) noexcept = default;
  store& operator=(const store&) = default;
  store& operator=(store&&) noexcept = default;

  explicit operator bool() const noexcept { return fe_ != nullptr; }

  /// The store's name (empty for an invalid handle).
  const std::string& name() const noexcept;

  /// True for the master's handle, false for a clone's.
  bool is_master() const noexcept;

  // -- queries ------------------------------------------------------------------------------

  /// The value under `key`. Errors: no_such_key, stale_data, request_timeout.
  expected<data> get(const data& key) const;
  expected<data> get(const data& key, timespan timeout) const;

  /// One aspect of the value under `key`: a vector element at a count index, a table's value
  /// under `index`, or whether a set holds `index`. Errors: no_such_key, type_clash.
  expected<data> get_index_from_value(const data& key, const data& index) const;

  /// True if `key` is present.
  expected<bool> exists(const data& key) const;

  /// All keys, as a set.
  expected<data> keys() const;

  // -- writes -------------------------------------------------------------------------------

  /// Stores `value` under `key`; with an expiry the master erases the key after it.
  error put(data key, data value, std::optional<timespan> expiry = std::nullopt);

  /// Stores `value` only if `key` is absent and returns whether it did. Waits for the
  /// master. Errors: no_such_master, request_timeout.
  expected<bool> put_unique(data key, data value,
                            std::optional<timespan> expiry = std::nullopt);

  /// Removes `key` (a missing key is fine).
  error erase(data key);

  /// Removes every key.
  error clear();

  /// Adds `amount` (count, integer, real or timespan) to the value under `key`; a missing
  /// key starts at zero of the amount's type.
  error increment(data key, data amount, std::optional<timespan> expiry = std::nullopt);

  /// Subtracts `amount` from the value under `key` (the key must exist).
  error decrement(data key, data amount, std::optional<timespan> expiry = std::nullopt);

  /// Appends `str` to the string under `key` (a missing key starts empty).
  error append(data key, data str, std::optional<timespan> expiry = std::nullopt);

  /// Inserts `element` into the set under `key` (a missing key starts as an empty set).
  error insert_into(data key, data element, std::optional<timespan> expiry = std::nullopt);

  /// Sets `index` to `value` in the table under `key` (a missing key starts empty).
  error insert_into(data key, data index, data value,
                    std::optional<timespan> expiry = std::nullopt);

  /// Removes `element` from the set (or the key `element` from the table) under `key`.
  error remove_from(data key, data element, std::optional<timespan> expiry = std::nullopt);

  /// Appends `value` to the vector under `key` (a missing key starts empty).
  error push(data key, data value, std::optional<timespan> expiry = std::nullopt);

  /// Removes the last element of the vector under `key`.
  error pop(data key, std::optional<timespan> expiry = std::nullopt);

  // -- synchronization ----------------------------------------------------------------------

  /// Waits until this handle answers from its master's data: at once for a master, after
  /// the first snapshot for a clone. False after `timeout`.
  bool await_ready(timespan timeout) const;

  /// Waits until every write made through this handle so far has been processed by this
  /// store (for a clone: handed to its master, or waiting for one). False after `timeout`.
  bool await_idle(timespan timeout) const;

  /// Waits until the master has processed every write this endpoint made to the store so
  /// far (through any of its handles), and returns the master's verdict on the writes since
  /// the previous call: `applied`, or `acknowledged` from a Zeek Broker master, which
  /// reports no rejections. A clone holds the master's state after those writes once this
  /// returns (read your writes). Errors: the first write the master rejected (type_clash,
  /// no_such_key, ...), no_such_master (no master within the request timeout, or it
  /// changed before it answered), request_timeout (after `timeout`), shutting_down.
  expected<write_verdict> await_verdict(timespan timeout) const;

  /// For endpoint::attach_master/attach_clone.
  explicit store(std::shared_ptr<internal::store_frontend> fe) noexcept;

private:
  std::shared_ptr<internal::store_frontend> fe_;
};

/// Asynchronous queries: each call returns at once with a request id; the answer arrives
/// later through receive(), and fd() is readable while answers wait. Every request gets
/// exactly one answer (at worst request_timeout or shutting_down).
class BROKER_API store::proxy {
public:
  explicit proxy(const store& s);
  ~proxy();

  proxy(const proxy&) = delete;
  proxy& operator=(const proxy&) = delete;

  request_id get(data key);
  request_id get_index_from_value(data key, data index);
  request_id exists(data key);
  request_id keys();
  request_id put_unique(data key, data value, std::optional<timespan> expiry = std::nullopt);

  /// Readable exactly while answers wait (an eventfd).
  int fd() const noexcept;

  /// Answers waiting now.
  size_t available() const;

  /// The next answer, waiting for it.
  response receive();

  /// The next answer, or nothing after `timeout`.
  std::optional<response> receive(timespan timeout);

  /// The next `n` answers, waiting for all of them.
  std::vector<response> receive(size_t n);

private:
  store store_;
  std::shared_ptr<internal::proxy_state> state_;
  request_id next_id_ = 1;
};

} // namespace broker
