#include "store_options.hh"

#include "option_rows.hh"

#include <array>
#include <cctype>
#include <filesystem>

namespace broker_tools {

namespace {

/// Where SQLite store files go unless --store-dir says otherwise.
constexpr const char* default_store_dir = ".";

constexpr std::string_view synchronous_key = "sqlite-synchronous";
constexpr std::string_view journal_mode_key = "sqlite-journal-mode";

constexpr std::array<std::string_view, 4> synchronous_values{"OFF", "NORMAL", "FULL",
                                                             "EXTRA"};
constexpr std::array<std::string_view, 6> journal_mode_values{"DELETE", "TRUNCATE", "PERSIST",
                                                              "MEMORY", "WAL",      "OFF"};

/// Zeek's spelling of the values: Broker::SQLITE_SYNCHRONOUS_NORMAL.
constexpr std::string_view synchronous_enum_prefix = "BROKER::SQLITE_SYNCHRONOUS_";
constexpr std::string_view journal_mode_enum_prefix = "BROKER::SQLITE_JOURNAL_MODE_";

template <size_t N>
broker::expected<std::string> read_pragma(const broker::configuration& cfg,
                                          std::string_view key, std::string_view enum_prefix,
                                          const std::array<std::string_view, N>& values) {
  auto text = cfg.get_string(std::string{key}).value_or("");
  if (text.empty())
    return text;
  std::string value;
  for (auto c : text)
    value += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (value.compare(0, enum_prefix.size(), enum_prefix) == 0)
    value.erase(0, enum_prefix.size());
  for (auto x : values)
    if (value == x)
      return value;
  std::string names;
  for (auto x : values)
    names += (names.empty() ? "" : ", ") + std::string{x};
  return option_error(key, "expected one of " + names + ", got " + broker_tools::in_quotes(text));
}

} // namespace

void add_store_rows(std::vector<broker::option_info>& rows, const std::string& what) {
  rows.push_back(choice_row("store-backend", "memory", {"memory", "sqlite"},
                            "backend of " + what + ": memory, or sqlite (<store-dir>/<name>.db)"));
  rows.push_back(string_row("store-dir", default_store_dir,
                            "directory of the SQLite files of " + what));
  rows.push_back(string_row(std::string{synchronous_key}, "",
                            "SQLite PRAGMA synchronous: OFF, NORMAL, FULL or EXTRA; empty: "
                            "the backend's default"));
  rows.push_back(string_row(std::string{journal_mode_key}, "",
                            "SQLite PRAGMA journal_mode: DELETE, TRUNCATE, PERSIST, MEMORY, "
                            "WAL or OFF; empty: the backend's default"));
}

broker::expected<store_settings> read_store_settings(const broker::configuration& cfg) {
  store_settings result;
  if (cfg.get_string("store-backend").value_or("memory") == "sqlite")
    result.backend = broker::backend::sqlite;
  result.dir = cfg.get_string("store-dir").value_or(default_store_dir);
  auto synchronous = read_pragma(cfg, synchronous_key, synchronous_enum_prefix,
                                 synchronous_values);
  if (!synchronous)
    return synchronous.error_value();
  result.synchronous = std::move(*synchronous);
  auto journal_mode = read_pragma(cfg, journal_mode_key, journal_mode_enum_prefix,
                                  journal_mode_values);
  if (!journal_mode)
    return journal_mode.error_value();
  result.journal_mode = std::move(*journal_mode);
  if (result.backend == broker::backend::sqlite) {
    if (result.dir.empty())
      return option_error("store-dir", "must not be empty (\".\" is the current directory)");
  } else {
    for (auto key : {synchronous_key, journal_mode_key})
      if (!cfg.get_string(std::string{key}).value_or("").empty())
        return option_error(key, "applies only to --store-backend=sqlite");
  }
  return result;
}

broker::backend_options backend_options_for(const store_settings& settings,
                                            const std::string& name) {
  broker::backend_options result;
  if (settings.backend != broker::backend::sqlite)
    return result;
  result["path"] = (std::filesystem::path{settings.dir} / (name + ".db")).string();
  if (!settings.synchronous.empty())
    result["synchronous"] = settings.synchronous;
  if (!settings.journal_mode.empty())
    result["journal_mode"] = settings.journal_mode;
  return result;
}

broker::error check_store_file_name(const store_settings& settings, std::string_view key,
                                    const std::string& name) {
  if (settings.backend == broker::backend::sqlite && name.find('/') != std::string::npos)
    return option_error(key, "store " + in_quotes(name)
                               + " cannot name a file <store-dir>/<name>.db (it contains "
                                 "'/'); use --store-backend=memory or another name");
  return {};
}

} // namespace broker_tools
