#pragma once

// Insides of the JSON decoder shared by its three files, and the entry points of its two
// paths for the differential tests (json_fast.test.cc, fuzz/json_v1.cc). Not for other
// users: include json.hh.
//
// - The scanners below are the one definition of the string and number grammar (§6.1,
//   §6.3 of doc/protocol/websocket.md): the tokenizer (json.cc) and the single pass
//   (json_fast.cc) both call them, so the two paths cannot disagree about which bytes form
//   a token or where a syntax error is.
// - decode_string() and to_double() (json_decode.cc) turn tokens into values, again for
//   both paths.
// - The single pass (json_fast.cc) decodes the common layout only and answers false for
//   anything else, error or not; the public functions then run the general path (tokenizer
//   and converter), which alone words every error. See json.hh for the overall design.
//
// All functions are stateless apart from the buffers passed in; thread-safe.

#include "broker/internal/codec/json.hh"

#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::json::detail {

// -- character classes ---------------------------------------------------------------------

inline bool is_json_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

inline bool is_json_hex_digit(char c) noexcept {
  return is_json_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

inline bool is_json_whitespace(char c) noexcept {
  // CR is allowed too [fix]: Broker's parser rejects CRLF-formatted JSON (§5.2).
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

inline constexpr uint64_t swar_low_bits = 0x0101010101010101ull;
inline constexpr uint64_t swar_high_bits = 0x8080808080808080ull;
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "scan_string() finds bytes in little-endian words");

/// Non-zero if one of the eight bytes of `word` equals `byte` (SWAR); the lowest flagged
/// byte is exactly the first match (flags above it may be false positives).
constexpr uint64_t swar_has_byte(uint64_t word, uint8_t byte) noexcept {
  auto x = word ^ (swar_low_bits * byte);
  return (x - swar_low_bits) & ~x & swar_high_bits;
}

// -- scanners ------------------------------------------------------------------------------

/// Where a scan ended: on success the first byte after the token (strings: the closing
/// quote), on failure the offset and code of the syntax error, as the tokenizer reports it.
struct scan_result {
  size_t pos;
  pec code;
  bool ok;
};

/// Scans a string body from `pos` (just after the opening quote) to its closing quote.
/// Accepts every byte except an unescaped quote or backslash; escapes are `\"`, `\\`, `\/`,
/// `\b`, `\f`, `\n`, `\r`, `\t`, Broker's `\v` and `\uXXXX`. Adds flag_escaped and
/// flag_non_ascii to `flags`.
// Inlined: the call overhead is a good part of the cost of a short string.
__attribute__((always_inline)) inline scan_result scan_string(std::string_view in, size_t pos,
                                                              uint8_t& flags) noexcept {
  auto size = in.size();
  auto data = in.data();
  uint64_t high_bits = 0; // bit 7 of each byte: any raw byte >= 0x80 seen
  unsigned wide_high_bits = 0; // the same from 16-byte blocks, one bit per byte
  for (;;) {
    // Many bytes at a time: 16 with SSE2 (every x86-64 CPU), else 8 in a word (SWAR), in
    // which the lowest flagged byte of swar_has_byte() is exactly the first quote or
    // backslash. The last few bytes of the input go byte by byte.
    auto found = false;
#if defined(__SSE2__)
    auto quote = _mm_set1_epi8('"');
    auto backslash = _mm_set1_epi8('\\');
    while (pos + 16 <= size) {
      auto chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + pos));
      auto stop = static_cast<unsigned>(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash))));
      auto high = static_cast<unsigned>(_mm_movemask_epi8(chunk));
      if (stop != 0) {
        auto n = static_cast<unsigned>(__builtin_ctz(stop));
        wide_high_bits |= high & ((1u << n) - 1);
        pos += n;
        found = true;
        break;
      }
      wide_high_bits |= high;
      pos += 16;
    }
#endif
    while (!found && pos + 8 <= size) {
      uint64_t word;
      std::memcpy(&word, data + pos, 8);
      auto stop = swar_has_byte(word, '"') | swar_has_byte(word, '\\');
      if (stop != 0) {
        auto n = static_cast<size_t>(__builtin_ctzll(stop) / 8); // Little endian.
        high_bits |= n == 0 ? 0 : word & (~uint64_t{0} >> (64 - 8 * n));
        pos += n;
        found = true;
        break;
      }
      high_bits |= word;
      pos += 8;
    }
    if (!found)
      while (pos < size && data[pos] != '"' && data[pos] != '\\')
        high_bits |= static_cast<uint8_t>(data[pos++]);
    if (pos >= size)
      return {pos, pec::unexpected_eof, false};
    if (data[pos] == '"')
      break;
    flags |= flag_escaped;
    if (++pos >= size)
      return {pos, pec::unexpected_eof, false};
    switch (data[pos]) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
      case 'v': // Broker accepts \v; we do too (§6.3).
        ++pos;
        break;
      case 'u':
        ++pos;
        for (int i = 0; i < 4; ++i, ++pos) {
          if (pos >= size)
            return {pos, pec::unexpected_eof, false};
          if (!is_json_hex_digit(data[pos]))
            return {pos, pec::unexpected_character, false};
        }
        break;
      default:
        return {pos, pec::unexpected_character, false};
    }
  }
  if ((high_bits & swar_high_bits) != 0 || wide_high_bits != 0)
    flags |= flag_non_ascii;
  return {pos, pec::unexpected_character, true};
}

/// |INT64_MIN| as the limit of negative integer tokens, UINT64_MAX of the others.
inline constexpr uint64_t max_positive_magnitude = ~uint64_t{0};

/// A number token as scan_number() saw it.
struct number_scan {
  uint64_t magnitude; ///< Integral tokens within range: the absolute value.
  uint8_t flags;      ///< flag_integral, flag_negative.
};

/// The optional `.digits` and `[eE][+-]digits` of a number token from `pos`; clears
/// flag_integral if either is present.
inline scan_result scan_fraction_and_exponent(std::string_view in, size_t pos,
                                              uint8_t& flags) noexcept {
  auto size = in.size();
  auto data = in.data();
  if (pos >= size || (data[pos] != '.' && data[pos] != 'e' && data[pos] != 'E'))
    return {pos, pec::unexpected_character, true}; // the common case: an integer
  auto digits = [&]() -> scan_result {
    if (pos >= size)
      return {pos, pec::unexpected_eof, false};
    if (!is_json_digit(data[pos]))
      return {pos, pec::unexpected_character, false};
    while (pos < size && is_json_digit(data[pos]))
      ++pos;
    return {pos, pec::unexpected_character, true};
  };
  flags &= ~flag_integral;
  if (data[pos] == '.') {
    ++pos;
    if (auto res = digits(); !res.ok)
      return res;
  }
  if (pos < size && (data[pos] == 'e' || data[pos] == 'E')) {
    ++pos;
    if (pos < size && (data[pos] == '+' || data[pos] == '-'))
      ++pos;
    if (auto res = digits(); !res.ok)
      return res;
  }
  return {pos, pec::unexpected_character, true};
}

/// Scans a number token from `pos` (at '-' or a digit; the caller handles `-Infinity` and
/// `-inf`): `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`. Integer tokens beyond
/// the 64-bit ranges fail with integer_overflow or integer_underflow at the first digit that
/// does not fit, as in Broker.
inline scan_result scan_number(std::string_view in, size_t pos, number_scan& out) noexcept {
  auto size = in.size();
  auto data = in.data();
  auto fail_at = [&](size_t at) {
    return scan_result{at, at >= size ? pec::unexpected_eof : pec::unexpected_character,
                       false};
  };
  uint8_t flags = flag_integral;
  if (data[pos] == '-') {
    flags |= flag_negative;
    ++pos;
  }
  if (pos >= size || !is_json_digit(data[pos]))
    return fail_at(pos);
  uint64_t magnitude = 0;
  auto overflow_at = std::string_view::npos;
  if (data[pos] == '0') {
    ++pos;
  } else {
    // 18 digits always fit; from the 19th on, check each against the limit.
    auto fast_end = size - pos > 18 ? pos + 18 : size;
    do {
      magnitude = magnitude * 10 + static_cast<uint64_t>(data[pos] - '0');
      ++pos;
    } while (pos < fast_end && is_json_digit(data[pos]));
    auto limit = (flags & flag_negative) ? max_negative_magnitude : max_positive_magnitude;
    for (; pos < size && is_json_digit(data[pos]); ++pos) {
      auto digit = static_cast<uint64_t>(data[pos] - '0');
      if (overflow_at != std::string_view::npos)
        continue;
      if (magnitude > (limit - digit) / 10)
        overflow_at = pos;
      else
        magnitude = magnitude * 10 + digit;
    }
  }
  auto rest = scan_fraction_and_exponent(in, pos, flags);
  // Only an integer token overflows; a fraction or exponent makes it a real.
  if (rest.ok && (flags & flag_integral) && overflow_at != std::string_view::npos)
    return {overflow_at,
            (flags & flag_negative) ? pec::integer_underflow : pec::integer_overflow, false};
  out.magnitude = magnitude;
  out.flags = flags;
  return rest;
}

// -- token values (json_decode.cc) ---------------------------------------------------------

/// Decodes a string body validated by scan_string() into `out` (replacing its contents). A
/// `\uXXXX` surrogate pair becomes one code point; a lone surrogate becomes U+FFFD. With
/// `validate`, invalid UTF-8 in the raw bytes becomes U+FFFD as well, so every decoded
/// string is valid UTF-8 and re-encodes unchanged.
void decode_string(std::string_view raw, bool validate, std::string& out);

/// The double nearest to the number token `text`, rounding like IEEE arithmetic does:
/// magnitudes beyond DBL_MAX become infinity, tiny ones zero.
double to_double(std::string_view text);

// -- the two paths -------------------------------------------------------------------------

/// The single pass (json_fast.cc) over the layout Broker's encoder writes, with any
/// whitespace: `{["type":<string>,]"topic":<string>,"@data-type":"<T>","data":<V>}` where
/// every nested value object is `{"@data-type":"<T>","data":<V>}`, table entries are
/// `{"key":...,"value":...}`, keys are unescaped and none has `"data":{}`, `null` or no
/// data. True with the same topic and value as the general path; false for anything else
/// (errors included), leaving `topic`, `value` and `stack` unspecified. `stack` holds
/// finished values until their container closes; callers keep it to reuse its memory.
bool fast_data_message(std::string_view text, std::string& topic, data& value,
                       size_t max_depth, std::vector<data>& stack);

/// The single pass for decode(): one value object of the layout above.
bool fast_decode(std::string_view text, data& value, size_t max_depth,
                 std::vector<data>& stack);

/// The single pass for decode_filter(): an array of strings. False for anything else.
bool fast_filter(std::string_view text, size_t max_depth, std::vector<std::string>& out);

/// The general path alone (json_decode.cc): tokenizer, then converter.
decode_result general_data_message(std::string_view text, std::string& topic, data& value,
                                   size_t max_depth, std::vector<token>& tape);

/// The general path of decode().
decode_result general_decode(std::string_view text, data& value, size_t max_depth);

/// The general path of decode_filter().
expected<std::vector<std::string>> general_filter(std::string_view text, size_t max_depth);

} // namespace broker::internal::json::detail
