#include "broker/time.hh"

namespace broker {

namespace {

constexpr int64_t thousand = 1000;
constexpr int64_t ns_per_sec = 1'000'000'000;
constexpr int64_t ns_per_ms = 1'000'000;
constexpr int64_t secs_per_day = 86'400;
constexpr int64_t secs_per_hour = 3'600;
constexpr int64_t secs_per_min = 60;

// Constants of the proleptic Gregorian calendar arithmetic in civil_from_days.
constexpr int64_t days_0000_03_01_to_epoch = 719'468;
constexpr int64_t days_per_era = 146'097; // 400 years
constexpr int64_t years_per_era = 400;

struct civil_date {
  int64_t year;
  unsigned month; // 1-12
  unsigned day;   // 1-31
};

constexpr int64_t floor_div(int64_t x, int64_t y) noexcept {
  auto q = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

// Howard Hinnant's days-to-civil algorithm: counts in 400-year eras that start on March 1st,
// so the leap day is the last day of each computational year. Exact for any int64 day count
// that the timestamp range can produce, without gmtime and its time_t/locale caveats.
constexpr civil_date civil_from_days(int64_t days) noexcept {
  days += days_0000_03_01_to_epoch;
  int64_t era = floor_div(days, days_per_era);
  int64_t doe = days - era * days_per_era;                                   // [0, 146096]
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;       // [0, 399]
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                     // [0, 365]
  int64_t mp = (5 * doy + 2) / 153;                                          // [0, 11]
  auto day = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
  auto month = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  int64_t year = yoe + era * years_per_era + (month <= 2 ? 1 : 0);
  return {year, month, day};
}

void append_padded(int64_t value, int width, std::string& out) {
  char buf[20];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (int i = n; i < width; ++i)
    out += '0';
  while (n > 0)
    out += buf[--n];
}

} // namespace

timestamp now() noexcept {
  return std::chrono::time_point_cast<timespan>(std::chrono::system_clock::now());
}

std::string to_string(timespan x) {
  // Broker's unit choice: the largest unit up to seconds that divides the value exactly.
  auto v = x.count();
  if (v == 0)
    return "0s";
  if (v % thousand != 0)
    return std::to_string(v) + "ns";
  v /= thousand;
  if (v % thousand != 0)
    return std::to_string(v) + "us";
  v /= thousand;
  if (v % thousand != 0)
    return std::to_string(v) + "ms";
  return std::to_string(v / thousand) + "s";
}

std::string to_string(timestamp x) {
  // Floor division keeps the fraction non-negative, so pre-epoch times render correctly.
  auto ns = x.time_since_epoch().count();
  auto secs = floor_div(ns, ns_per_sec);
  // Not `ns - secs * ns_per_sec`: that product overflows near the int64 minimum.
  auto frac = ns % ns_per_sec;
  if (frac < 0)
    frac += ns_per_sec;
  auto ms = frac / ns_per_ms;
  auto days = floor_div(secs, secs_per_day);
  auto sod = secs - days * secs_per_day;
  auto date = civil_from_days(days);
  std::string out;
  out.reserve(sizeof("YYYY-MM-DDThh:mm:ss.mmm"));
  append_padded(date.year, 4, out);
  out += '-';
  append_padded(date.month, 2, out);
  out += '-';
  append_padded(date.day, 2, out);
  out += 'T';
  append_padded(sod / secs_per_hour, 2, out);
  out += ':';
  append_padded(sod % secs_per_hour / secs_per_min, 2, out);
  out += ':';
  append_padded(sod % secs_per_min, 2, out);
  out += '.';
  append_padded(ms, 3, out);
  return out;
}

} // namespace broker
