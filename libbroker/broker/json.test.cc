#include "broker/json.hh"

#include <catch2/catch.hpp>

#include <string>

using namespace broker;
using namespace std::literals;

TEST_CASE("to_json writes the typed form of the WebSocket API") {
  CHECK(to_json(data{count{5}}) == R"({"@data-type":"count","data":5})");
  CHECK(to_json(data{}) == R"({"@data-type":"none","data":{}})");
  CHECK(to_json(vector_builder{}.add(integer{-1}).add("a").build())
        == R"({"@data-type":"vector","data":[{"@data-type":"integer","data":-1},)"
           R"({"@data-type":"string","data":"a"}]})");
}

TEST_CASE("from_json reads what to_json writes, for every type") {
  auto addr = address::parse("10.0.0.1");
  auto net = subnet::parse("10.0.0.0/8");
  REQUIRE(addr);
  REQUIRE(net);
  std::vector<data> values{
    data{},
    data{true},
    data{count{18446744073709551615u}},
    data{integer{-9223372036854775807 - 1}},
    data{1.5},
    data{"caf\xC3\xA9"s},
    data{*addr},
    data{*net},
    data{port{8080, port::protocol::tcp}},
    data{timestamp{timespan{1'700'000'000'000'000'000}}},
    data{timespan{1500}},
    data{enum_value{"Broker::SQLITE_JOURNAL_MODE_WAL"}},
    set_builder{}.add(1).add(2).build(),
    table_builder{}.add("k", 1).build(),
    vector_builder{}.add(vector_builder{}.add("nested").build()).build(),
  };
  for (auto& x : values) {
    auto text = to_json(x);
    auto back = from_json(text);
    INFO(text);
    REQUIRE(back);
    CHECK(*back == x);
  }
}

TEST_CASE("from_json names malformed JSON with its position") {
  auto x = from_json("{\"@data-type\": \"count\",\n  \"data\": 5,,}");
  REQUIRE_FALSE(x);
  CHECK(x.error_value().code() == ec::invalid_json);
  CHECK(x.error_value().message().find("line 2") != std::string::npos);
}

TEST_CASE("from_json rejects JSON that is not a typed value") {
  for (auto text : {"5", "[1, 2]", R"({"data": 5})", R"({"@data-type": "count", "data": -1})",
                    R"({"@data-type": "nope", "data": 1})",
                    R"({"@data-type": "set", "data": [{"@data-type": "count", "data": 1},)"
                    R"({"@data-type": "count", "data": 1}]})"}) {
    auto x = from_json(text);
    INFO(text);
    REQUIRE_FALSE(x);
    CHECK(x.error_value().code() == ec::invalid_data);
  }
}

TEST_CASE("from_json stops at its nesting limit instead of recursing without bound") {
  std::string deep;
  for (int i = 0; i < 10000; ++i)
    deep += R"({"@data-type":"vector","data":[)";
  auto x = from_json(deep);
  REQUIRE_FALSE(x);
}

TEST_CASE("to_json_string quotes, escapes and repairs UTF-8") {
  CHECK(to_json_string("a\"b\\c\n") == R"("a\"b\\c\n")");
  CHECK(to_json_string("\xFF") == "\"\xEF\xBF\xBD\"");
  CHECK(to_json_string("") == R"("")");
}

TEST_CASE("parse_timespan reads a number with a unit") {
  CHECK(parse_timespan("10s") == timespan{10'000'000'000});
  CHECK(parse_timespan("1.5min") == timespan{90'000'000'000});
  CHECK(parse_timespan("-3ms") == timespan{-3'000'000});
  CHECK_FALSE(parse_timespan("10"));
  CHECK_FALSE(parse_timespan("10 parsecs"));
  CHECK_FALSE(parse_timespan(""));
}
