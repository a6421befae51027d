#pragma once

// The options of access control (doc/security.md): rows of the one options table, appended
// by make_options_table() after the core rows, and read here so that the rest of the
// library never looks them up by key.
//
// Keys: broker.security.rules-file.

#include "broker/configuration.hh"

#include <string>
#include <vector>

namespace broker::internal {

/// The key of the rules file option.
inline constexpr const char* rules_file_key = "broker.security.rules-file";

/// Appends the rows of this file to the options table.
void append_security_options(std::vector<option_info>& table);

/// broker.security.rules-file: the path of the rules file, or empty (no rules: every
/// connection may publish and subscribe everything).
std::string read_rules_file(const configuration& cfg);

} // namespace broker::internal
