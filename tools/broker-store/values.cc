#include "values.hh"

#include <broker/json.hh>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <limits>

namespace broker_store {

using broker::ec;
using broker::error;
using broker::expected;

namespace {

/// The suffix that makes a run of digits a count.
constexpr char count_suffix = 'c';

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/// True if `word` must be valid JSON: a string, an array, an object or a constant.
bool must_be_json(std::string_view word) {
  if (word == "true" || word == "false" || word == "null")
    return true;
  auto c = word.front();
  return c == '"' || c == '[' || c == '{';
}

/// True if `word` starts like a number: a digit, or '-' and a digit.
bool starts_like_number(std::string_view word) {
  return is_digit(word.front())
         || (word.size() > 1 && word.front() == '-' && is_digit(word[1]));
}

/// A JSON number: what nlohmann parses as one, the whole word.
bool is_json_number(std::string_view word) {
  auto doc = nlohmann::json::parse(word, nullptr, false);
  return !doc.is_discarded() && doc.is_number();
}

/// The Broker types a bare word may spell in the JSON API's text form (doc/literals.md),
/// tried in this order.
constexpr const char* text_forms[] = {"address", "subnet", "port", "timespan", "timestamp"};

/// `word` as one of text_forms, read by the library's JSON codec (so exactly what the
/// WebSocket API accepts), or nothing.
std::optional<broker::data> parse_text_form(std::string_view word) {
  auto quoted = broker::to_json_string(word);
  for (auto type : text_forms) {
    auto x = broker::from_json(std::string{"{\"@data-type\":\""} + type + "\",\"data\":"
                               + quoted + "}");
    if (x)
      return std::move(*x);
  }
  return std::nullopt;
}

/// `5c`: digits and the count suffix. Errors only for a count beyond 2^64-1.
std::optional<expected<broker::data>> parse_count(std::string_view word) {
  if (word.size() < 2 || word.back() != count_suffix)
    return std::nullopt;
  auto digits = word.substr(0, word.size() - 1);
  broker::count value = 0;
  for (auto c : digits) {
    if (!is_digit(c))
      return std::nullopt;
    auto d = static_cast<broker::count>(c - '0');
    if (value > (std::numeric_limits<broker::count>::max() - d) / 10)
      return expected<broker::data>{ec::invalid_data,
                                    std::string{word} + ": a count must be below 2^64"};
    value = value * 10 + d;
  }
  return expected<broker::data>{broker::data{value}};
}

error bad_data(std::string what) {
  return error{ec::invalid_data, std::move(what)};
}

/// At most this many bytes of a word appear in an error message.
constexpr size_t max_quoted_bytes = 40;

/// `word` for an error message, cut after max_quoted_bytes.
std::string excerpt(std::string_view word) {
  if (word.size() <= max_quoted_bytes)
    return std::string{word};
  return std::string{word.substr(0, max_quoted_bytes)} + "...";
}

/// What a quick look at a JSON word finds before it is parsed.
struct word_scan {
  size_t depth = 0;         ///< The deepest nesting of arrays and objects.
  std::string_view too_big; ///< The first integer token beyond 64 bits, if any.
};

bool is_number_char(char c) {
  return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/// True for an integer token (no fraction, no exponent) outside the 64-bit ranges, which
/// the JSON parser would silently turn into a real.
bool integer_out_of_range(std::string_view token) {
  if (token.find_first_of(".eE") != std::string_view::npos)
    return false;
  auto* first = token.data();
  auto* last = token.data() + token.size();
  std::from_chars_result res;
  if (token.front() == '-') {
    broker::integer value;
    res = std::from_chars(first, last, value);
  } else {
    uint64_t value;
    res = std::from_chars(first, last, value);
  }
  return res.ec == std::errc::result_out_of_range;
}

/// Scans `word` with strings skipped. Runs before parsing, so that a hostile line cannot
/// make the parser build millions of levels.
word_scan scan(std::string_view word) {
  word_scan result;
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < word.size(); ++i) {
    auto c = word[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      result.depth = std::max(result.depth, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (is_digit(c) || c == '-') {
      auto end = i;
      while (end < word.size() && is_number_char(word[end]))
        ++end;
      auto token = word.substr(i, end - i);
      if (result.too_big.empty() && integer_out_of_range(token))
        result.too_big = token;
      i = end - 1;
    }
  }
  return result;
}

expected<broker::data> convert(const nlohmann::json& x, size_t depth);

expected<broker::data> convert_typed(const nlohmann::json& x) {
  std::string text;
  try {
    text = x.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const nlohmann::json::exception& e) {
    return bad_data(std::string{"cannot re-encode a typed value: "} + e.what());
  }
  auto result = broker::from_json(text);
  if (!result)
    return bad_data(excerpt(text) + ": not a valid Broker value in the typed form "
                           "{\"@data-type\": T, \"data\": V} (see doc/web-socket.md)");
  return result;
}

expected<broker::data> convert(const nlohmann::json& x, size_t depth) {
  if (depth > max_value_depth)
    return bad_data("a value nested more than " + std::to_string(max_value_depth)
                    + " levels deep");
  switch (x.type()) {
    case nlohmann::json::value_t::null:
      return broker::data{};
    case nlohmann::json::value_t::boolean:
      return broker::data{x.get<bool>()};
    case nlohmann::json::value_t::number_integer:
      return broker::data{x.get<broker::integer>()};
    case nlohmann::json::value_t::number_unsigned: {
      auto value = x.get<uint64_t>();
      if (value > static_cast<uint64_t>(std::numeric_limits<broker::integer>::max()))
        return bad_data(std::to_string(value) + " is too large for an integer; write "
                        + std::to_string(value) + "c for a count");
      return broker::data{static_cast<broker::integer>(value)};
    }
    case nlohmann::json::value_t::number_float:
      return broker::data{x.get<double>()};
    case nlohmann::json::value_t::string:
      return broker::data{x.get<std::string>()};
    case nlohmann::json::value_t::array: {
      broker::vector xs;
      xs.reserve(x.size());
      for (auto& element : x) {
        auto y = convert(element, depth + 1);
        if (!y)
          return y;
        xs.push_back(std::move(*y));
      }
      return broker::data{std::move(xs)};
    }
    case nlohmann::json::value_t::object: {
      if (x.contains("@data-type"))
        return convert_typed(x);
      // Any other object is a table with string keys.
      broker::table xs;
      for (auto& [key, element] : x.items()) {
        auto y = convert(element, depth + 1);
        if (!y)
          return y;
        xs.emplace(broker::data{key}, std::move(*y));
      }
      return broker::data{std::move(xs)};
    }
    default:
      return bad_data("unsupported JSON value");
  }
}

} // namespace

expected<broker::data> parse_value(std::string_view word) {
  if (word.empty())
    return broker::data{std::string{}};
  if (auto x = parse_count(word))
    return std::move(*x);
  if (!must_be_json(word) && !(starts_like_number(word) && is_json_number(word))) {
    if (auto x = parse_text_form(word))
      return std::move(*x);
    if (starts_like_number(word))
      return bad_data(excerpt(word) + ": starts like a number but is no integer, real, "
                      "count (5c), address, subnet, port (80/tcp), timespan (10s) or "
                      "timestamp; quote it for a string: '\"" + excerpt(word) + "\"'");
    return broker::data{std::string{word}};
  }
  // A typed value costs two levels per container; json.hh enforces its own limit on those.
  auto found = scan(word);
  if (found.depth > 2 * max_value_depth)
    return bad_data(excerpt(word) + ": nested more than " + std::to_string(max_value_depth)
                    + " levels deep");
  if (!found.too_big.empty())
    return bad_data(excerpt(found.too_big) + ": an integer beyond 64 bits");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(word);
  } catch (const nlohmann::json::parse_error& e) {
    return error{ec::invalid_json,
                 excerpt(word) + ": not valid JSON (at byte " + std::to_string(e.byte)
                   + "); a word that starts with '\"', '[' or '{' must be JSON"};
  } catch (const nlohmann::json::exception& e) {
    // E.g. out_of_range for 1e400: valid JSON, but no value we can hold.
    return bad_data(excerpt(word) + ": " + e.what());
  }
  return convert(doc, 1);
}

} // namespace broker_store
