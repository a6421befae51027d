#include "broker/data.hh"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace broker;
using namespace std::literals;

namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();
constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

data addr(std::string_view text) {
  auto result = address::parse(text);
  REQUIRE(result);
  return data{*result};
}

data net(std::string_view text) {
  auto result = subnet::parse(text);
  REQUIRE(result);
  return data{*result};
}

data ts(int64_t ns) {
  return data{timestamp{timespan{ns}}};
}

data span(int64_t ns) {
  return data{timespan{ns}};
}

data vec(std::initializer_list<data> xs) {
  return data{vector(xs)};
}

// Checks that `xs` is strictly ascending, and that the order is consistent pairwise.
void check_ascending(const std::vector<data>& xs) {
  for (size_t i = 0; i < xs.size(); ++i) {
    for (size_t j = 0; j < xs.size(); ++j) {
      INFO("x[" << i << "] = " << xs[i] << ", x[" << j << "] = " << xs[j]);
      CHECK((xs[i] < xs[j]) == (i < j));
      CHECK((xs[i] == xs[j]) == (i == j));
    }
  }
}

} // namespace

// -- total order (doc/protocol/binary.md §7 and its examples) -----------------------------------

TEST_CASE("values of a smaller type tag sort first", "[data]") {
  check_ascending({data{}, data{false}, data{true}, data{count{0}},
                   data{count{18446744073709551615u}}, data{integer{INT64_MIN}}, data{integer{0}},
                   data{-infinity}, data{-1.0}, data{0.0}, data{infinity}});
}

TEST_CASE("strings compare as unsigned bytes with a proper prefix first", "[data]") {
  check_ascending({data{""}, data{"A"}, data{"a"}, data{"ab"}, data{"abc"}, data{"b"},
                   data{"z"}, data{"\xc3\xa9"}, data{"\xff"}});
}

TEST_CASE("addresses compare as their 16 stored bytes", "[data]") {
  check_ascending({addr("::"), addr("::1"), addr("127.0.0.1"), addr("192.168.9.8"),
                   addr("2001:db8::"), addr("ff02::1")});
}

TEST_CASE("subnets compare by network first, then raw length", "[data]") {
  check_ascending({net("::/0"), net("10.0.0.0/8"), net("10.0.0.0/16"), net("10.1.0.0/16")});
}

TEST_CASE("ports compare by number first, then protocol code", "[data]") {
  check_ascending({data{port{53, port::protocol::tcp}}, data{port{53, port::protocol::udp}},
                   data{port{80, port::protocol::udp}}, data{port{443, port::protocol::tcp}}});
}

TEST_CASE("vectors compare lexicographically with a proper prefix first", "[data]") {
  check_ascending({vec({}), vec({count{1}}), vec({count{1}, count{0}}), vec({count{2}})});
}

TEST_CASE("a count never equals an integer of the same numeric value", "[data]") {
  CHECK(data{count{1}} != data{integer{1}});
  CHECK(data{count{5}} < data{integer{-5}});
  set xs{data{count{1}}, data{integer{1}}};
  CHECK(xs.size() == 2);
}

TEST_CASE("reals -0.0 and +0.0 are equal", "[data]") {
  CHECK(data{0.0} == data{-0.0});
  CHECK_FALSE(data{0.0} < data{-0.0});
  CHECK_FALSE(data{-0.0} < data{0.0});
  set xs{data{0.0}, data{-0.0}};
  CHECK(xs.size() == 1);
}

TEST_CASE("NaN sorts after +inf and all NaNs are equal", "[data]") {
  auto other_nan = -std::nan("42");
  CHECK(data{infinity} < data{not_a_number});
  CHECK(data{not_a_number} == data{not_a_number});
  CHECK(data{not_a_number} == data{other_nan});
  CHECK_FALSE(data{not_a_number} < data{other_nan});
  CHECK(data{not_a_number} < data{"a"});
  CHECK(data{integer{INT64_MAX}} < data{not_a_number});
  CHECK(vec({not_a_number}) == vec({not_a_number}));
}

TEST_CASE("timestamps and timespans compare as signed nanoseconds", "[data]") {
  check_ascending({ts(-1), ts(0), ts(1), span(INT64_MIN), span(-1), span(0), span(1)});
}

TEST_CASE("enum values compare by name bytes", "[data]") {
  check_ascending({data{"zzz"}, data{enum_value{""}}, data{enum_value{"a"}},
                   data{enum_value{"ab"}}, data{enum_value{"b"}}});
}

TEST_CASE("sets compare lexicographically in ascending element order", "[data]") {
  check_ascending({data{set{}}, data{set{data{count{1}}}},
                   data{set{data{count{1}}, data{count{2}}}}, data{set{data{count{2}}}},
                   data{set{data{"a"}}}});
}

TEST_CASE("tables compare by key, then value, pair by pair", "[data]") {
  auto t = [](std::initializer_list<std::pair<const data, data>> xs) { return data{table(xs)}; };
  check_ascending({t({}), t({{count{1}, "a"}}), t({{count{1}, "b"}}),
                   t({{count{1}, "b"}, {count{2}, "a"}}), t({{count{2}, "a"}})});
  // {0: "z", 1: "b"} sorts its pairs first, so it starts with key 0.
  CHECK(t({{count{1}, "b"}, {count{0}, "z"}}) < t({{count{1}, "a"}}));
}

TEST_CASE("equality and order agree for nested containers", "[data]") {
  auto nan_table = data{table{{data{"k"}, vec({not_a_number})}}};
  auto inf_table = data{table{{data{"k"}, vec({infinity})}}};
  auto a = vec({data{set{data{1.5}, data{"x"}}}, nan_table});
  auto b = vec({data{set{data{"x"}, data{1.5}}}, nan_table});
  auto c = vec({data{set{data{"x"}, data{1.5}}}, inf_table});
  CHECK(a == b);
  CHECK_FALSE(a < b);
  CHECK_FALSE(b < a);
  CHECK(a != c);
  CHECK(c < a);
}

// -- type names --------------------------------------------------------------------------------

TEST_CASE("type names are the JSON @data-type spellings", "[data]") {
  CHECK(to_string(data::type::none) == "none");
  CHECK(to_string(data::type::boolean) == "boolean");
  CHECK(to_string(data::type::count) == "count");
  CHECK(to_string(data::type::integer) == "integer");
  CHECK(to_string(data::type::real) == "real");
  CHECK(to_string(data::type::string) == "string");
  CHECK(to_string(data::type::address) == "address");
  CHECK(to_string(data::type::subnet) == "subnet");
  CHECK(to_string(data::type::port) == "port");
  CHECK(to_string(data::type::timestamp) == "timestamp");
  CHECK(to_string(data::type::timespan) == "timespan");
  CHECK(to_string(data::type::enum_value) == "enum-value");
  CHECK(to_string(data::type::set) == "set");
  CHECK(to_string(data::type::table) == "table");
  CHECK(to_string(data::type::vector) == "vector");
}

TEST_CASE("constructors pick the alternative by signedness", "[data]") {
  CHECK(data{1}.get_type() == data::type::integer);
  CHECK(data{1u}.get_type() == data::type::count);
  CHECK(data{int8_t{-1}}.get_type() == data::type::integer);
  CHECK(data{uint64_t{1}}.get_type() == data::type::count);
  CHECK(data{true}.get_type() == data::type::boolean);
  CHECK(data{1.5f}.get_type() == data::type::real);
  CHECK(data{"x"}.get_type() == data::type::string);
}

// -- text rendering ---------------------------------------------------------------------------

TEST_CASE("scalars render in Broker style", "[data]") {
  CHECK(to_string(data{}) == "nil");
  CHECK(to_string(data{true}) == "T");
  CHECK(to_string(data{false}) == "F");
  CHECK(to_string(data{count{18446744073709551615u}}) == "18446744073709551615");
  CHECK(to_string(data{integer{INT64_MIN}}) == "-9223372036854775808");
  CHECK(to_string(data{-7.5}) == "-7.5");
  CHECK(to_string(data{0.1}) == "0.1");
  CHECK(to_string(data{2.0}) == "2.0");
  CHECK(to_string(data{1e300}) == "1e+300");
  CHECK(to_string(data{infinity}) == "inf");
  CHECK(to_string(data{-infinity}) == "-inf");
  CHECK(to_string(data{"hello world"}) == "hello world");
  CHECK(to_string(data{enum_value{"foo"}}) == "foo");
  CHECK(to_string(addr("2001:db8::")) == "2001:db8::");
  CHECK(to_string(net("255.255.255.0/24")) == "255.255.255.0/24");
  CHECK(to_string(data{port{8080, port::protocol::tcp}}) == "8080/tcp");
  CHECK(to_string(ts(1'649'574'000'123'456'789)) == "2022-04-10T07:00:00.123");
  CHECK(to_string(span(15'000'000)) == "15ms");
}

TEST_CASE("containers render as (vector), {set} and {k -> v} with quoted strings", "[data]") {
  CHECK(to_string(vec({})) == "()");
  CHECK(to_string(data{set{}}) == "{}");
  CHECK(to_string(data{table{}}) == "{}");
  CHECK(to_string(vec({true, "abc", vec({1, 2})})) == "(T, \"abc\", (1, 2))");
  CHECK(to_string(data{set{data{"foo"}, data{"bar"}}}) == "{\"bar\", \"foo\"}");
  CHECK(to_string(data{table{{data{"k1"}, data{}}, {data{"k2"}, data{count{2}}}}})
        == "{\"k1\" -> nil, \"k2\" -> 2}");
  CHECK(to_string(vec({data{enum_value{"e"}}, span(0)})) == "(e, 0s)");
}

TEST_CASE("nested strings escape quotes, backslashes and control bytes", "[data]") {
  CHECK(to_string(vec({"a\"b\\c"})) == R"(("a\"b\\c"))");
  CHECK(to_string(vec({"\n\t\r\x01\x7f"})) == R"(("\n\t\r\x01\x7f"))");
  CHECK(to_string(vec({"\xc3\xbc"})) == "(\"\xc3\xbc\")");
  CHECK(to_string(data{"a\"b"}) == "a\"b");
}

TEST_CASE("builders produce the expected containers", "[data]") {
  auto v = vector_builder{}.add(1).add("x").build();
  CHECK(v == vec({1, "x"}));
  auto s = set_builder{}.add("b").add("a").add("b").build();
  CHECK(s == data{set{data{"a"}, data{"b"}}});
  auto t = table_builder{}.add("k", 1).add("k", 2).build();
  CHECK(t == data{table{{data{"k"}, data{1}}}});
}
