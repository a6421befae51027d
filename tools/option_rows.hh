#pragma once

// option_rows: builders for the rows the tools add to the configuration's options table
// (broker::configuration::add_option), so that their own options work on the command
// line, in config files and in --help exactly like the library's.
//
//   std::vector<broker::option_info> rows;
//   rows.push_back(count_row("peer-retry", 1, 0, 3600, "seconds between re-dials"));
//   rows.push_back(flag_row("verbose", "print every event", 'v'));
//   if (auto err = add_rows(cfg, std::move(rows))) ...

#include <broker/configuration.hh>
#include <broker/error.hh>

#include <cstdint>
#include <string>
#include <vector>

namespace broker_tools {

/// A row of any type with a textual default.
broker::option_info option_row(std::string key, broker::option_type type,
                               std::string default_value, std::string help,
                               char short_flag = 0);

/// A count in [min, max].
broker::option_info count_row(std::string key, uint64_t default_value, uint64_t min,
                              uint64_t max, std::string help, char short_flag = 0);

/// A boolean that defaults to false (`--flag` sets it).
broker::option_info flag_row(std::string key, std::string help, char short_flag = 0);

/// A list of strings that defaults to empty.
broker::option_info list_row(std::string key, std::string help, char short_flag = 0);

/// A string that defaults to `default_value`.
broker::option_info string_row(std::string key, std::string default_value, std::string help);

/// One of `choices`.
broker::option_info choice_row(std::string key, std::string default_value,
                               std::vector<std::string> choices, std::string help,
                               char short_flag = 0);

/// Adds every row to `cfg`; fails at the first clash with an existing key or flag.
broker::error add_rows(broker::configuration& cfg, std::vector<broker::option_info> rows);

/// `key: what`, the shape of every option error of the tools (ec::invalid_config).
broker::error option_error(std::string_view key, std::string what);

/// `text` in double quotes, for error messages.
std::string in_quotes(std::string_view text);

} // namespace broker_tools
