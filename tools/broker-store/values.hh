#pragma once

// How broker-store reads KEYs and VALUEs from its command line or stdin, and how it writes
// values back (doc/broker-store.md "Values").
//
// Reading, one word at a time (parse_value), in the one literal syntax that
// `python -m brokerclient` shares (doc/literals.md; both test the table in
// tests/data/literals.json):
//   - digits with the suffix `c` (`5c`) are a `count`;
//   - a word starting with `"`, `[` or `{`, and true/false/null, is JSON: strings, vectors,
//     tables with string keys, and Broker's typed form {"@data-type": T, "data": V} (any
//     type) wherever a value may stand;
//   - a JSON number is an `integer` without fraction or exponent, a `real` with one;
//   - an address, subnet, port (`80/tcp`), timespan (`10s`) or timestamp
//     (`2022-04-10T07:00:00`) in the JSON API's text form is that type;
//   - any other word is the string itself, unless it starts like a number (an error: a
//     typo, or a string to quote).
// Writing: broker::to_json, Broker's typed form as the WebSocket API spells it, so every
// type survives a round trip.
//
// The typed form goes through the library's public JSON API (broker/json.hh), which is the
// WebSocket API's codec: one codec per format, so the tool accepts and prints exactly what
// WebSocket clients do.

#include <broker/data.hh>
#include <broker/error.hh>
#include <broker/time.hh>

#include <optional>
#include <string>
#include <string_view>

namespace broker_store {

/// Nesting limit of a plain JSON value (arrays in arrays).
inline constexpr size_t max_value_depth = 64;

/// Parses one KEY or VALUE word (see the file comment). Errors: invalid_json (a word that
/// must be JSON and is not), invalid_data (no Broker value: an integer beyond int64,
/// nesting deeper than max_value_depth, a bad typed form, a word that starts like a number
/// and is none).
broker::expected<broker::data> parse_value(std::string_view word);

} // namespace broker_store
