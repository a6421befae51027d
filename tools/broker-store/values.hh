#pragma once

// How broker-store reads KEYs and VALUEs from its command line or stdin, and how it writes
// values back (doc/broker-store.md "Values").
//
// Reading, one word at a time (parse_value):
//   - a word starting like JSON (`"`, `[`, `{`, a digit, `-`) or one of true/false/null is
//     JSON: integers are `integer`, other numbers `real`, arrays `vector`, and an object
//     must be Broker's typed form {"@data-type": T, "data": V} (any type, e.g. count or set);
//   - digits with the suffix `c` (`5c`) are a `count`;
//   - any other word, the empty word included, is the string itself.
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

/// Parses one KEY or VALUE word (see the file comment). Errors: invalid_json (a JSON-looking
/// word that is not JSON), invalid_data (JSON that is no Broker value: an untyped object, an
/// integer beyond int64, nesting deeper than max_value_depth, a bad typed form).
broker::expected<broker::data> parse_value(std::string_view word);

} // namespace broker_store
