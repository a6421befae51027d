#pragma once

// store_options: where a tool keeps the masters it hosts (broker-node --master-stores,
// broker-store --master): the memory or SQLite backend, the SQLite directory and
// SQLite's durability settings. The same rows, spelled the same way, in both tools.
//
//   rows: store-backend (memory | sqlite), store-dir (<dir>/<store>.db),
//         sqlite-synchronous (OFF, NORMAL, FULL, EXTRA),
//         sqlite-journal-mode (DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF)
// The SQLite values are case-insensitive and may be written as Zeek's Broker enums
// (Broker::SQLITE_SYNCHRONOUS_NORMAL, Broker::SQLITE_JOURNAL_MODE_WAL); empty keeps the
// backend's default (doc/stores-backends.md).

#include <broker/configuration.hh>
#include <broker/error.hh>
#include <broker/store.hh>

#include <string>
#include <vector>

namespace broker_tools {

/// The validated store rows.
struct store_settings {
  broker::backend backend = broker::backend::memory;
  std::string dir;
  std::string synchronous;  ///< Upper case, or empty for the default.
  std::string journal_mode; ///< Upper case, or empty for the default.
};

/// Appends the rows; `what` names what the backend is for, e.g. "--master-stores".
void add_store_rows(std::vector<broker::option_info>& rows, const std::string& what);

/// Reads and checks the rows. Errors name the key: an unknown SQLite value, an empty
/// store-dir with sqlite, SQLite settings with the memory backend.
broker::expected<store_settings> read_store_settings(const broker::configuration& cfg);

/// The backend options of store `name`: path <dir>/<name>.db and the SQLite settings.
/// Empty for the memory backend.
broker::backend_options backend_options_for(const store_settings& settings,
                                            const std::string& name);

/// Checks that `name` can name a file <dir>/<name>.db (`key` names the option it came
/// from); always fine with the memory backend.
broker::error check_store_file_name(const store_settings& settings, std::string_view key,
                                    const std::string& name);

} // namespace broker_tools
