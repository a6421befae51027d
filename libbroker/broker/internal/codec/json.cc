// The text layer of the JSON decoder, below broker::data: stage 1 (the tokenizer), the
// rendering of its errors (§8), and the text grammars of timestamps (§6.7) and timespans
// (§6.8). Section numbers here and in json.hh are those of doc/protocol/websocket.md.

#include "broker/internal/codec/json.hh"
#include "broker/internal/codec/json_internal.hh"

#include <array>
#include <cstring>
#include <algorithm>
#include <limits>

namespace broker::internal::json {

namespace {

using namespace detail;

// -- stage 1: tokenizer ---------------------------------------------------------------------

/// Initial tape capacity per input byte (a typical message has one token per ~8 bytes).
constexpr size_t bytes_per_token_estimate = 8;

/// Validates the JSON syntax of the whole input and records its tokens (see json.hh).
class tokenizer {
public:
  tokenizer(std::string_view input, size_t max_depth, std::vector<token>& tape)
    : in_(input), max_depth_(max_depth), tape_(tape) {
    tape_.clear();
    tape_.reserve(input.size() / bytes_per_token_estimate + 1);
  }

  decode_result run() {
    skip_whitespace();
    for (;;) {
      switch (read_value()) {
        case step::failed:
          return result_;
        case step::opened:
          continue; // read the first element or member value
        case step::completed:
          break;
      }
      // After a complete value: close containers and advance to the next value.
      for (;;) {
        skip_whitespace();
        if (stack_.empty()) {
          if (pos_ != in_.size())
            fail(pec::trailing_character, pos_);
          return result_;
        }
        auto& top = stack_.back();
        ++top.count;
        if (at_end()) {
          fail(pec::unexpected_eof, pos_);
          return result_;
        }
        auto c = in_[pos_];
        if (c == ',') {
          ++pos_;
          skip_whitespace();
          if (top.is_object && !read_key())
            return result_;
          break;
        }
        if (c == (top.is_object ? '}' : ']')) {
          ++pos_;
          close_container();
          continue;
        }
        fail(pec::unexpected_character, pos_);
        return result_;
      }
    }
  }

private:
  enum class step { failed, opened, completed };

  struct frame {
    uint32_t index; ///< Tape index of the container's token.
    uint32_t count; ///< Elements seen so far.
    bool is_object;
  };

  bool at_end() const noexcept { return pos_ >= in_.size(); }

  void skip_whitespace() noexcept {
    while (!at_end() && is_json_whitespace(in_[pos_]))
      ++pos_;
  }

  void fail(pec code, size_t offset) {
    result_.status = decode_status::malformed_json;
    result_.code = code;
    // Positions are only needed on failure, so count lines lazily here.
    auto prefix = in_.substr(0, offset);
    result_.line = 1 + static_cast<size_t>(std::count(prefix.begin(), prefix.end(), '\n'));
    auto last_newline = prefix.rfind('\n');
    result_.column = last_newline == std::string_view::npos ? offset + 1
                                                            : offset - last_newline;
  }

  /// Fails with unexpected_eof at the end or unexpected_character at the current byte.
  void fail_here() { fail(at_end() ? pec::unexpected_eof : pec::unexpected_character, pos_); }

  void push_token(size_t offset, size_t extent, token_kind kind, uint8_t flags = 0) {
    tape_.push_back(token{static_cast<uint32_t>(offset), static_cast<uint32_t>(extent), 0,
                          kind, flags});
  }

  void close_container() {
    auto& top = stack_.back();
    auto& tok = tape_[top.index];
    tok.extent = static_cast<uint32_t>(tape_.size());
    tok.count = top.count;
    stack_.pop_back();
  }

  step read_value() {
    if (at_end()) {
      fail(pec::unexpected_eof, pos_);
      return step::failed;
    }
    auto c = in_[pos_];
    if (c == '{' || c == '[')
      return open_container(c == '{');
    bool ok = false;
    switch (c) {
      case '"':
        ok = read_string();
        break;
      case 't':
        ok = read_literal("true", token_kind::true_value, pos_);
        break;
      case 'f':
        ok = read_literal("false", token_kind::false_value, pos_);
        break;
      case 'n':
        if (pos_ + 1 < in_.size() && in_[pos_ + 1] == 'a')
          ok = read_literal("nan", token_kind::nan_value, pos_);
        else
          ok = read_literal("null", token_kind::null_value, pos_);
        break;
      case 'N':
        ok = read_literal("NaN", token_kind::nan_value, pos_);
        break;
      case 'I':
        ok = read_literal("Infinity", token_kind::pos_inf, pos_);
        break;
      case 'i':
        ok = read_literal("inf", token_kind::pos_inf, pos_);
        break;
      default:
        if (c == '-' || is_json_digit(c))
          ok = read_number();
        else
          fail(pec::unexpected_character, pos_);
    }
    return ok ? step::completed : step::failed;
  }

  step open_container(bool is_object) {
    if (stack_.size() >= max_depth_) {
      fail(pec::nested_too_deeply, pos_);
      return step::failed;
    }
    stack_.push_back(frame{static_cast<uint32_t>(tape_.size()), 0, is_object});
    push_token(pos_, 0, is_object ? token_kind::object : token_kind::array);
    ++pos_;
    skip_whitespace();
    if (!at_end() && in_[pos_] == (is_object ? '}' : ']')) {
      ++pos_;
      close_container();
      return step::completed;
    }
    if (is_object && !read_key())
      return step::failed;
    return step::opened;
  }

  /// Reads `"key"` and the following ':', leaving pos_ at the member's value.
  bool read_key() {
    if (at_end() || in_[pos_] != '"') {
      fail_here();
      return false;
    }
    if (!read_string())
      return false;
    skip_whitespace();
    if (at_end() || in_[pos_] != ':') {
      fail_here();
      return false;
    }
    ++pos_;
    skip_whitespace();
    return true;
  }

  bool read_string() {
    ++pos_; // opening quote
    auto begin = pos_;
    uint8_t flags = 0;
    auto res = scan_string(in_, pos_, flags);
    if (!res.ok) {
      fail(res.code, res.pos);
      return false;
    }
    pos_ = res.pos;
    push_token(begin, pos_ - begin, token_kind::string, flags);
    ++pos_; // closing quote
    return true;
  }

  bool read_literal(std::string_view word, token_kind kind, size_t start) {
    for (auto ch : word) {
      if (at_end() || in_[pos_] != ch) {
        fail_here();
        return false;
      }
      ++pos_;
    }
    push_token(start, pos_ - start, kind);
    return true;
  }

  bool read_number() {
    auto start = pos_;
    if (in_[pos_] == '-' && pos_ + 1 < in_.size()) {
      if (in_[pos_ + 1] == 'I') {
        ++pos_;
        return read_literal("Infinity", token_kind::neg_inf, start);
      }
      if (in_[pos_ + 1] == 'i') {
        ++pos_;
        return read_literal("inf", token_kind::neg_inf, start);
      }
    }
    number_scan num;
    auto res = scan_number(in_, pos_, num);
    if (!res.ok) {
      fail(res.code, res.pos);
      return false;
    }
    pos_ = res.pos;
    push_token(start, pos_ - start, token_kind::number, num.flags);
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  size_t max_depth_;
  std::vector<token>& tape_;
  /// The open containers: the first few inline, so that typical messages (a handful of
  /// levels) tokenize without an allocation.
  class frame_stack {
  public:
    bool empty() const noexcept { return size_ == 0; }
    size_t size() const noexcept { return size_; }
    frame& back() noexcept { return size_ <= inline_.size() ? inline_[size_ - 1] : heap_.back(); }
    void push_back(frame f) {
      if (size_ < inline_.size())
        inline_[size_] = f;
      else
        heap_.push_back(f);
      ++size_;
    }
    void pop_back() {
      if (size_ > inline_.size())
        heap_.pop_back();
      --size_;
    }

  private:
    std::array<frame, 16> inline_{};
    std::vector<frame> heap_;
    size_t size_ = 0;
  };

  frame_stack stack_;
  decode_result result_;
};

// -- timestamp and timespan grammars ---------------------------------------------------

constexpr int64_t nanos_per_second = 1'000'000'000;
constexpr int64_t seconds_per_minute = 60;
constexpr int64_t seconds_per_hour = 3600;
constexpr int64_t seconds_per_day = 86400;
constexpr size_t max_fraction_digits = 9; // nanoseconds

/// Sequential reader over a short text.
class text_reader {
public:
  explicit text_reader(std::string_view str) : str_(str) {}

  bool at_end() const noexcept { return pos_ == str_.size(); }
  char peek() const noexcept { return at_end() ? '\0' : str_[pos_]; }

  /// Consumes `c` if it comes next.
  bool consume(char c) noexcept {
    if (peek() != c || at_end())
      return false;
    ++pos_;
    return true;
  }

  /// Reads exactly `n` decimal digits.
  bool fixed_digits(size_t n, int& out) noexcept {
    out = 0;
    for (size_t i = 0; i < n; ++i, ++pos_) {
      if (at_end() || !is_json_digit(str_[pos_]))
        return false;
      out = out * 10 + (str_[pos_] - '0');
    }
    return true;
  }

  /// Reads a (possibly empty) run of decimal digits.
  std::string_view digits() noexcept {
    auto begin = pos_;
    while (!at_end() && is_json_digit(str_[pos_]))
      ++pos_;
    return str_.substr(begin, pos_ - begin);
  }

  std::string_view rest() const noexcept { return str_.substr(pos_); }

private:
  std::string_view str_;
  size_t pos_ = 0;
};

bool is_leap_year(int year) noexcept {
  return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

int days_in_month(int year, int month) noexcept {
  constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap_year(year) ? 29 : days[month - 1];
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t days_from_civil(int64_t year, int month, int day) noexcept {
  year -= month <= 2;
  auto era = (year >= 0 ? year : year - 399) / 400;
  auto year_of_era = year - era * 400;
  auto day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  auto day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

/// Reads the optional zone suffix: `Z`, `±hh:mm`, `±hhmm`, `±hh`. Sets the offset east of
/// UTC in seconds.
bool read_zone(text_reader& in, int64_t& offset) noexcept {
  offset = 0;
  if (in.at_end() || in.consume('Z'))
    return true;
  int sign = 0;
  if (in.consume('+'))
    sign = 1;
  else if (in.consume('-'))
    sign = -1;
  else
    return false;
  int hours = 0;
  int minutes = 0;
  if (!in.fixed_digits(2, hours))
    return false;
  if (in.consume(':')) {
    if (!in.fixed_digits(2, minutes))
      return false;
  } else if (!in.at_end() && !in.fixed_digits(2, minutes)) {
    return false;
  }
  if (hours > 23 || minutes > 59)
    return false;
  offset = sign * (hours * seconds_per_hour + minutes * seconds_per_minute);
  return true;
}

/// A timespan unit as `multiplier * 10^exponent` nanoseconds, so that fractions can be
/// evaluated exactly (see parse_timespan).
struct timespan_unit {
  std::string_view name;
  uint64_t multiplier;
  size_t exponent;
};

constexpr timespan_unit timespan_units[] = {
  {"ns", 1, 0},  {"us", 1, 3},   {"ms", 1, 6},   {"s", 1, 9},
  {"min", 6, 10}, {"h", 36, 11}, {"d", 864, 11}, // d = 86400 s [fix]
};

constexpr uint64_t pow10(size_t n) noexcept {
  uint64_t result = 1;
  for (size_t i = 0; i < n; ++i)
    result *= 10;
  return result;
}

} // namespace

decode_result detail::tokenize(std::string_view input, size_t max_depth,
                                std::vector<token>& tape) {
  if (input.size() >= max_input_size) {
    decode_result result;
    result.status = decode_status::malformed_json;
    result.code = pec::input_too_large;
    result.line = 1;
    result.column = 1;
    return result;
  }
  return tokenizer{input, std::min(max_depth, max_depth_limit), tape}.run();
}

std::string_view to_string(pec code) noexcept {
  switch (code) {
    case pec::unexpected_character:
      return "unexpected_character";
    case pec::unexpected_eof:
      return "unexpected_eof";
    case pec::trailing_character:
      return "trailing_character";
    case pec::integer_overflow:
      return "integer_overflow";
    case pec::integer_underflow:
      return "integer_underflow";
    case pec::nested_too_deeply:
      return "nested_too_deeply";
    case pec::input_too_large:
      return "input_too_large";
  }
  return "invalid_state";
}

std::string parser_error_text(const decode_result& res) {
  std::string result = "caf::pec::";
  result += to_string(res.code);
  result += '(';
  result += std::to_string(res.line);
  result += ", ";
  result += std::to_string(res.column);
  result += ')';
  return result;
}

std::string syntax_error_text(const decode_result& res) {
  std::string result;
  switch (res.code) {
    case pec::unexpected_character:
      result = "unexpected character";
      break;
    case pec::unexpected_eof:
      result = "unexpected end of input";
      break;
    case pec::trailing_character:
      result = "unexpected text after the JSON value";
      break;
    case pec::integer_overflow:
      result = "integer above 18446744073709551615";
      break;
    case pec::integer_underflow:
      result = "integer below -9223372036854775808";
      break;
    case pec::nested_too_deeply:
      result = "arrays and objects nested deeper than broker.max-nesting-depth";
      break;
    case pec::input_too_large:
      result = "input of 4 GiB or more";
      break;
  }
  result += " at line ";
  result += std::to_string(res.line);
  result += ", column ";
  result += std::to_string(res.column);
  return result;
}

std::string error_context(size_t input_number, const decode_result& res) {
  std::string result = "input #";
  result += std::to_string(input_number);
  switch (res.status) {
    case decode_status::ok:
      break;
    case decode_status::malformed_json:
      result += " contained malformed JSON -> ";
      result += syntax_error_text(res);
      break;
    case decode_status::not_an_object:
      result += " expected a JSON object";
      if (!res.detail.empty())
        result += " -> got " + res.detail;
      break;
    case decode_status::invalid_data:
      result += " contained invalid data";
      if (!res.detail.empty())
        result += " -> " + res.detail;
      break;
    case decode_status::internal_error:
      // Broker's text for a duplicate set element or table key (§8).
      result += " caused an internal error -> deserialization_failed(\"failed to parse data\")";
      break;
  }
  return result;
}

std::optional<timestamp> parse_timestamp(std::string_view text) {
  text_reader in{text};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!in.fixed_digits(4, year) || !in.consume('-') || !in.fixed_digits(2, month)
      || !in.consume('-') || !in.fixed_digits(2, day) || !in.consume('T')
      || !in.fixed_digits(2, hour) || !in.consume(':') || !in.fixed_digits(2, minute)
      || !in.consume(':') || !in.fixed_digits(2, second))
    return std::nullopt;
  // Second 60 is rejected as in Broker: timestamps count no leap seconds.
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23
      || minute > 59 || second > 59)
    return std::nullopt;
  int64_t fraction = 0;
  if (in.consume('.')) {
    // A dot without digits is accepted and means zero, as in Broker (§6.7).
    auto digits = in.digits();
    if (digits.size() > max_fraction_digits)
      return std::nullopt;
    for (size_t i = 0; i < max_fraction_digits; ++i)
      fraction = fraction * 10 + (i < digits.size() ? digits[i] - '0' : 0);
  }
  int64_t offset = 0;
  if (!read_zone(in, offset) || !in.at_end())
    return std::nullopt;
  // Four-digit years keep the seconds far inside int64; only the nanoseconds can overflow.
  auto seconds = days_from_civil(year, month, day) * seconds_per_day
                 + hour * seconds_per_hour + minute * seconds_per_minute + second - offset;
  // Before the epoch, borrow one second so the product stays in range down to INT64_MIN
  // (whose whole seconds alone would overflow).
  if (seconds < 0) {
    seconds += 1;
    fraction -= nanos_per_second;
  }
  int64_t nanos = 0;
  if (__builtin_mul_overflow(seconds, nanos_per_second, &nanos)
      || __builtin_add_overflow(nanos, fraction, &nanos))
    return std::nullopt;
  return timestamp{timespan{nanos}};
}

std::optional<timespan> parse_timespan(std::string_view text) {
  text_reader in{text};
  auto negative = false;
  if (in.consume('-'))
    negative = true;
  else
    in.consume('+');
  auto int_digits = in.digits();
  std::string_view frac_digits;
  if (in.consume('.'))
    frac_digits = in.digits();
  if (int_digits.empty() && frac_digits.empty())
    return std::nullopt;
  const timespan_unit* unit = nullptr;
  for (auto& candidate : timespan_units)
    if (in.rest() == candidate.name)
      unit = &candidate;
  if (unit == nullptr)
    return std::nullopt;
  // Evaluate |number| * multiplier * 10^exponent exactly and truncate toward zero: the
  // first `exponent` fraction digits scale to an integer, the remaining digits R
  // contribute floor(0.R * multiplier), computed by long multiplication from the right.
  uint64_t limit = negative ? uint64_t{1} << 63 : std::numeric_limits<int64_t>::max();
  uint64_t whole = 0;
  for (auto ch : int_digits) {
    auto digit = static_cast<uint64_t>(ch - '0');
    if (whole > (limit - digit) / 10)
      return std::nullopt;
    whole = whole * 10 + digit;
  }
  uint64_t magnitude = 0;
  if (__builtin_mul_overflow(whole, unit->multiplier * pow10(unit->exponent), &magnitude))
    return std::nullopt;
  uint64_t scaled = 0; // the first `exponent` fraction digits, zero-padded
  for (size_t i = 0; i < unit->exponent; ++i)
    scaled = scaled * 10 + (i < frac_digits.size() ? frac_digits[i] - '0' : 0);
  uint64_t carry = 0;
  for (auto i = frac_digits.size(); i > unit->exponent; --i)
    carry = ((frac_digits[i - 1] - '0') * unit->multiplier + carry) / 10;
  if (__builtin_add_overflow(magnitude, scaled * unit->multiplier + carry, &magnitude)
      || magnitude > limit)
    return std::nullopt;
  if (!negative)
    return timespan{static_cast<int64_t>(magnitude)};
  if (magnitude == limit)
    return timespan{std::numeric_limits<int64_t>::min()};
  return timespan{-static_cast<int64_t>(magnitude)};
}

} // namespace broker::internal::json
