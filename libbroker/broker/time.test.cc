#include "broker/time.hh"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

using namespace broker;

namespace {

timestamp at_ns(int64_t ns) {
  return timestamp{timespan{ns}};
}

} // namespace

TEST_CASE("a timespan prints in the largest unit up to seconds that divides it", "[time]") {
  // doc/protocol/websocket.md §6.8 and §10.1, §10.6.
  CHECK(to_string(timespan{0}) == "0s");
  CHECK(to_string(timespan{1500}) == "1500ns");
  CHECK(to_string(timespan{2000}) == "2us");
  CHECK(to_string(timespan{15'000'000}) == "15ms");
  CHECK(to_string(timespan{1'500'000'000}) == "1500ms");
  CHECK(to_string(timespan{1'000'000'000}) == "1s");
  CHECK(to_string(timespan{60'000'000'000}) == "60s");
  CHECK(to_string(timespan{7'200'000'000'000}) == "7200s");
  CHECK(to_string(timespan{3'600'000'000'000}) == "3600s");
  CHECK(to_string(timespan{1}) == "1ns");
  CHECK(to_string(timespan{1001000}) == "1001us");
}

TEST_CASE("a negative timespan keeps its sign", "[time]") {
  CHECK(to_string(timespan{-1500}) == "-1500ns");
  CHECK(to_string(timespan{-15'000'000}) == "-15ms");
  CHECK(to_string(timespan{-3'000'000}) == "-3ms");
  CHECK(to_string(timespan{-2'000'000'000}) == "-2s");
}

TEST_CASE("timespans at the int64 limits print without overflow", "[time]") {
  CHECK(to_string(timespan{std::numeric_limits<int64_t>::max()}) == "9223372036854775807ns");
  CHECK(to_string(timespan{std::numeric_limits<int64_t>::min()}) == "-9223372036854775808ns");
}

TEST_CASE("a timestamp prints as UTC with three fraction digits", "[time]") {
  CHECK(to_string(at_ns(0)) == "1970-01-01T00:00:00.000");
  CHECK(to_string(at_ns(1'649'574'000'000'000'000)) == "2022-04-10T07:00:00.000");
  CHECK(to_string(at_ns(1'649'574'000'123'456'789)) == "2022-04-10T07:00:00.123");
  CHECK(to_string(at_ns(1'649'574'000'500'000'000)) == "2022-04-10T07:00:00.500");
  CHECK(to_string(at_ns(1'681'832'594'123'456'789)) == "2023-04-18T15:43:14.123");
  CHECK(to_string(at_ns(1'681'827'194'000'000'000)) == "2023-04-18T14:13:14.000");
  CHECK(to_string(at_ns(1'234'567'890)) == "1970-01-01T00:00:01.234");
  CHECK(to_string(at_ns(951'782'400'000'000'000)) == "2000-02-29T00:00:00.000");
  CHECK(to_string(at_ns(951'868'799'999'999'999)) == "2000-02-29T23:59:59.999");
}

TEST_CASE("a pre-epoch timestamp floors its milliseconds", "[time]") {
  CHECK(to_string(at_ns(-1'500'000'000)) == "1969-12-31T23:59:58.500");
  CHECK(to_string(at_ns(-1)) == "1969-12-31T23:59:59.999");
  CHECK(to_string(at_ns(-1'000'000'000)) == "1969-12-31T23:59:59.000");
  CHECK(to_string(at_ns(-86'400'000'000'000)) == "1969-12-31T00:00:00.000");
  CHECK(to_string(at_ns(-2'208'988'800'000'000'000)) == "1900-01-01T00:00:00.000");
}

TEST_CASE("timestamps at the int64 limits print the documented range ends", "[time]") {
  // doc/protocol/binary.md §4.2: the years 1677 to 2262.
  CHECK(to_string(at_ns(std::numeric_limits<int64_t>::min())) == "1677-09-21T00:12:43.145");
  CHECK(to_string(at_ns(std::numeric_limits<int64_t>::max())) == "2262-04-11T23:47:16.854");
}

TEST_CASE("now() lies after 2020 and does not run backwards", "[time]") {
  auto t1 = now();
  auto t2 = now();
  CHECK(t1.time_since_epoch().count() > 1'577'836'800'000'000'000);
  CHECK(t1 <= t2);
}
