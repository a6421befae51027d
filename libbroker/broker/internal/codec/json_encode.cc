#include "broker/internal/codec/json.hh"

#include "broker/internal/codec/hex.hh"

#include "broker/address.hh"
#include "broker/port.hh"
#include "broker/subnet.hh"

#include <charconv>
#include <cmath>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace broker::internal::json {

namespace {

constexpr std::string_view replacement_character = "\xEF\xBF\xBD"; // U+FFFD in UTF-8


/// Enough for any double in shortest form and any 64-bit integer.
constexpr size_t number_buffer_size = 32;

/// Checks the UTF-8 character starting at `str[0]` (a byte >= 0x80). Sets `char_len` to the
/// length its lead byte announces (0 if it cannot start a character) and returns how many
/// bytes of it are well-formed: `char_len` for a valid character, less for an invalid or
/// truncated one. The ranges follow Unicode's table of well-formed byte sequences
/// (Table 3-7), which rules out overlong forms, surrogates and code points above U+10FFFF.
size_t valid_utf8_prefix(std::string_view str, size_t& char_len) noexcept {
  auto b0 = static_cast<uint8_t>(str[0]);
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    char_len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    char_len = 3;
    if (b0 == 0xE0)
      lo = 0xA0; // below would be overlong
    else if (b0 == 0xED)
      hi = 0x9F; // above would be a surrogate
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    char_len = 4;
    if (b0 == 0xF0)
      lo = 0x90; // below would be overlong
    else if (b0 == 0xF4)
      hi = 0x8F; // above would exceed U+10FFFF
  } else {
    char_len = 0;
    return 0;
  }
  size_t n = 1;
  for (; n < char_len && n < str.size(); ++n) {
    auto b = static_cast<uint8_t>(str[n]);
    if (b < lo || b > hi)
      break;
    lo = 0x80;
    hi = 0xBF;
  }
  return n;
}

/// The lowest flagged byte of the result (bit 7 of each byte) is the first byte of `w` that
/// append_string() must look at: a control character, '"', '\\' or a byte >= 0x80 (SWAR;
/// flags above it may be false, never below).
constexpr uint64_t special_bytes(uint64_t w) noexcept {
  constexpr uint64_t ones = 0x0101010101010101ull;
  constexpr uint64_t high = 0x8080808080808080ull;
  auto quote = w ^ (ones * '"');
  auto backslash = w ^ (ones * '\\');
  auto below_space = (w - ones * 0x20) & ~w;
  auto is_quote = (quote - ones) & ~quote;
  auto is_backslash = (backslash - ones) & ~backslash;
  return (below_space | is_quote | is_backslash | w) & high;
}

/// True for the bytes append_string() copies as they are.
constexpr bool is_plain(char ch) noexcept {
  auto c = static_cast<uint8_t>(ch);
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/// The first position from `i` on of a byte that append_string() must look at (or one
/// that may be; the caller checks each byte it stops at), or the end. 16 bytes at a time
/// with SSE2, then 8 in a word, the last few in one overlapping word.
size_t skip_plain(std::string_view str, size_t i) noexcept {
  auto size = str.size();
  auto data = str.data();
#if defined(__SSE2__)
  // A signed compare below 0x20 finds the control characters and the bytes >= 0x80
  // (negative); two more the quote and the backslash.
  for (; size - i >= 16; i += 16) {
    auto chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    auto special = _mm_or_si128(_mm_cmplt_epi8(chunk, _mm_set1_epi8(0x20)),
                                _mm_or_si128(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('"')),
                                             _mm_cmpeq_epi8(chunk, _mm_set1_epi8('\\'))));
    if (auto mask = static_cast<unsigned>(_mm_movemask_epi8(special)); mask != 0)
      return i + static_cast<size_t>(__builtin_ctz(mask));
  }
#endif
  for (; size - i >= 8; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    if (auto mask = special_bytes(w); mask != 0)
      return i + static_cast<size_t>(__builtin_ctzll(mask) / 8);
  }
  if (i < size && size >= 8) {
    // The last word, overlapping bytes before `i`, which are ignored (false flags they
    // may cause above them only make the caller look at a plain byte).
    auto start = size - 8;
    uint64_t w;
    std::memcpy(&w, data + start, 8);
    auto mask = special_bytes(w) & (~uint64_t{0} << (8 * (i - start)));
    return mask != 0 ? start + static_cast<size_t>(__builtin_ctzll(mask) / 8) : size;
  }
  while (i < size && is_plain(data[i]))
    ++i;
  return i;
}

template <class Integer>
void append_integer(Integer x, std::string& out) {
  char buf[number_buffer_size];
  auto res = std::to_chars(buf, buf + sizeof(buf), x);
  out.append(buf, res.ptr);
}

void append_quoted(const std::string& str, std::string& out) {
  // Texts from to_string() of addresses, ports and times are plain ASCII.
  out += '"';
  out += str;
  out += '"';
}

/// `{"@data-type":"<T>","data":` of each type, indexed by data::type: one append per
/// value object instead of four.
constexpr std::string_view object_prefixes[] = {
  R"({"@data-type":"none","data":)",      R"({"@data-type":"boolean","data":)",
  R"({"@data-type":"count","data":)",     R"({"@data-type":"integer","data":)",
  R"({"@data-type":"real","data":)",      R"({"@data-type":"string","data":)",
  R"({"@data-type":"address","data":)",   R"({"@data-type":"subnet","data":)",
  R"({"@data-type":"port","data":)",      R"({"@data-type":"timestamp","data":)",
  R"({"@data-type":"timespan","data":)",  R"({"@data-type":"enum-value","data":)",
  R"({"@data-type":"set","data":)",       R"({"@data-type":"table","data":)",
  R"({"@data-type":"vector","data":)",
};

static_assert(std::size(object_prefixes) == std::variant_size_v<data::variant_type>);

std::string_view object_prefix(const data& x) noexcept {
  return object_prefixes[static_cast<size_t>(x.get_type())];
}

/// About the size of `{"@data-type":"<T>","data":<V>}` for `x` (exact for most values,
/// short by the escapes of strings), so that an encoding reserves its memory once instead
/// of growing by doubling. Recursive like the encoder itself.
size_t object_size_hint(const data& x) noexcept;

/// About the size of the `<V>` of `x`.
size_t value_size_hint(const data& x) noexcept {
  using t = data::type;
  switch (x.get_type()) {
    case t::none:
      return 2;
    case t::boolean:
      return 5;
    case t::count:
    case t::integer:
    case t::real:
    case t::port:
      return 24;
    case t::string:
      return std::get<std::string>(x.get_data()).size() + 2;
    case t::enum_value:
      return std::get<enum_value>(x.get_data()).name.size() + 2;
    case t::address:
    case t::subnet:
    case t::timestamp:
    case t::timespan:
      return 48;
    case t::set: {
      size_t n = 2;
      for (const auto& y : std::get<broker::set>(x.get_data()))
        n += object_size_hint(y) + 1;
      return n;
    }
    case t::table: {
      size_t n = 2;
      for (const auto& [key, value] : std::get<broker::table>(x.get_data()))
        n += object_size_hint(key) + object_size_hint(value) + 20;
      return n;
    }
    case t::vector: {
      size_t n = 2;
      for (const auto& y : std::get<broker::vector>(x.get_data()))
        n += object_size_hint(y) + 1;
      return n;
    }
  }
  return 0;
}

size_t object_size_hint(const data& x) noexcept {
  return object_prefix(x).size() + value_size_hint(x) + 1;
}

void encode_object(const data& x, std::string& out);

struct value_encoder {
  std::string& out;

  void operator()(none) { out += "{}"; }
  void operator()(boolean x) { out += x ? "true" : "false"; }
  void operator()(count x) { append_integer(x, out); }
  void operator()(integer x) { append_integer(x, out); }
  void operator()(real x) { append_real(x, out); }
  void operator()(const std::string& x) { append_string(x, out); }
  void operator()(const address& x) { append_quoted(broker::to_string(x), out); }
  void operator()(const subnet& x) { append_quoted(broker::to_string(x), out); }
  void operator()(port x) { append_quoted(broker::to_string(x), out); }
  void operator()(timestamp x) { append_quoted(broker::to_string(x), out); }
  void operator()(timespan x) { append_quoted(broker::to_string(x), out); }
  void operator()(const enum_value& x) { append_string(x.name, out); }

  template <class Container>
  void encode_elements(const Container& xs) {
    out += '[';
    auto first = true;
    for (const auto& x : xs) {
      if (!first)
        out += ',';
      first = false;
      encode_object(x, out);
    }
    out += ']';
  }

  void operator()(const broker::set& xs) { encode_elements(xs); }
  void operator()(const broker::vector& xs) { encode_elements(xs); }

  void operator()(const broker::table& xs) {
    out += '[';
    auto first = true;
    for (const auto& [key, value] : xs) {
      if (!first)
        out += ',';
      first = false;
      out += "{\"key\":";
      encode_object(key, out);
      out += ",\"value\":";
      encode_object(value, out);
      out += '}';
    }
    out += ']';
  }
};

void encode_object(const data& x, std::string& out) {
  out += object_prefix(x);
  std::visit(value_encoder{out}, x.get_data());
  out += '}';
}

void encode_fields(const data& x, std::string& out) {
  out += object_prefix(x).substr(1); // without the '{'
  std::visit(value_encoder{out}, x.get_data());
}

} // namespace

void append_valid_utf8(std::string_view str, std::string& out) {
  size_t i = 0;
  size_t run_start = 0; // bytes in [run_start, i) are copied verbatim
  while (i < str.size()) {
    if (static_cast<uint8_t>(str[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t char_len = 0;
    auto n = valid_utf8_prefix(str.substr(i), char_len);
    if (char_len != 0 && n == char_len) {
      i += n;
      continue;
    }
    out.append(str.data() + run_start, i - run_start);
    out += replacement_character;
    i += n > 0 ? n : 1;
    run_start = i;
  }
  out.append(str.data() + run_start, i - run_start);
}

void append_string(std::string_view str, std::string& out) {
  out += '"';
  size_t i = 0;
  size_t run_start = 0; // bytes in [run_start, i) are copied verbatim
  auto flush = [&] { out.append(str.data() + run_start, i - run_start); };
  while (i < str.size()) {
    i = skip_plain(str, i);
    if (i == str.size())
      break;
    auto c = static_cast<uint8_t>(str[i]);
    if (is_plain(str[i])) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t char_len = 0;
      auto n = valid_utf8_prefix(str.substr(i), char_len);
      if (char_len != 0 && n == char_len) {
        i += n;
        continue;
      }
      // Replace the maximal invalid subpart (at least one byte) by one U+FFFD, as the
      // WHATWG and Unicode recommend, then resume at the first byte not consumed.
      flush();
      out += replacement_character;
      i += n > 0 ? n : 1;
      run_start = i;
      continue;
    }
    flush();
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += hex_digits[c >> 4];
        out += hex_digits[c & 0x0F];
    }
    ++i;
    run_start = i;
  }
  flush();
  out += '"';
}

void append_real(double x, std::string& out) {
  if (std::isnan(x)) {
    out += "NaN";
    return;
  }
  if (std::isinf(x)) {
    out += x < 0 ? "-Infinity" : "Infinity";
    return;
  }
  char buf[number_buffer_size];
  auto res = std::to_chars(buf, buf + sizeof(buf), x);
  std::string_view str{buf, static_cast<size_t>(res.ptr - buf)};
  out += str;
  // Integral values print without a fraction ("2"); keep them readable as reals.
  if (str.find_first_of(".eE") == std::string_view::npos)
    out += ".0";
}

void encode(const data& x, std::string& out) {
  out.reserve(out.size() + object_size_hint(x));
  encode_object(x, out);
}

std::string encode(const data& x) {
  std::string result;
  encode(x, result);
  return result;
}

void encode_data_message(std::string_view topic, const data& x, std::string& out) {
  // {"type":"data-message","topic":"", then the fields; the object's braces are counted.
  out.reserve(out.size() + 33 + topic.size() + object_size_hint(x));
  out += "{\"type\":\"data-message\",\"topic\":";
  append_string(topic, out);
  out += ',';
  encode_fields(x, out);
  out += '}';
}

std::string encode_data_message(std::string_view topic, const data& x) {
  std::string result;
  encode_data_message(topic, x, result);
  return result;
}

std::string make_ack(std::string_view endpoint_id, std::string_view version) {
  std::string result = "{\"type\":\"ack\",\"endpoint\":";
  append_string(endpoint_id, result);
  result += ",\"version\":";
  append_string(version, result);
  result += '}';
  return result;
}

std::string make_error(std::string_view code, std::string_view context) {
  std::string result = "{\"type\":\"error\",\"code\":";
  append_string(code, result);
  result += ",\"context\":";
  append_string(context, result);
  result += '}';
  return result;
}

} // namespace broker::internal::json
