#pragma once

// The config-file syntax: a small, total parser that turns text into (key, value, position)
// entries. It knows nothing about the options table; configuration::load_string() applies
// the entries, so syntax errors and option errors stay separate concerns.
//
// Accepted (see doc/configuration.md):
//   # comment
//   broker { disable-ssl = true  web-socket { port = 9997 } }   nested sections
//   broker = { ttl = 16, disable-forwarding = false }           CAF's `key = { ... }` form
//   [broker.ssl]                                                INI section for what follows
//   broker.ttl = 16                                             flat dotted keys
//   topics = ["/a", '/b', /c]                                   lists of strings
//   passphrase = "with \"escapes\""                             quoted or bare strings
//   {"broker": {"ttl": 16}, "topics": ["/a"]}                   JSON, as CAF reads it
// The parser is iterative (no recursion) and reports every error with line and column.
// Memory stays linear in the input: a key, section prefixes included, is at most
// max_key_size bytes, because every entry stores its full key (a long [section] name
// followed by many short entries would otherwise cost their product).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "broker/error.hh"

namespace broker::internal {

/// The longest key a config file may use, section prefixes included. Every option's key is
/// far shorter.
inline constexpr size_t max_key_size = 256;

/// One `key = value` of a config file, with the section prefixes already applied.
struct config_entry {
  std::string key;
  /// A scalar as written (quotes removed) or a list of scalars.
  std::variant<std::string, std::vector<std::string>> value;
  size_t line = 0;   ///< 1-based line of the key.
  size_t column = 0; ///< 1-based column (in bytes) of the key.
};

/// Parses config-file text. Errors (invalid_config) read "origin:line:column: what".
expected<std::vector<config_entry>> parse_config_text(std::string_view text,
                                                      std::string_view origin);

/// Parses a whole list literal such as `["/a", /b]`; nullopt unless `text` is exactly one
/// list (surrounding whitespace allowed).
std::optional<std::vector<std::string>> parse_list_literal(std::string_view text);

} // namespace broker::internal
