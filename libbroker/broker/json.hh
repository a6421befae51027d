#pragma once

// Broker's typed JSON, the value syntax of the WebSocket API v1 (doc/web-socket.md):
//
//   broker::to_json(broker::data{broker::count{5}})   // {"@data-type":"count","data":5}
//   auto x = broker::from_json(R"({"@data-type":"integer","data":-1})");   // expected<data>
//
// Every one of the 15 types round-trips: from_json(to_json(x)) == x. These are the codec
// the WebSocket server uses, so a program prints and reads values exactly as WebSocket
// clients see them. All functions are stateless and thread-safe.

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/export.hh"
#include "broker/time.hh"

#include <optional>
#include <string>
#include <string_view>

namespace broker {

/// The typed JSON of `x`: `{"@data-type":"<type>","data":<value>}`, compact, valid UTF-8
/// (invalid bytes in strings become U+FFFD).
BROKER_API std::string to_json(const data& x);

/// Parses one typed JSON value. Nesting is limited (128 levels of JSON, i.e. 64 levels of
/// Broker containers). Errors: ec::invalid_json for text that is not JSON (the message
/// names line and column), ec::invalid_data for JSON that is not a typed value (an untyped
/// number, an unknown `@data-type`, a count below zero, a duplicate set element, ...).
BROKER_API expected<data> from_json(std::string_view text);

/// `text` as a JSON string literal: quoted, escaped, invalid UTF-8 replaced by U+FFFD.
BROKER_API std::string to_json_string(std::string_view text);

/// Parses a timespan as the JSON form writes it: a decimal number (optional sign and
/// fraction) and a unit `ns`, `us`, `ms`, `s`, `min`, `h` or `d`, e.g. `10s`, `1.5min`.
/// Returns nullopt for anything else or a value beyond 64-bit nanoseconds.
BROKER_API std::optional<timespan> parse_timespan(std::string_view text);

} // namespace broker
