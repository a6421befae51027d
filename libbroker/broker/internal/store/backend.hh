#pragma once

// store_backend: where a data store keeps its keys, values and expiries. Two
// implementations: memory (a sorted map) and SQLite (one file, doc/stores-backends.md).
//
// Ownership and threads: a backend is plain code. Exactly one owner (a store's master or
// clone) calls it, from one thread at a time; it has no locks, timers or callbacks. Expiry
// is passive: the backend stores absolute deadlines and erases a key only when its owner
// calls expire(key, now) -- the owner keeps the timers.
//
// Update flow (as a master will drive it):
//   1. A command arrives; the owner turns a relative expiry into an absolute timestamp.
//   2. begin_batch() before a run of commands, one call per command, commit_batch() after:
//      SQLite then pays one transaction (one fsync) for the whole run.
//   3. Each call either applies completely or changes nothing and returns the error; the
//      owner reports the error and carries on with the next command.
//
// Semantics shared by every backend (Broker's, with the decisions in doc/stores-backends.md):
// - put, put_unique (when inserting), add and subtract set the key's expiry to the one given;
//   std::nullopt clears it. A put_unique that finds the key changes nothing.
// - add/subtract do Broker's value arithmetic (add_to / subtract_from below).
// - erase of a missing key succeeds; expire of a missing key returns false.
// - keys(), snapshot() and expiries() list keys in ascending total order (data.hh).
// - Beyond the errors listed per function, SQLite operations can fail with backend_failure
//   (I/O, a lock held by another connection, damaged data) and writes with
//   serialization_failed (a value the binary codec cannot encode).

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/time.hh"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace broker::internal {

/// Backend configuration: option name to its text value. The memory backend takes none;
/// the SQLite options are listed at make_sqlite_backend().
using backend_options = std::map<std::string, std::string>;

/// The available backends.
enum class backend_kind : uint8_t { memory, sqlite };

/// Storage of one data store. Not thread-safe; see the file comment.
class store_backend {
public:
  virtual ~store_backend();

  /// Stores `value` under `key`, replacing any previous value and expiry.
  virtual error put(const data& key, data value, std::optional<timestamp> expiry) = 0;

  /// Stores `value` under `key` only if the key is absent. Returns true if it inserted.
  virtual expected<bool> put_unique(const data& key, data value,
                                    std::optional<timestamp> expiry) = 0;

  /// Adds `value` to the value under `key` (add_to). A missing key starts from
  /// default_value(init_type). Errors: type_clash, invalid_data (see add_to).
  virtual error add(const data& key, const data& value, data::type init_type,
                    std::optional<timestamp> expiry) = 0;

  /// Subtracts `value` from the value under `key` (subtract_from).
  /// Errors: no_such_key, type_clash.
  virtual error subtract(const data& key, const data& value,
                         std::optional<timestamp> expiry) = 0;

  /// Removes `key` and its expiry; a missing key is not an error.
  virtual error erase(const data& key) = 0;

  /// Removes every key.
  virtual error clear() = 0;

  /// Erases `key` if it has an expiry and that expiry is <= `now`. Returns true if it erased.
  virtual expected<bool> expire(const data& key, timestamp now) = 0;

  /// The value under `key`. Errors: no_such_key.
  virtual expected<data> get(const data& key) const = 0;

  /// One aspect of the value under `key` (value_at): a vector element, a table value or set
  /// membership. Errors: no_such_key, type_clash.
  virtual expected<data> get_index_from_value(const data& key, const data& index) const;

  /// True if `key` is present.
  virtual expected<bool> exists(const data& key) const = 0;

  /// All keys, as a set.
  virtual expected<data> keys() const = 0;

  /// The number of keys.
  virtual expected<uint64_t> size() const = 0;

  /// All keys with their values, ascending by key.
  virtual expected<std::vector<std::pair<data, data>>> snapshot() const = 0;

  /// The keys that have an expiry, with it, ascending by key.
  virtual expected<std::vector<std::pair<data, timestamp>>> expiries() const = 0;

  /// Starts a batch: the writes until commit_batch() become durable together (SQLite: one
  /// transaction). Reads inside a batch see its writes. Destroying a backend with an open
  /// batch discards the batch. Errors: logic_error if a batch is already open.
  virtual error begin_batch() = 0;

  /// Ends the batch. Errors: logic_error without an open batch; backend_failure if the
  /// commit fails (SQLite then has rolled the whole batch back).
  virtual error commit_batch() = 0;
};

/// Default for the SQLite option `synchronous`.
inline constexpr std::string_view sqlite_default_synchronous = "NORMAL";

/// Default for the SQLite option `journal_mode`.
inline constexpr std::string_view sqlite_default_journal_mode = "WAL";

/// The layout version written to (and required in) the SQLite meta table.
inline constexpr int sqlite_format_version = 1;

/// A new, empty memory backend.
std::unique_ptr<store_backend> make_memory_backend();

/// Opens (creating if needed, with missing parent directories) the SQLite database of
/// option `path`. Options, all case-insensitive in their values:
///   path             required, a file path
///   synchronous      OFF | NORMAL | FULL | EXTRA      (default NORMAL)
///   journal_mode     DELETE | TRUNCATE | PERSIST | MEMORY | WAL | OFF (default WAL)
///   integrity_check  true | false (default false): run PRAGMA integrity_check on open
/// Errors: invalid_config naming the option and its value (unknown option, bad value,
/// missing path), checked before touching the file system; cannot_open_file with the path
/// and SQLite's message for everything that fails while opening (unwritable path, not a
/// database, corrupt, foreign schema, other format version, failed integrity check).
expected<std::unique_ptr<store_backend>> make_sqlite_backend(const backend_options& options);

/// Dispatches to the factory of `kind`. The memory backend rejects any option.
expected<std::unique_ptr<store_backend>> make_backend(backend_kind kind,
                                                      const backend_options& options);

// -- value arithmetic shared by the backends --------------------------------------------------

/// The starting value of a missing key for add(): none, false, 0, 0.0, "", ::, ::/0,
/// 0/unknown, the epoch, 0s, enum "", or an empty set/table/vector.
/// Errors: invalid_data if `init_type` is no data type.
expected<data> default_value(data::type init_type);

/// Broker's add: count/integer/real/timespan += the same type (wrapping on overflow);
/// timestamp += timespan; string += string; set: insert; table: `value` must be a vector
/// [k, v] and sets k to v; vector: push back. Errors (then `target` is unchanged):
/// type_clash for any other combination, invalid_data for a table entry whose vector does
/// not have exactly 2 elements. `key` only names the key in messages.
error add_to(data& target, const data& value, const data& key);

/// Broker's subtract: count/integer/real/timespan -= the same type; timestamp -= timespan;
/// set: erase element; table: erase key; vector: pop back (value ignored; empty stays
/// empty). Errors: type_clash for any other combination (then `target` is unchanged).
error subtract_from(data& target, const data& value, const data& key);

/// Broker's retrieval of one aspect: vector -> element at a count (or non-negative integer)
/// index, else no_such_key if out of range, type_clash for another index type; table -> the
/// value under `index` or no_such_key; set -> whether it holds `index`; any other value ->
/// type_clash.
expected<data> value_at(const data& container, const data& index, const data& key);

/// A short rendering of `key` for error messages (long keys are cut).
std::string describe_key(const data& key);

} // namespace broker::internal
