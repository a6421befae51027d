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
// Writing (to_json): Broker's typed form as the WebSocket API spells it, so every type
// survives a round trip.
//
// The typed form goes through the WebSocket API's codec (broker/internal/codec/json.hh, exported
// by the shared library): one codec per format, so the tool accepts and prints exactly
// what WebSocket clients do.

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

/// Parses an EXPIRY or TIMEOUT word: a number with a unit (`ns`, `us`, `ms`, `s`, `min`,
/// `h`, `d`), e.g. `10s` or `1.5min`; nullopt for anything else.
std::optional<broker::timespan> parse_duration(std::string_view word);

/// Broker's typed JSON of `x`: {"@data-type":"count","data":5}.
std::string to_json(const broker::data& x);

/// `text` as a JSON string literal (quoted, escaped, valid UTF-8).
std::string json_string(std::string_view text);

} // namespace broker_store
