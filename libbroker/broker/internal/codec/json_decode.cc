#include "broker/internal/codec/json.hh"
#include "broker/internal/codec/json_internal.hh"

#include "broker/address.hh"
#include "broker/port.hh"
#include "broker/subnet.hh"
#include "broker/topic.hh"

#include <algorithm>
#include <charconv>
#include <limits>

namespace broker::internal::json {

namespace {

using namespace detail;

/// Smallest valid value object, `{"@data-type":"none"}`: bounds how many elements an array
/// can legitimately hold, so reserve() never exceeds what the input justifies.
constexpr size_t min_value_object_size = 21;

constexpr auto npos = std::numeric_limits<uint32_t>::max();

void append_utf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

uint32_t hex_value(char c) noexcept {
  if (c >= '0' && c <= '9')
    return static_cast<uint32_t>(c - '0');
  if (c >= 'a' && c <= 'f')
    return static_cast<uint32_t>(c - 'a' + 10);
  return static_cast<uint32_t>(c - 'A' + 10);
}

/// Reads the 4 hex digits at `str[pos]`. Pre: validated by the tokenizer.
uint32_t read_hex4(std::string_view str, size_t pos) noexcept {
  uint32_t result = 0;
  for (size_t i = 0; i < 4; ++i)
    result = result * 16 + hex_value(str[pos + i]);
  return result;
}

constexpr uint32_t replacement_code_point = 0xFFFD;

bool is_high_surrogate(uint32_t x) noexcept {
  return x >= 0xD800 && x <= 0xDBFF;
}

bool is_low_surrogate(uint32_t x) noexcept {
  return x >= 0xDC00 && x <= 0xDFFF;
}

/// Appends raw string bytes, replacing invalid UTF-8 if `validate`.
void append_raw(std::string_view bytes, bool validate, std::string& out) {
  if (validate)
    append_valid_utf8(bytes, out);
  else
    out.append(bytes);
}

/// Longest excerpt of a string or number quoted in an error message.
constexpr size_t max_quoted = 40;

/// `text` in quotes, cut to max_quoted bytes (with "...").
std::string quoted(std::string_view text) {
  std::string result = "\"";
  if (text.size() > max_quoted) {
    append_valid_utf8(text.substr(0, max_quoted), result);
    result += "...";
  } else {
    append_valid_utf8(text, result);
  }
  result += '"';
  return result;
}

/// Builds broker::data from a tape (see json.hh, stage 2). Failures are invalid data; a
/// duplicate set element or table key is only remembered, because Broker reports invalid
/// data anywhere in the message before duplicates.
class converter {
public:
  converter(std::string_view input, const std::vector<token>& tape)
    : in_(input), tape_(tape) {}

  bool saw_duplicate() const noexcept { return saw_duplicate_; }

  /// After a failed conversion: the JSON path of the offending value and what was wrong.
  std::string failure() const {
    std::string path;
    for (auto i = path_.rbegin(); i != path_.rend(); ++i)
      path += *i;
    if (!path.empty() && path.front() == '.')
      path.erase(0, 1);
    return path.empty() ? why_ : path + ": " + why_;
  }

  /// Records why the conversion fails (the innermost reason wins); returns false.
  bool fail(std::string why) {
    if (why_.empty())
      why_ = std::move(why);
    return false;
  }

  /// Adds the segment of the path that leads to the failure (called while unwinding).
  bool fail_at(std::string segment) {
    path_.push_back(std::move(segment));
    return false;
  }

  /// What the token at `index` is, for error messages: `number -5`, `string "x"`, ...
  std::string describe(uint32_t index) const {
    auto& tok = tape_[index];
    switch (tok.kind) {
      case token_kind::object:
        return "an object";
      case token_kind::array:
        return "an array";
      case token_kind::string:
        return "string " + quoted(raw(tok));
      case token_kind::number:
        return "number " + std::string{raw(tok).substr(0, max_quoted)};
      case token_kind::true_value:
        return "true";
      case token_kind::false_value:
        return "false";
      case token_kind::null_value:
        return "null";
      default:
        return "a non-finite number";
    }
  }

  const token& at(uint32_t index) const { return tape_[index]; }

  /// Tape index of the next sibling of the value at `index`.
  uint32_t skip(uint32_t index) const {
    auto& tok = tape_[index];
    return tok.kind == token_kind::object || tok.kind == token_kind::array ? tok.extent
                                                                           : index + 1;
  }

  std::string_view raw(const token& tok) const { return in_.substr(tok.offset, tok.extent); }

  /// Decodes the string token at `index` into `out`.
  void string_at(uint32_t index, std::string& out) {
    auto& tok = tape_[index];
    if (tok.flags & (flag_escaped | flag_non_ascii)) {
      decode_string(raw(tok), tok.flags & flag_non_ascii, out);
    } else {
      out.assign(raw(tok));
    }
  }

  /// True if the string token at `index` decodes to `str`.
  bool string_equals(uint32_t index, std::string_view str) {
    auto& tok = tape_[index];
    if (!(tok.flags & (flag_escaped | flag_non_ascii)))
      return raw(tok) == str;
    string_at(index, scratch_);
    return scratch_ == str;
  }

  /// Stores in `indexes[i]` the tape index of the first member value of the object at
  /// `object` whose key is `names[i]`, or npos.
  template <size_t N>
  void find_members(uint32_t object, const std::string_view (&names)[N],
                    uint32_t (&indexes)[N]) {
    std::fill(std::begin(indexes), std::end(indexes), npos);
    auto index = object + 1;
    for (uint32_t member = 0; member < tape_[object].count; ++member) {
      for (size_t i = 0; i < N; ++i)
        if (indexes[i] == npos && string_equals(index, names[i]))
          indexes[i] = index + 1;
      index = skip(index + 1);
    }
  }

  /// Converts the value object `{"@data-type":...,"data":...}` at `index`.
  bool value_object(uint32_t index, data& out) {
    if (tape_[index].kind != token_kind::object)
      return fail("expected a value object {\"@data-type\": ..., \"data\": ...}, got "
                  + describe(index));
    static constexpr std::string_view names[] = {"@data-type", "data"};
    uint32_t found[2];
    find_members(index, names, found);
    auto [type_index, data_index] = found;
    if (type_index == npos)
      return fail("missing \"@data-type\"");
    if (tape_[type_index].kind != token_kind::string)
      return fail("\"@data-type\" must be a string, got " + describe(type_index));
    data::type type;
    if (!lookup_type(type_index, type))
      return fail("unknown @data-type " + quoted(raw(tape_[type_index]))
                  + " (known: none, boolean, count, integer, real, string, address, subnet, "
                    "port, timestamp, timespan, enum-value, set, table, vector)");
    if (type == data::type::none) {
      out = nil; // Broker ignores `data` entirely here, even its absence.
      return true;
    }
    if (data_index == npos)
      return fail("missing \"data\" for @data-type \"" + std::string{broker::to_string(type)}
                  + "\"");
    if (!convert(type, data_index, out)) {
      if (why_.empty() || needs_type_)
        expected_for(type, data_index);
      return fail_at(".data");
    }
    return true;
  }

private:
  bool lookup_type(uint32_t index, data::type& result) {
    constexpr auto num_types = static_cast<int>(data::type::vector) + 1;
    for (int i = 0; i < num_types; ++i) {
      auto candidate = static_cast<data::type>(i);
      if (string_equals(index, broker::to_string(candidate))) {
        result = candidate;
        return true;
      }
    }
    return false;
  }

  /// Sets the reason of a scalar that does not fit its @data-type.
  void expected_for(data::type type, uint32_t index) {
    needs_type_ = false;
    std::string what;
    switch (type) {
      case data::type::boolean:
        what = "true or false";
        break;
      case data::type::count:
        what = "a non-negative integer (at most 18446744073709551615)";
        break;
      case data::type::integer:
        what = "an integer between -9223372036854775808 and 9223372036854775807";
        break;
      case data::type::real:
        what = "a number";
        break;
      case data::type::address:
        what = "an IPv4 or IPv6 address in a string";
        break;
      case data::type::subnet:
        what = "a subnet such as \"10.0.0.0/8\" in a string";
        break;
      case data::type::port:
        what = "a port such as \"80/tcp\" in a string";
        break;
      case data::type::timestamp:
        what = "a timestamp such as \"2023-04-18T14:13:14.000\" in a string";
        break;
      case data::type::timespan:
        what = "a timespan such as \"1500ms\" in a string";
        break;
      case data::type::set:
      case data::type::vector:
        what = "an array of value objects";
        break;
      case data::type::table:
        what = "an array of {\"key\": ..., \"value\": ...} objects";
        break;
      default:
        what = "a string";
    }
    why_ = "expected " + what + " for @data-type \"" + std::string{broker::to_string(type)}
           + "\", got " + describe(index);
  }

  /// Parses a string token with `parse`, which returns an optional.
  template <class Parse>
  bool parsed_string(uint32_t index, data& out, Parse parse) {
    if (tape_[index].kind != token_kind::string)
      return type_mismatch();
    string_at(index, scratch_);
    auto value = parse(scratch_);
    if (!value)
      return type_mismatch();
    out = *value;
    return true;
  }

  /// A scalar that does not fit: value_object() words the reason (it knows the type).
  bool type_mismatch() {
    needs_type_ = true;
    return false;
  }

  /// Magnitude of an integral number token. Pre: range-checked by the tokenizer.
  uint64_t magnitude(const token& tok) const {
    auto text = raw(tok);
    if (tok.flags & flag_negative)
      text.remove_prefix(1);
    uint64_t result = 0;
    std::from_chars(text.data(), text.data() + text.size(), result);
    return result;
  }

  bool convert(data::type type, uint32_t index, data& out) {
    auto& tok = tape_[index];
    auto is_integral_number = tok.kind == token_kind::number && (tok.flags & flag_integral);
    switch (type) {
      case data::type::boolean:
        if (tok.kind != token_kind::true_value && tok.kind != token_kind::false_value)
          return type_mismatch();
        out = tok.kind == token_kind::true_value;
        return true;
      case data::type::count: {
        if (!is_integral_number)
          return type_mismatch();
        auto value = magnitude(tok);
        if ((tok.flags & flag_negative) && value != 0) // "-0" is zero, not negative
          return type_mismatch();
        out = count{value};
        return true;
      }
      case data::type::integer: {
        if (!is_integral_number)
          return type_mismatch();
        auto value = magnitude(tok);
        if (tok.flags & flag_negative) {
          out = value == max_negative_magnitude ? std::numeric_limits<integer>::min()
                                                : -static_cast<integer>(value);
          return true;
        }
        if (value > static_cast<uint64_t>(std::numeric_limits<integer>::max()))
          return type_mismatch();
        out = static_cast<integer>(value);
        return true;
      }
      case data::type::real:
        return convert_real(tok, out);
      case data::type::string:
      case data::type::enum_value: {
        if (tok.kind != token_kind::string)
          return type_mismatch();
        std::string str;
        string_at(index, str);
        if (type == data::type::string)
          out = std::move(str);
        else
          out = enum_value{std::move(str)};
        return true;
      }
      case data::type::address:
        return parsed_string(index, out, address::parse);
      case data::type::subnet:
        return parsed_string(index, out, subnet::parse);
      case data::type::port:
        return parsed_string(index, out, port::parse);
      case data::type::timestamp:
        return parsed_string(index, out, parse_timestamp);
      case data::type::timespan:
        return parsed_string(index, out, parse_timespan);
      case data::type::set:
        return convert_set(index, out);
      case data::type::table:
        return convert_table(index, out);
      case data::type::vector:
        return convert_vector(index, out);
      default: // none is handled by the caller
        return type_mismatch();
    }
  }

  bool convert_real(const token& tok, data& out) {
    switch (tok.kind) {
      case token_kind::number:
        // Integer tokens are accepted too [fix]: Broker rejects `5` as a real.
        out = to_double(raw(tok));
        return true;
      case token_kind::nan_value:
        out = std::numeric_limits<real>::quiet_NaN();
        return true;
      case token_kind::pos_inf:
        out = std::numeric_limits<real>::infinity();
        return true;
      case token_kind::neg_inf:
        out = -std::numeric_limits<real>::infinity();
        return true;
      default:
        return type_mismatch();
    }
  }

  /// Calls `fn(element_index)` for each element of the array at `index`; stops at the
  /// first false. Returns false if `index` is no array or `fn` failed.
  template <class Fn>
  bool for_each_element(uint32_t index, Fn fn) {
    auto& tok = tape_[index];
    if (tok.kind != token_kind::array)
      return type_mismatch();
    auto element = index + 1;
    for (uint32_t i = 0; i < tok.count; ++i) {
      if (!fn(element))
        return fail_at("[" + std::to_string(i) + "]");
      element = skip(element);
    }
    return true;
  }

  bool convert_set(uint32_t index, data& out) {
    broker::set xs;
    auto ok = for_each_element(index, [&](uint32_t element) {
      data x;
      if (!value_object(element, x))
        return false;
      if (!xs.emplace(std::move(x)).second)
        saw_duplicate_ = true;
      return true;
    });
    if (!ok)
      return false;
    out = std::move(xs);
    return true;
  }

  bool convert_table(uint32_t index, data& out) {
    broker::table xs;
    auto ok = for_each_element(index, [&](uint32_t element) {
      if (tape_[element].kind != token_kind::object)
        return fail("expected an object {\"key\": ..., \"value\": ...}, got "
                    + describe(element));
      static constexpr std::string_view names[] = {"key", "value"};
      uint32_t found[2];
      find_members(element, names, found);
      auto [key_index, value_index] = found;
      data key;
      data value;
      if (key_index == npos)
        return fail("missing \"key\"");
      if (value_index == npos)
        return fail("missing \"value\"");
      if (!value_object(key_index, key))
        return fail_at(".key");
      if (!value_object(value_index, value))
        return fail_at(".value");
      if (!xs.emplace(std::move(key), std::move(value)).second)
        saw_duplicate_ = true;
      return true;
    });
    if (!ok)
      return false;
    out = std::move(xs);
    return true;
  }

  bool convert_vector(uint32_t index, data& out) {
    broker::vector xs;
    auto& tok = tape_[index];
    if (tok.kind == token_kind::array) {
      // The tape knows the element count; cap it by what the array's bytes could hold so
      // that `[{},{},...]` cannot make us reserve more than the input justifies.
      size_t bytes = tape_[tok.extent - 1].offset - tok.offset;
      xs.reserve(std::min<size_t>(tok.count, bytes / min_value_object_size + 1));
    }
    auto ok = for_each_element(index, [&](uint32_t element) {
      xs.emplace_back();
      return value_object(element, xs.back());
    });
    if (!ok)
      return false;
    out = std::move(xs);
    return true;
  }

  std::string_view in_;
  const std::vector<token>& tape_;
  std::string scratch_;
  bool saw_duplicate_ = false;
  // Failure (only written on the error path): the reason, the path in reverse order, and
  // whether value_object() still has to word a type mismatch.
  std::string why_;
  std::vector<std::string> path_;
  bool needs_type_ = false;
};

decode_result invalid(std::string detail) {
  decode_result result;
  result.status = decode_status::invalid_data;
  result.detail = std::move(detail);
  return result;
}

decode_result make_result(decode_status status) {
  decode_result result;
  result.status = status;
  return result;
}

} // namespace

// -- token values (json_internal.hh) ----------------------------------------------------

// A WebSocket text frame cannot carry invalid UTF-8 anyway, but the decoder does not know
// where its input came from.
void detail::decode_string(std::string_view raw, bool validate, std::string& out) {
  out.clear();
  out.reserve(raw.size()); // every escape is at least as long as its decoded form
  size_t i = 0;
  while (i < raw.size()) {
    auto next = raw.find('\\', i);
    if (next == std::string_view::npos)
      next = raw.size();
    append_raw(raw.substr(i, next - i), validate, out);
    i = next;
    if (i == raw.size())
      break;
    auto c = raw[i + 1];
    i += 2;
    switch (c) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'u': {
        auto cp = read_hex4(raw, i);
        i += 4;
        if (is_high_surrogate(cp)) {
          if (i + 6 <= raw.size() && raw[i] == '\\' && raw[i + 1] == 'u'
              && is_low_surrogate(read_hex4(raw, i + 2))) {
            auto low = read_hex4(raw, i + 2);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            i += 6;
          } else {
            cp = replacement_code_point;
          }
        } else if (is_low_surrogate(cp)) {
          cp = replacement_code_point;
        }
        append_utf8(cp, out);
        break;
      }
      default: // '"', '\\' and '/' stand for themselves
        out += c;
    }
  }
}

double detail::to_double(std::string_view text) {
  double result = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), result);
  if (res.ec != std::errc::result_out_of_range)
    return result;
  // from_chars leaves `result` untouched when out of range; decide between overflow and
  // underflow from the decimal exponent of the first significant digit.
  auto negative = text.front() == '-';
  auto body = negative ? text.substr(1) : text;
  auto exp_pos = body.find_first_of("eE");
  auto mantissa = body.substr(0, exp_pos);
  int64_t magnitude = 0; // position of the first significant digit relative to the point
  auto point = mantissa.find('.');
  auto int_part = mantissa.substr(0, point);
  auto first_nonzero = int_part.find_first_not_of('0');
  if (first_nonzero != std::string_view::npos) {
    magnitude = static_cast<int64_t>(int_part.size() - first_nonzero);
  } else if (point != std::string_view::npos) {
    auto frac = mantissa.substr(point + 1);
    auto lead = frac.find_first_not_of('0');
    magnitude = -static_cast<int64_t>(lead == std::string_view::npos ? frac.size() : lead);
  }
  if (exp_pos != std::string_view::npos) {
    auto exp_text = body.substr(exp_pos + 1);
    auto exp_negative = exp_text.front() == '-';
    if (exp_text.front() == '-' || exp_text.front() == '+')
      exp_text.remove_prefix(1);
    // Saturate: any exponent beyond this bound decides the outcome alone.
    constexpr int64_t exponent_cap = 1'000'000;
    int64_t exponent = 0;
    for (auto ch : exp_text)
      exponent = std::min(exponent * 10 + (ch - '0'), exponent_cap);
    magnitude += exp_negative ? -exponent : exponent;
  }
  auto value = magnitude > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return negative ? -value : value;
}

// -- the general path ---------------------------------------------------------------------

decode_result detail::general_data_message(std::string_view text, std::string& topic,
                                           data& value, size_t max_depth,
                                           std::vector<token>& tape) {
  tape.clear();
  auto result = tokenize(text, max_depth, tape);
  if (!result)
    return result;
  converter conv{text, tape};
  if (tape.front().kind != token_kind::object) {
    auto result = make_result(decode_status::not_an_object);
    result.detail = conv.describe(0);
    return result;
  }
  static constexpr std::string_view names[] = {"topic"};
  uint32_t found[1];
  conv.find_members(0, names, found);
  if (found[0] != npos && conv.at(found[0]).kind == token_kind::string)
    conv.string_at(found[0], topic);
  else
    topic.clear(); // Broker publishes such messages on the empty topic (§5.2)
  if (!conv.value_object(0, value))
    return invalid(conv.failure());
  // Clients may not publish to reserved topics [fix].
  if (topic.compare(0, topic::reserved.size(), topic::reserved) == 0)
    return invalid("topic: " + quoted(topic) + " starts with the reserved prefix <$>");
  if (conv.saw_duplicate())
    return make_result(decode_status::internal_error);
  return result;
}

decode_result detail::general_decode(std::string_view text, data& value, size_t max_depth) {
  std::vector<token> tape;
  auto result = tokenize(text, max_depth, tape);
  if (!result)
    return result;
  converter conv{text, tape};
  if (tape.front().kind != token_kind::object) {
    auto result = make_result(decode_status::not_an_object);
    result.detail = conv.describe(0);
    return result;
  }
  if (!conv.value_object(0, value))
    return invalid(conv.failure());
  if (conv.saw_duplicate())
    return make_result(decode_status::internal_error);
  return result;
}

expected<std::vector<std::string>> detail::general_filter(std::string_view text,
                                                          size_t max_depth) {
  auto not_a_filter = [](const std::string& why) {
    return expected<std::vector<std::string>>{
      ec::deserialization_failed,
      "first message must contain a filter: a JSON array of topic strings; " + why};
  };
  std::vector<token> tape;
  auto res = tokenize(text, max_depth, tape);
  if (!res)
    return not_a_filter("got malformed JSON -> " + syntax_error_text(res));
  converter conv{text, tape};
  if (tape.front().kind != token_kind::array)
    return not_a_filter("got " + conv.describe(0));
  std::vector<std::string> result;
  result.reserve(tape.front().count);
  for (uint32_t index = 1; index < tape.size(); ++index) {
    if (conv.at(index).kind != token_kind::string)
      return not_a_filter("element " + std::to_string(index) + " is " + conv.describe(index)
                          + ", not a string");
    conv.string_at(index, result.emplace_back());
  }
  return result;
}

// -- public entry points: the single pass, else the general path ----------------------------

decode_result decode_data_message(std::string_view text, std::string& topic, data& value,
                                  size_t max_depth) {
  decoder dec;
  return dec.data_message(text, topic, value, max_depth);
}

decode_result decoder::data_message(std::string_view text, std::string& topic, data& value,
                                    size_t max_depth) {
  if (fast_data_message(text, topic, value, max_depth, stack_))
    return decode_result{};
  auto result = general_data_message(text, topic, value, max_depth, tape_);
  // The general path is for unusual messages now: a session need not keep the tape of a
  // large one (16 bytes per token) until it ends.
  constexpr size_t max_retained_tokens = 1024;
  if (tape_.capacity() > max_retained_tokens)
    std::vector<token>{}.swap(tape_);
  return result;
}

decode_result decode(std::string_view text, data& value, size_t max_depth) {
  std::vector<data> stack;
  if (fast_decode(text, value, max_depth, stack))
    return decode_result{};
  return general_decode(text, value, max_depth);
}

expected<std::vector<std::string>> decode_filter(std::string_view text, size_t max_depth) {
  std::vector<std::string> result;
  if (fast_filter(text, max_depth, result))
    return result;
  return general_filter(text, max_depth);
}

} // namespace broker::internal::json
