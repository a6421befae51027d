// The SQLite backend: one database file with a `store` table of bin-encoded keys and values
// and a `meta` table holding the format version (layout in doc/stores-backends.md).

#include "broker/internal/codec/bin.hh"
#include "broker/internal/store/backend.hh"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <initializer_list>

namespace broker::internal {

namespace {

// -- schema -----------------------------------------------------------------------------------

constexpr const char* create_meta_sql =
  "CREATE TABLE meta(key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL)";

// WITHOUT ROWID: the key blob is the b-tree key itself, so there is no second index.
constexpr const char* create_store_sql =
  "CREATE TABLE store(key BLOB NOT NULL PRIMARY KEY, value BLOB NOT NULL, expiry INTEGER)"
  " WITHOUT ROWID";

// The columns of `store` as "name type notnull pk", which open() compares against.
constexpr const char* store_columns = "key BLOB 1 1, value BLOB 1 0, expiry INTEGER 0 0";

// -- options ----------------------------------------------------------------------------------

struct sqlite_settings {
  std::string path;
  std::string synchronous{sqlite_default_synchronous};
  std::string journal_mode{sqlite_default_journal_mode};
  bool integrity_check = false;
};

std::string upper(std::string_view text) {
  std::string result{text};
  for (auto& c : result)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return result;
}

std::string join(std::initializer_list<std::string_view> xs) {
  std::string result;
  for (auto x : xs) {
    if (!result.empty())
      result += ", ";
    result += x;
  }
  return result;
}

error invalid_value(const std::string& name, const std::string& value,
                    std::initializer_list<std::string_view> choices) {
  return error{ec::invalid_config, "invalid value '" + value + "' for SQLite backend option '"
                                     + name + "', expected one of " + join(choices)};
}

// Stores the upper-cased `value` in `out` if it is one of `choices`.
error pick(const std::string& name, const std::string& value,
           std::initializer_list<std::string_view> choices, std::string& out) {
  auto normalized = upper(value);
  if (std::find(choices.begin(), choices.end(), normalized) == choices.end())
    return invalid_value(name, value, choices);
  out = std::move(normalized);
  return {};
}

expected<sqlite_settings> parse_options(const backend_options& options) {
  sqlite_settings result;
  bool has_path = false;
  for (const auto& [name, value] : options) {
    error err;
    if (name == "path") {
      if (value.empty())
        return error{ec::invalid_config, "SQLite backend option 'path' must not be empty"};
      result.path = value;
      has_path = true;
    } else if (name == "synchronous") {
      err = pick(name, value, {"OFF", "NORMAL", "FULL", "EXTRA"}, result.synchronous);
    } else if (name == "journal_mode") {
      err = pick(name, value, {"DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF"},
                 result.journal_mode);
    } else if (name == "integrity_check") {
      std::string flag;
      err = pick(name, value, {"TRUE", "FALSE"}, flag);
      result.integrity_check = flag == "TRUE";
    } else {
      return error{ec::invalid_config,
                   "unknown SQLite backend option '" + name + "' (value '" + value
                     + "'), expected one of path, synchronous, journal_mode, integrity_check"};
    }
    if (err)
      return err;
  }
  if (!has_path)
    return error{ec::invalid_config, "SQLite backend option 'path' is required"};
  return result;
}

// -- keys and blobs ---------------------------------------------------------------------------

bool has_negative_zero(const data& x) {
  switch (x.get_type()) {
    case data::type::real: {
      auto r = get<real>(x);
      return r == 0.0 && std::signbit(r);
    }
    case data::type::set: {
      const auto& xs = get<broker::set>(x);
      return std::any_of(xs.begin(), xs.end(), has_negative_zero);
    }
    case data::type::table: {
      const auto& xs = get<broker::table>(x);
      return std::any_of(xs.begin(), xs.end(), [](const auto& kvp) {
        return has_negative_zero(kvp.first) || has_negative_zero(kvp.second);
      });
    }
    case data::type::vector: {
      const auto& xs = get<broker::vector>(x);
      return std::any_of(xs.begin(), xs.end(), has_negative_zero);
    }
    default:
      return false;
  }
}

data without_negative_zero(const data& x) {
  switch (x.get_type()) {
    case data::type::real:
      return get<real>(x) == 0.0 ? data{0.0} : x;
    case data::type::set: {
      broker::set result;
      for (const auto& elem : get<broker::set>(x))
        result.emplace_hint(result.end(), without_negative_zero(elem));
      return data{std::move(result)};
    }
    case data::type::table: {
      broker::table result;
      for (const auto& [key, value] : get<broker::table>(x))
        result.emplace_hint(result.end(), without_negative_zero(key),
                            without_negative_zero(value));
      return data{std::move(result)};
    }
    case data::type::vector: {
      broker::vector result;
      for (const auto& elem : get<broker::vector>(x))
        result.push_back(without_negative_zero(elem));
      return data{std::move(result)};
    }
    default:
      return x;
  }
}

// The PRIMARY KEY compares blobs byte by byte, so equal keys must encode to equal bytes.
// bin::encode sorts sets and tables and writes one NaN pattern; the one remaining pair of
// equal reals with different bits is -0.0 and +0.0, which we store as +0.0.
expected<std::string> key_blob(const data& key) {
  if (has_negative_zero(key))
    return bin::encode(without_negative_zero(key));
  return bin::encode(key);
}

// -- SQLite handles ---------------------------------------------------------------------------

struct db_closer {
  void operator()(sqlite3* db) const noexcept { sqlite3_close(db); }
};

struct statement_finalizer {
  void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};

using db_ptr = std::unique_ptr<sqlite3, db_closer>;
using statement_ptr = std::unique_ptr<sqlite3_stmt, statement_finalizer>;

// Resets a prepared statement when a call is done with it, so the statement is fresh for the
// next call and no read transaction outlives the call.
class statement_use {
public:
  explicit statement_use(const statement_ptr& stmt) noexcept : stmt_(stmt.get()) {}
  ~statement_use() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  statement_use(const statement_use&) = delete;
  statement_use& operator=(const statement_use&) = delete;
  sqlite3_stmt* get() const noexcept { return stmt_; }

private:
  sqlite3_stmt* stmt_;
};

std::string sqlite_message(sqlite3* db) {
  return std::string{sqlite3_errmsg(db)} + " (SQLite code "
         + std::to_string(sqlite3_extended_errcode(db)) + ")";
}

// Runs `sql` and returns each row's columns joined by spaces (for pragmas and schema checks).
expected<std::vector<std::string>> query(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK)
    return error{ec::backend_failure, sql + ": " + sqlite_message(db)};
  statement_ptr stmt{raw};
  std::vector<std::string> rows;
  int rc;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(raw); ++i) {
      if (i > 0)
        row += ' ';
      if (auto* text = sqlite3_column_text(raw, i))
        row += reinterpret_cast<const char*>(text);
    }
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE)
    return error{ec::backend_failure, sql + ": " + sqlite_message(db)};
  return rows;
}

error exec(sqlite3* db, const std::string& sql) {
  auto rows = query(db, sql);
  return rows ? error{} : rows.error_value();
}

// -- the backend ------------------------------------------------------------------------------

class sqlite_backend final : public store_backend {
public:
  static expected<std::unique_ptr<store_backend>> open(sqlite_settings settings);

  ~sqlite_backend() override {
    // An open batch is discarded, as the interface promises; sqlite3_close would roll it
    // back as well, but only after we released the statements.
    if (in_batch_ && db_)
      sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }

  error put(const data& key, data value, std::optional<timestamp> expiry) override {
    auto kb = key_blob(key);
    if (!kb)
      return kb.error_value();
    return write_row(put_, "put", *kb, key, value, expiry).err;
  }

  expected<bool> put_unique(const data& key, data value,
                            std::optional<timestamp> expiry) override {
    auto kb = key_blob(key);
    if (!kb)
      return kb.error_value();
    auto res = write_row(put_unique_, "put_unique", *kb, key, value, expiry);
    if (res.err)
      return res.err;
    return res.changed;
  }

  error add(const data& key, const data& value, data::type init_type,
            std::optional<timestamp> expiry) override {
    auto kb = key_blob(key);
    if (!kb)
      return kb.error_value();
    auto current = lookup(*kb, key);
    if (!current) {
      if (current.error_value() != ec::no_such_key)
        return current.error_value();
      current = default_value(init_type);
      if (!current)
        return current.error_value();
    }
    if (auto err = add_to(*current, value, key))
      return err;
    return write_row(put_, "add", *kb, key, *current, expiry).err;
  }

  error subtract(const data& key, const data& value,
                 std::optional<timestamp> expiry) override {
    auto kb = key_blob(key);
    if (!kb)
      return kb.error_value();
    auto current = lookup(*kb, key);
    if (!current)
      return current.error_value();
    if (auto err = subtract_from(*current, value, key))
      return err;
    return write_row(put_, "subtract", *kb, key, *current, expiry).err;
  }

  error erase(const data& key) override {
    return write_key(erase_, "erase", key, std::nullopt).err;
  }

  error clear() override {
    if (auto err = check_batch("clear"))
      return err;
    statement_use use{clear_};
    if (sqlite3_step(use.get()) != SQLITE_DONE)
      return failure("clear");
    return {};
  }

  expected<bool> expire(const data& key, timestamp now) override {
    auto res = write_key(expire_, "expire", key, now);
    if (res.err)
      return res.err;
    return res.changed;
  }

  expected<data> get(const data& key) const override {
    auto kb = key_blob(key);
    if (!kb)
      return kb.error_value();
    return lookup(*kb, key);
  }

  expected<bool> exists(const data& key) const override {
    auto blob = key_blob(key);
    if (!blob)
      return blob.error_value();
    statement_use use{exists_};
    bind_blob(use, 1, *blob);
    switch (sqlite3_step(use.get())) {
      case SQLITE_ROW:
        return true;
      case SQLITE_DONE:
        return false;
      default:
        return failure("exists");
    }
  }

  expected<data> keys() const override {
    broker::set result;
    auto err = for_each_row(keys_, "keys", [&](const statement_use& use) -> error {
      auto key = column_data(use, 0, "key");
      if (!key)
        return key.error_value();
      result.insert(std::move(*key));
      return {};
    });
    if (err)
      return err;
    return data{std::move(result)};
  }

  expected<uint64_t> size() const override {
    statement_use use{size_};
    if (sqlite3_step(use.get()) != SQLITE_ROW)
      return failure("size");
    return static_cast<uint64_t>(sqlite3_column_int64(use.get(), 0));
  }

  expected<std::vector<std::pair<data, data>>> snapshot() const override {
    std::vector<std::pair<data, data>> result;
    auto err = for_each_row(snapshot_, "snapshot", [&](const statement_use& use) -> error {
      auto key = column_data(use, 0, "key");
      if (!key)
        return key.error_value();
      auto value = column_data(use, 1, "value");
      if (!value)
        return value.error_value();
      result.emplace_back(std::move(*key), std::move(*value));
      return {};
    });
    if (err)
      return err;
    // Blob order is not the total order of data; sort so both backends list alike.
    std::sort(result.begin(), result.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    return result;
  }

  expected<std::vector<std::pair<data, timestamp>>> expiries() const override {
    std::vector<std::pair<data, timestamp>> result;
    auto err = for_each_row(expiries_, "expiries", [&](const statement_use& use) -> error {
      auto key = column_data(use, 0, "key");
      if (!key)
        return key.error_value();
      auto ns = sqlite3_column_int64(use.get(), 1);
      result.emplace_back(std::move(*key), timestamp{timespan{ns}});
      return {};
    });
    if (err)
      return err;
    std::sort(result.begin(), result.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    return result;
  }

  error begin_batch() override {
    if (in_batch_)
      return error{ec::logic_error, "begin_batch: a batch is already open"};
    statement_use use{begin_};
    if (sqlite3_step(use.get()) != SQLITE_DONE)
      return failure("begin_batch");
    in_batch_ = true;
    return {};
  }

  error commit_batch() override {
    if (!in_batch_)
      return error{ec::logic_error, "commit_batch: no batch is open"};
    in_batch_ = false;
    if (auto err = check_open_transaction("commit_batch"))
      return err;
    statement_use use{commit_};
    if (sqlite3_step(use.get()) == SQLITE_DONE)
      return {};
    auto err = failure("commit_batch");
    // E.g. SQLITE_BUSY leaves the transaction open; end it so that the batch is all or
    // nothing and the next call does not run inside a stale transaction.
    if (sqlite3_get_autocommit(db_.get()) == 0)
      sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    return err;
  }

private:
  struct write_result {
    error err;
    bool changed = false;
  };

  explicit sqlite_backend(std::string path, db_ptr db)
    : path_(std::move(path)), db_(std::move(db)) {}

  error prepare_statements();

  error failure(std::string_view operation) const {
    return error{ec::backend_failure, std::string{operation} + " on SQLite database '" + path_
                                        + "' failed: " + sqlite_message(db_.get())};
  }

  // SQLite rolls a transaction back by itself after some errors (SQLITE_FULL, SQLITE_IOERR,
  // ...). Writing on would then autocommit each statement and silently split the batch, so
  // every write until commit_batch fails instead, and so does the commit.
  error check_open_transaction(std::string_view operation) const {
    if (sqlite3_get_autocommit(db_.get()) == 0)
      return {};
    return error{ec::backend_failure, std::string{operation} + " on SQLite database '" + path_
                                        + "': SQLite rolled the open batch back after an "
                                          "earlier failure"};
  }

  error check_batch(std::string_view operation) const {
    return in_batch_ ? check_open_transaction(operation) : error{};
  }

  static void bind_blob(const statement_use& use, int index, const std::string& blob) {
    // SQLITE_STATIC: `blob` outlives the step; binding can only fail on misuse.
    sqlite3_bind_blob64(use.get(), index, blob.data(), blob.size(), SQLITE_STATIC);
  }

  static void bind_expiry(const statement_use& use, int index,
                          std::optional<timestamp> expiry) {
    if (expiry)
      sqlite3_bind_int64(use.get(), index, expiry->time_since_epoch().count());
    else
      sqlite3_bind_null(use.get(), index);
  }

  expected<data> column_data(const statement_use& use, int column, const char* what) const {
    auto* bytes = static_cast<const char*>(sqlite3_column_blob(use.get(), column));
    auto size = static_cast<size_t>(sqlite3_column_bytes(use.get(), column));
    auto result = bin::decode(std::string_view{bytes, bytes ? size : 0});
    if (!result)
      return error{ec::backend_failure, std::string{"corrupt "} + what + " in SQLite database '"
                                          + path_ + "': " + result.error_value().message()};
    return result;
  }

  // The value under the encoded key `kb`; `key` only names it in messages.
  expected<data> lookup(const std::string& kb, const data& key) const {
    statement_use use{get_};
    bind_blob(use, 1, kb);
    switch (sqlite3_step(use.get())) {
      case SQLITE_ROW:
        return column_data(use, 0, "value");
      case SQLITE_DONE:
        return error{ec::no_such_key, "no such key: " + describe_key(key)};
      default:
        return failure("get");
    }
  }

  // Binds the encoded key (?1), value (?2) and expiry (?3) to a put statement and runs it.
  write_result write_row(const statement_ptr& stmt, std::string_view operation,
                         const std::string& kb, const data& key, const data& value,
                         std::optional<timestamp> expiry) {
    if (auto err = check_batch(operation))
      return {std::move(err)};
    auto vb = bin::encode(value);
    if (!vb)
      return {error{vb.error_value().code(), "cannot store the value under key "
                                               + describe_key(key) + ": "
                                               + vb.error_value().message()}};
    statement_use use{stmt};
    bind_blob(use, 1, kb);
    bind_blob(use, 2, *vb);
    bind_expiry(use, 3, expiry);
    if (sqlite3_step(use.get()) != SQLITE_DONE)
      return {failure(operation)};
    return {error{}, sqlite3_changes(db_.get()) > 0};
  }

  // Binds key (?1) and optionally a time (?2) to a delete statement and runs it.
  write_result write_key(const statement_ptr& stmt, std::string_view operation,
                         const data& key, std::optional<timestamp> time) {
    if (auto err = check_batch(operation))
      return {std::move(err)};
    auto kb = key_blob(key);
    if (!kb)
      return {kb.error_value()};
    statement_use use{stmt};
    bind_blob(use, 1, *kb);
    if (time)
      bind_expiry(use, 2, time);
    if (sqlite3_step(use.get()) != SQLITE_DONE)
      return {failure(operation)};
    return {error{}, sqlite3_changes(db_.get()) > 0};
  }

  template <class F>
  error for_each_row(const statement_ptr& stmt, std::string_view operation, F f) const {
    statement_use use{stmt};
    int rc;
    while ((rc = sqlite3_step(use.get())) == SQLITE_ROW)
      if (auto err = f(use))
        return err;
    if (rc != SQLITE_DONE)
      return failure(operation);
    return {};
  }

  std::string path_;
  // Declared before the statements: members are destroyed in reverse order, and the
  // statements must be finalized before the database closes.
  db_ptr db_;
  statement_ptr put_;
  statement_ptr put_unique_;
  statement_ptr get_;
  statement_ptr exists_;
  statement_ptr erase_;
  statement_ptr expire_;
  statement_ptr clear_;
  statement_ptr size_;
  statement_ptr keys_;
  statement_ptr snapshot_;
  statement_ptr expiries_;
  statement_ptr begin_;
  statement_ptr commit_;
  bool in_batch_ = false;
};

error sqlite_backend::prepare_statements() {
  const std::pair<statement_ptr*, const char*> statements[] = {
    {&put_, "INSERT INTO store(key, value, expiry) VALUES(?1, ?2, ?3) ON CONFLICT(key) "
            "DO UPDATE SET value = excluded.value, expiry = excluded.expiry"},
    {&put_unique_, "INSERT INTO store(key, value, expiry) VALUES(?1, ?2, ?3) "
                   "ON CONFLICT(key) DO NOTHING"},
    {&get_, "SELECT value FROM store WHERE key = ?1"},
    {&exists_, "SELECT 1 FROM store WHERE key = ?1"},
    {&erase_, "DELETE FROM store WHERE key = ?1"},
    // A NULL expiry makes the comparison NULL, so keys without expiry never expire.
    {&expire_, "DELETE FROM store WHERE key = ?1 AND expiry <= ?2"},
    {&clear_, "DELETE FROM store"},
    {&size_, "SELECT count(*) FROM store"},
    {&keys_, "SELECT key FROM store"},
    {&snapshot_, "SELECT key, value FROM store"},
    {&expiries_, "SELECT key, expiry FROM store WHERE expiry IS NOT NULL"},
    // IMMEDIATE takes the write lock now, so a busy database fails begin_batch, not a write.
    {&begin_, "BEGIN IMMEDIATE"},
    {&commit_, "COMMIT"},
  };
  for (auto [stmt, sql] : statements) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr)
        != SQLITE_OK)
      return error{ec::backend_failure, std::string{"preparing '"} + sql
                                          + "': " + sqlite_message(db_.get())};
    stmt->reset(raw);
  }
  return {};
}

// Creates the tables in an empty database or checks that an existing one is ours.
error initialize_schema(sqlite3* db) {
  auto tables = query(db, "SELECT count(*) FROM sqlite_master");
  if (!tables)
    return tables.error_value();
  if (tables->front() == "0") {
    auto version = std::to_string(sqlite_format_version);
    for (std::string sql : {std::string{create_meta_sql}, std::string{create_store_sql},
                            "INSERT INTO meta(key, value) VALUES('format_version', '"
                              + version + "')"})
      if (auto err = exec(db, sql))
        return err;
    return {};
  }
  auto has_meta = query(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' "
                            "AND name = 'meta'");
  if (!has_meta)
    return has_meta.error_value();
  if (has_meta->empty())
    return error{ec::backend_failure, "the database has tables but no 'meta' table; "
                                      "it is not a store database"};
  auto version = query(db, "SELECT value FROM meta WHERE key = 'format_version'");
  if (!version)
    return version.error_value();
  if (version->size() != 1)
    return error{ec::backend_failure, "the 'meta' table has no format_version; "
                                      "it is not a store database"};
  if (version->front() != std::to_string(sqlite_format_version))
    return error{ec::backend_failure, "format_version is " + version->front()
                                        + ", this backend reads version "
                                        + std::to_string(sqlite_format_version)};
  auto columns = query(db, "SELECT name, type, \"notnull\", pk FROM pragma_table_info('store')");
  if (!columns)
    return columns.error_value();
  std::string actual;
  for (const auto& column : *columns)
    actual += (actual.empty() ? "" : ", ") + column;
  if (actual != store_columns)
    return error{ec::backend_failure, "table 'store' has the columns (" + actual
                                        + "), expected (" + store_columns + ")"};
  return {};
}

// Runs PRAGMA integrity_check, which reports "ok" or up to 100 problems.
error check_integrity(sqlite3* db) {
  auto rows = query(db, "PRAGMA integrity_check");
  if (!rows) // A badly damaged file fails the check itself instead of listing problems.
    return error{ec::backend_failure, "integrity check failed: " + rows.error_value().message()};
  if (rows->size() == 1 && rows->front() == "ok")
    return {};
  std::string msg = "integrity check failed: ";
  for (size_t i = 0; i < rows->size() && i < 3; ++i)
    msg += (i > 0 ? "; " : "") + (*rows)[i];
  return error{ec::backend_failure, std::move(msg)};
}

expected<std::unique_ptr<store_backend>> sqlite_backend::open(sqlite_settings settings) {
  const auto& path = settings.path;
  auto open_error = [&](const std::string& detail) {
    return error{ec::cannot_open_file, "cannot open SQLite database '" + path + "': " + detail};
  };
  if (auto dir = std::filesystem::path{path}.parent_path(); !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return open_error("cannot create directory '" + dir.string() + "': " + ec.message());
  }
  sqlite3* raw = nullptr;
  // NOMUTEX: one owner calls us from one thread at a time (store_backend.hh).
  auto rc = sqlite3_open_v2(path.c_str(), &raw,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            nullptr);
  db_ptr db{raw};
  if (rc != SQLITE_OK)
    return open_error(db ? sqlite_message(db.get()) : sqlite3_errstr(rc));
  sqlite3_extended_result_codes(db.get(), 1);
  if (auto err = exec(db.get(), "PRAGMA synchronous=" + settings.synchronous))
    return open_error(err.message());
  if (settings.integrity_check)
    if (auto err = check_integrity(db.get()))
      return open_error(err.message());
  // Reading the schema is where a non-database fails. One transaction, so that two
  // processes creating the same file cannot interleave; nothing is written to a file that
  // turns out not to be ours.
  if (auto err = exec(db.get(), "BEGIN IMMEDIATE"))
    return open_error(err.message());
  if (auto err = initialize_schema(db.get())) {
    sqlite3_exec(db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    return open_error(err.message());
  }
  if (auto err = exec(db.get(), "COMMIT"))
    return open_error(err.message());
  // The journal mode is stored in the file (for WAL), so it is set only once the file is
  // known to be ours, and outside a transaction, where SQLite refuses to change it.
  auto mode = query(db.get(), "PRAGMA journal_mode=" + settings.journal_mode);
  if (!mode)
    return open_error(mode.error_value().message());
  // SQLite answers with the mode in effect; it may refuse a change (e.g. WAL in memory).
  if (mode->size() != 1 || upper(mode->front()) != settings.journal_mode)
    return open_error("journal_mode " + settings.journal_mode + " is not in effect, SQLite "
                      + "reports '" + (mode->empty() ? "" : mode->front()) + "'");
  std::unique_ptr<sqlite_backend> result{new sqlite_backend(path, std::move(db))};
  if (auto err = result->prepare_statements())
    return open_error(err.message());
  return std::unique_ptr<store_backend>{std::move(result)};
}

} // namespace

expected<std::unique_ptr<store_backend>> make_sqlite_backend(const backend_options& options) {
  auto settings = parse_options(options);
  if (!settings)
    return settings.error_value();
  return sqlite_backend::open(std::move(*settings));
}

} // namespace broker::internal
