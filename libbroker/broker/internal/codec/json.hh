#pragma once

// JSON codec of the WebSocket API v1 (doc/protocol/websocket.md §5, §6, §8; the section
// numbers below are that page's).
//
// Who calls what:
// - The WebSocket server decodes each client text message with decode_filter() (first
//   message) or decode_data_message() (every later one), turns failures into error frames
//   with error_context() + make_error(), and greets clients with make_ack().
// - The message cache encodes each published message once with encode_data_message() and
//   hands the same bytes to every subscribed client.
//
// All functions are stateless and thread-safe. The encoder is byte-exact (§5.1, §6 with our
// [fix] variants). The decoder is total: any byte string yields a value or a decode_result
// error, with an iterative parser (no recursion proportional to the input), a nesting limit,
// and allocations bounded by a small multiple of the input size.
//
// Decoding takes one of two paths with the same results:
// - The single pass (json_fast.cc) reads the layout Broker's encoder writes, with any
//   whitespace: the envelope's members in Broker's order, `@data-type` then `data` in each
//   value object, `key` then `value` in table entries, unescaped keys. It builds
//   broker::data directly, dispatching on the type name's length and first byte. Anything
//   else, and every error, makes it give up without a word.
// - The general path then decodes the input from the start, in two stages, in the order
//   Broker checks (§8):
//   1. A tokenizer validates the JSON syntax and writes a flat tape of tokens in which every
//      container knows where it ends. Syntax errors carry CAF-shaped codes with 1-based
//      line/column, and integer tokens beyond the 64-bit ranges are syntax errors as in
//      Broker.
//   2. A converter walks the tape and builds broker::data directly. The tape lets it find
//      `@data-type` even when `data` comes first, skipping any subtree in O(1). It words
//      every error.
// Both paths scan strings and numbers with the same functions (json_internal.hh), enforce
// the same nesting limit and bound their allocations by the input size.

#include "broker/data.hh"
#include "broker/error.hh"
#include "broker/time.hh"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::json {

/// Default nesting limit of the JSON text: arrays plus objects, the top-level object counts
/// as 1 (Broker's CAF parser uses 128). Each nested Broker container costs two levels.
inline constexpr size_t default_max_depth = 128;

/// Larger limits are clamped to this value so the converter's recursion stays shallow.
inline constexpr size_t max_depth_limit = 1024;

/// Inputs of this size or larger are rejected as malformed (the tape stores 32-bit
/// offsets). Broker caps messages at INT32_MAX bytes, well below.
inline constexpr size_t max_input_size = UINT32_MAX;

// -- encoding ----------------------------------------------------------------------------

/// Appends `{"@data-type":"<T>","data":<V>}` (compact, byte-exact per §6). Pre: nesting
/// depth of `x` small enough for recursion (values from our decoders always are).
void encode(const data& x, std::string& out);

/// Convenience: the encoding of `x` as a fresh string.
std::string encode(const data& x);

/// Appends the flattened data message
/// `{"type":"data-message","topic":"<topic>","@data-type":"<T>","data":<V>}` (§5.1).
void encode_data_message(std::string_view topic, const data& x, std::string& out);

/// Convenience: the data message as a fresh string.
std::string encode_data_message(std::string_view topic, const data& x);

/// Appends `str` as a JSON string literal with quotes, escaped per §6.3: `\"`, `\\`,
/// `\b`, `\f`, `\n`, `\r`, `\t`, other bytes < 0x20 as `\u00xx`, and each maximal invalid
/// UTF-8 subpart replaced by U+FFFD, so the output is always valid UTF-8.
void append_string(std::string_view str, std::string& out);

/// Appends `str` with each maximal invalid UTF-8 subpart (WHATWG/Unicode "maximal subpart"
/// practice) replaced by U+FFFD.
void append_valid_utf8(std::string_view str, std::string& out);

/// Appends a real per §6.2: shortest round-trip text with ".0" added when it has no
/// '.', 'e' or 'E'; non-finite values as `NaN`, `Infinity`, `-Infinity`.
void append_real(double x, std::string& out);

/// `{"type":"ack","endpoint":"<endpoint_id>","version":"<version>"}` (§4.2).
std::string make_ack(std::string_view endpoint_id, std::string_view version);

/// `{"type":"error","code":"<code>","context":"<context>"}` (§8), both strings escaped.
std::string make_error(std::string_view code, std::string_view context);

// -- decoding ----------------------------------------------------------------------------

/// Syntax error codes, named after CAF's `caf::pec` values that Broker reports (§8).
enum class pec : uint8_t {
  unexpected_character,
  unexpected_eof,
  trailing_character,
  integer_overflow,  ///< An integer token above 2^64-1.
  integer_underflow, ///< An integer token below -2^63.
  nested_too_deeply, ///< More than max_depth nested arrays/objects.
  input_too_large,   ///< Not CAF's: the input has max_input_size bytes or more.
};

/// The CAF name of `code`, e.g. "unexpected_character".
std::string_view to_string(pec code) noexcept;

/// The §8 categories of a decoding failure, in the order the decoder checks them.
enum class decode_status : uint8_t {
  ok,
  malformed_json, ///< Not JSON at all; see decode_result::code/line/column.
  not_an_object,  ///< Valid JSON, but the top level is not an object.
  invalid_data,   ///< Well-formed JSON that does not describe a valid message.
  internal_error, ///< A duplicate set element or table key (Broker fails late on these).
};

/// Outcome of decoding one client message.
struct decode_result {
  decode_status status = decode_status::ok;
  /// Syntax error and its 1-based position; meaningful only for malformed_json.
  pec code = pec::unexpected_character;
  size_t line = 0;
  size_t column = 0;
  /// What was wrong, for people: for invalid_data the JSON path of the offending value and
  /// what it should have been (e.g. `data[1].data: expected a non-negative integer for
  /// @data-type "count", got number -5`); for not_an_object what came instead.
  std::string detail;

  /// True on success.
  explicit operator bool() const noexcept { return status == decode_status::ok; }
};

/// Renders a syntax error as Broker does: `caf::pec::unexpected_character(1, 1)`.
/// Pre: `res.status == decode_status::malformed_json`.
std::string parser_error_text(const decode_result& res);

/// A syntax error for people: `unexpected end of input at line 1, column 12`.
/// Pre: `res.status == decode_status::malformed_json`.
std::string syntax_error_text(const decode_result& res);

/// The §8 context string for message number `input_number` (1-based, counted after the
/// handshake): Broker's words, then after ` -> ` what was wrong, e.g. `input #3 contained
/// invalid data -> data: expected a non-negative integer for @data-type "count", got
/// string "seven"`. Clients that match Broker's prefix keep working. Pre: `!res`.
std::string error_context(size_t input_number, const decode_result& res);

/// Decodes a client data message (§5.2): a JSON object with an optional string `topic`
/// (missing or not a string means ""), the flattened `@data-type`/`data` pair, and any other
/// keys ignored. A topic starting with "<$>" is invalid data. Of a repeated key the first
/// occurrence counts. Strings accept every JSON escape plus Broker's `\v` and raw control
/// bytes; lone surrogate escapes and invalid UTF-8 decode to U+FFFD, so every decoded string
/// re-encodes unchanged. On failure `topic` and `value` hold unspecified values.
decode_result decode_data_message(std::string_view text, std::string& topic, data& value,
                                  size_t max_depth = default_max_depth);

/// Decodes a single value object `{"@data-type":"<T>","data":<V>}` (other keys ignored).
decode_result decode(std::string_view text, data& value, size_t max_depth = default_max_depth);

/// Decodes the first client message (§4.1): a JSON array of strings (topic prefixes).
/// Anything else yields ec::deserialization_failed "first message must contain a filter",
/// followed by what came instead (e.g. `: element 2 is a number, not a string`).
expected<std::vector<std::string>> decode_filter(std::string_view text,
                                                 size_t max_depth = default_max_depth);

/// Parses the timestamp input grammar of §6.7: `YYYY-MM-DDThh:mm:ss`, an optional '.' with
/// 0-9 fraction digits, an optional zone `Z`, `±hh:mm`, `±hhmm` or `±hh` (none = UTC).
/// Returns nullopt for an invalid calendar date or time, second 60, or a result outside the
/// int64 nanosecond range.
std::optional<timestamp> parse_timestamp(std::string_view text);

/// Parses the timespan input grammar of §6.8: `<number><unit>` with unit `ns`, `us`, `ms`,
/// `s`, `min`, `h` or `d`; the number has an optional sign and an optional fraction, is
/// evaluated exactly and truncated toward zero. Returns nullopt for anything else or a result
/// outside int64 nanoseconds.
std::optional<timespan> parse_timespan(std::string_view text);

// -- implementation details shared by json.cc (stage 1) and json_decode.cc (stage 2) ------

namespace detail {

/// What a tape entry holds.
enum class token_kind : uint8_t {
  object,
  array,
  string,
  number,
  true_value,
  false_value,
  null_value,
  nan_value, ///< `NaN` or `nan`
  pos_inf,   ///< `Infinity` or `inf`
  neg_inf,   ///< `-Infinity` or `-inf`
};

/// A string with backslash escapes (otherwise its raw bytes are its value).
inline constexpr uint8_t flag_escaped = 0x01;
/// A number with neither fraction nor exponent.
inline constexpr uint8_t flag_integral = 0x02;
/// A number starting with '-'.
inline constexpr uint8_t flag_negative = 0x04;
/// A string with raw bytes >= 0x80, which need UTF-8 validation.
inline constexpr uint8_t flag_non_ascii = 0x08;

/// |INT64_MIN|: the largest magnitude of a negative integer token.
inline constexpr uint64_t max_negative_magnitude = uint64_t{1} << 63;

/// One entry of the tape. A container's children follow it directly; an object's members
/// are stored as key (a string token) followed by the value.
struct token {
  uint32_t offset; ///< First byte in the input (strings: after the opening quote).
  uint32_t extent; ///< Scalars: byte length (strings: without quotes). Containers: the
                   ///< tape index one past the container's subtree.
  uint32_t count;  ///< Containers: number of elements or members.
  token_kind kind;
  uint8_t flags;
};

/// Stage 1: validates `input` as one JSON value and fills `tape` with its tokens. Integer
/// tokens are range-checked against uint64/int64; escapes are validated but not decoded.
decode_result tokenize(std::string_view input, size_t max_depth, std::vector<token>& tape);

} // namespace detail

/// Decodes client data messages one after another, like decode_data_message(), reusing its
/// buffers: a WebSocket session keeps one, so that steady state allocates nothing per
/// message beyond the decoded value itself (and a topic or string value that does not fit
/// the capacity `topic` or `value` already has). Owner: one session; not thread-safe.
class decoder {
public:
  decode_result data_message(std::string_view text, std::string& topic, data& value,
                             size_t max_depth = default_max_depth);

private:
  std::vector<data> stack_;          ///< The single pass's values awaiting their container.
  std::vector<detail::token> tape_;  ///< The general path's tokens.
};

} // namespace broker::internal::json
