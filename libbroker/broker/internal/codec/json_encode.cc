#include "broker/internal/codec/json.hh"

#include "broker/internal/codec/hex.hh"

#include "broker/address.hh"
#include "broker/port.hh"
#include "broker/subnet.hh"

#include <charconv>
#include <cmath>

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

void encode_fields(const data& x, std::string& out);

void encode_object(const data& x, std::string& out) {
  out += '{';
  encode_fields(x, out);
  out += '}';
}

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

void encode_fields(const data& x, std::string& out) {
  out += "\"@data-type\":\"";
  out += broker::to_string(x.get_type());
  out += "\",\"data\":";
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
    auto c = static_cast<uint8_t>(str[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
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
  encode_object(x, out);
}

std::string encode(const data& x) {
  std::string result;
  encode(x, result);
  return result;
}

void encode_data_message(std::string_view topic, const data& x, std::string& out) {
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
