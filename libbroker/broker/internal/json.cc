// Error rendering (§8) and the text grammars of timestamps (§6.7) and timespans (§6.8),
// shared by the JSON decoder and its tests.

#include "broker/internal/json.hh"

#include <limits>

namespace broker::internal::json {

namespace {

constexpr int64_t nanos_per_second = 1'000'000'000;
constexpr int64_t seconds_per_minute = 60;
constexpr int64_t seconds_per_hour = 3600;
constexpr int64_t seconds_per_day = 86400;
constexpr size_t max_fraction_digits = 9; // nanoseconds

bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

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
      if (at_end() || !is_digit(str_[pos_]))
        return false;
      out = out * 10 + (str_[pos_] - '0');
    }
    return true;
  }

  /// Reads a (possibly empty) run of decimal digits.
  std::string_view digits() noexcept {
    auto begin = pos_;
    while (!at_end() && is_digit(str_[pos_]))
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

std::string error_context(size_t input_number, const decode_result& res) {
  std::string result = "input #";
  result += std::to_string(input_number);
  switch (res.status) {
    case decode_status::ok:
      break;
    case decode_status::malformed_json:
      result += " contained malformed JSON -> ";
      result += parser_error_text(res);
      break;
    case decode_status::not_an_object:
      result += " expected a JSON object";
      break;
    case decode_status::invalid_data:
      result += " contained invalid data";
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
