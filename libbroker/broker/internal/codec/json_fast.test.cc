// Tests of the JSON decoder's single pass (json_fast.cc): which inputs it takes, that it
// decodes them exactly as the general path does, and that everything else falls back to
// the general path with the same error. check_paths_agree() (json.test.hh) is the
// differential check; json.test.cc runs it on its test vectors too.

#include "broker/internal/codec/json.test.hh"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

using namespace broker;
using namespace std::literals;

namespace json = broker::internal::json;
namespace detail = broker::internal::json::detail;

namespace broker::internal::json::test {

namespace {

/// Everything a caller can see of a result.
std::string describe(const decode_result& res) {
  if (res)
    return "ok";
  auto result = error_context(1, res) + " [status " + std::to_string(static_cast<int>(res.status));
  if (res.status == decode_status::malformed_json)
    result += ", " + parser_error_text(res);
  return result + "]";
}

/// A decoder that lives across calls, as a WebSocket session's does.
decoder& long_lived_decoder() {
  static decoder instance;
  return instance;
}

} // namespace

bool check_paths_agree(std::string_view text, size_t max_depth) {
  INFO("input: " << printable(text) << "\nmax_depth: " << max_depth);
  std::string general_topic;
  data general_value;
  std::vector<detail::token> tape;
  auto general = detail::general_data_message(text, general_topic, general_value, max_depth,
                                              tape);
  auto same_message = [&](const decode_result& res, const std::string& topic,
                          const data& value) {
    CHECK(describe(res) == describe(general));
    CHECK(res.detail == general.detail);
    if (res && general) {
      CHECK(topic == general_topic);
      CHECK(value == general_value);
      CHECK(encode_data_message(topic, value)
            == encode_data_message(general_topic, general_value));
    }
  };
  std::string topic;
  data value;
  auto res = decode_data_message(text, topic, value, max_depth);
  same_message(res, topic, value);
  // Stale outputs and a decoder that decoded other messages before must not matter.
  std::string session_topic = "stale";
  data session_value{broker::vector{data{"stale"}, data{count{1}}}};
  res = long_lived_decoder().data_message(text, session_topic, session_value, max_depth);
  same_message(res, session_topic, session_value);
  std::string fast_topic;
  data fast_value;
  std::vector<data> stack;
  auto took = detail::fast_data_message(text, fast_topic, fast_value, max_depth, stack);
  if (took) {
    REQUIRE(general);
    same_message(decode_result{}, fast_topic, fast_value);
  }
  data value1;
  data value2;
  auto res1 = decode(text, value1, max_depth);
  auto res2 = detail::general_decode(text, value2, max_depth);
  CHECK(describe(res1) == describe(res2));
  CHECK(res1.detail == res2.detail);
  if (res1 && res2) {
    CHECK(value1 == value2);
    CHECK(encode(value1) == encode(value2));
  }
  auto filter1 = decode_filter(text, max_depth);
  auto filter2 = detail::general_filter(text, max_depth);
  REQUIRE(filter1.has_value() == filter2.has_value());
  if (filter1)
    CHECK(*filter1 == *filter2);
  else
    CHECK(filter1.error_value().message() == filter2.error_value().message());
  return took;
}

} // namespace broker::internal::json::test

using namespace broker::internal::json::test;

namespace {

constexpr uint64_t max_count = std::numeric_limits<uint64_t>::max();
constexpr int64_t min_integer = std::numeric_limits<int64_t>::min();
constexpr int64_t max_integer = std::numeric_limits<int64_t>::max();

} // namespace

// -- what the single pass takes ------------------------------------------------------------

TEST_CASE("the single pass takes each of the 15 types in Broker's layout", "[json]") {
  auto table = R"([{"key":{"@data-type":"count","data":1},"value":{"@data-type":"none","data":{}}}])";
  std::pair<std::string, data> cases[] = {
    {message("none", "{}"), data{}},
    {message("boolean", "true"), data{true}},
    {message("boolean", "false"), data{false}},
    {message("count", "42"), data{count{42}}},
    {message("integer", "-42"), data{integer{-42}}},
    {message("real", "-7.5"), data{-7.5}},
    {message("string", R"("text")"), data{"text"}},
    {message("address", R"("2001:db8::")"), data{*address::parse("2001:db8::")}},
    {message("subnet", R"("10.0.0.0/8")"), data{*subnet::parse("10.0.0.0/8")}},
    {message("port", R"("8080/tcp")"), data{port{8080, port::protocol::tcp}}},
    {message("timestamp", R"("2023-04-18T14:13:14.000")"),
     data{*json::parse_timestamp("2023-04-18T14:13:14.000")}},
    {message("timespan", R"("1500ms")"), data{timespan{1'500'000'000}}},
    {message("enum-value", R"("peer_added")"), data{enum_value{"peer_added"}}},
    {message("set", R"([{"@data-type":"count","data":2},{"@data-type":"count","data":1}])"),
     data{broker::set{data{count{1}}, data{count{2}}}}},
    {message("table", table), data{broker::table{{data{count{1}}, data{}}}}},
    {message("vector", R"([{"@data-type":"string","data":"a"},{"@data-type":"none"}])"),
     data{broker::vector{data{"a"}, data{}}}},
  };
  for (auto& [text, expected] : cases) {
    CHECK(fast_ok(text) == expected);
    // Python's json.dumps spacing, pretty-printing with CRLF and tabs, and space around
    // every token all stay on the single pass.
    CHECK(fast_ok(respace(text, " ")) == expected);
    CHECK(fast_ok(respace(text, "\r\n\t", true)) == expected);
    CHECK(fast_ok(" \n" + respace(text, " ", true) + "\n") == expected);
  }
  // The envelope may lack "type"; none may have null or no data.
  CHECK(fast_ok(R"({"topic":"/t","@data-type":"count","data":1})") == data{count{1}});
  CHECK(fast_ok(R"({"topic":"/t","@data-type":"none","data":null})") == data{});
  CHECK(fast_ok(R"({"topic":"/t","@data-type":"none"})") == data{});
  CHECK(fast_ok(R"({"topic":"","@data-type":"vector","data":[]})") == data{broker::vector{}});
  CHECK(fast_ok(message("set", "[]")) == data{broker::set{}});
  CHECK(fast_ok(message("table", "[ ]")) == data{broker::table{}});
}

TEST_CASE("the single pass decodes escapes and non-ASCII text as the general path", "[json]") {
  CHECK(fast_ok(message("string", R"("\"\\\/\b\f\n\r\t\v")")) == data{"\"\\/\b\f\n\r\t\v"});
  CHECK(fast_ok(message("string", R"("\u0041\u00fc\u20ac\ud83d\ude00")"))
        == data{"A\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80"});
  // Lone surrogates and invalid UTF-8 become U+FFFD, valid UTF-8 passes unchanged.
  CHECK(fast_ok(message("string", R"("\ud800x\udc00")")) == data{"\xef\xbf\xbdx\xef\xbf\xbd"});
  CHECK(fast_ok(message("string", "\"\xff\xc3\"")) == data{"\xef\xbf\xbd\xef\xbf\xbd"});
  CHECK(fast_ok(message("string", "\"\xc3\xbc\xe2\x82\xac long enough for a 16-byte block\""))
        == data{"\xc3\xbc\xe2\x82\xac long enough for a 16-byte block"});
  CHECK(fast_ok(message("string", "\"a\x01\x1f\x7f\"")) == data{"a\x01\x1f\x7f"});
  CHECK(fast_ok(message("string", "\"\0\""sv)) == data{std::string(1, '\0')});
  CHECK(fast_ok(message("enum-value", "\"\\u0041\\n\xff\"")) == data{enum_value{"A\n\xef\xbf\xbd"}});
  CHECK(fast_ok(message("address", R"("\u0031\u0030.0.0.1")")) == data{*address::parse("10.0.0.1")});
  CHECK(fast_ok(message("port", R"("80\/udp")")) == data{port{80, port::protocol::udp}});
  auto value = fast_ok(R"({"topic":"\u00fc\/\"x\"","@data-type":"none"})");
  CHECK(value == data{});
  std::string topic;
  REQUIRE(json::decode_data_message(R"({"topic":"\u00fc\/\"x\"","@data-type":"none"})", topic, value));
  CHECK(topic == "\xc3\xbc/\"x\"");
  // Strings ending at every offset around the 16- and 8-byte blocks.
  for (size_t n = 0; n < 40; ++n) {
    std::string body(n, 'x');
    if (n > 3)
      body[n / 2] = '\xff';
    check_paths_agree(message("string", "\"" + body + "\""));
    check_paths_agree(message("string", "\"" + body + "\\n\""));
    check_paths_agree("[\"" + body + "\"]");
    check_paths_agree("[\"" + body); // unterminated
  }
}

TEST_CASE("the single pass reads numbers at their limits as the general path", "[json]") {
  CHECK(fast_ok(message("count", "18446744073709551615")) == data{count{max_count}});
  CHECK(fast_ok(message("count", "0")) == data{count{0}});
  CHECK(fast_ok(message("count", "-0")) == data{count{0}});
  CHECK(fast_ok(message("count", "1234567890123456789")) == data{count{1234567890123456789u}});
  CHECK(fast_ok(message("integer", "-9223372036854775808")) == data{integer{min_integer}});
  CHECK(fast_ok(message("integer", "9223372036854775807")) == data{integer{max_integer}});
  CHECK(fast_ok(message("integer", "-0")) == data{integer{0}});
  CHECK(fast_ok(message("integer", "-999999999999999999")) == data{integer{-999999999999999999}});
  auto real_of = [](std::string_view token) { return get<real>(fast_ok(message("real", token))); };
  CHECK(std::signbit(real_of("-0")));
  CHECK(std::signbit(real_of("-0.0")));
  CHECK(real_of("0") == 0.0);
  CHECK(real_of("1E+2") == 100.0);
  CHECK(real_of("1e-2") == 0.01);
  CHECK(real_of("-1.5e3") == -1500.0);
  CHECK(real_of("1e400") == std::numeric_limits<double>::infinity());
  CHECK(real_of("-1e400") == -std::numeric_limits<double>::infinity());
  CHECK(real_of("1e-400") == 0.0);
  CHECK(real_of("5e-324") > 0.0);
  CHECK(real_of("18446744073709551615") == 18446744073709551615.0);
  CHECK(real_of("184467440737095516160.5") == 184467440737095516160.5);
  CHECK(real_of("Infinity") == std::numeric_limits<double>::infinity());
  CHECK(real_of("inf") == std::numeric_limits<double>::infinity());
  CHECK(real_of("-Infinity") == -std::numeric_limits<double>::infinity());
  CHECK(real_of("-inf") == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(real_of("NaN")));
  CHECK(std::isnan(real_of("nan")));
  // Beyond the limits: syntax errors, or invalid data, from the general path.
  for (auto [type, token] : {std::pair{"count", "18446744073709551616"},
                             {"count", "-1"},
                             {"count", "1.0"},
                             {"count", "1e2"},
                             {"integer", "-9223372036854775809"},
                             {"integer", "9223372036854775808"},
                             {"integer", "99999999999999999999999"},
                             {"real", "184467440737095516160"},
                             {"real", "-9223372036854775809"},
                             {"real", "01"},
                             {"real", "1."},
                             {"real", "1e"},
                             {"real", "-"},
                             {"real", "-Inf"},
                             {"real", "Infinite"},
                             {"real", "null"},
                             {"real", "\"1\""},
                             {"count", "-Infinity"}})
    falls_back(message(type, token));
}

TEST_CASE("the single pass enforces the nesting limit exactly as the tokenizer", "[json]") {
  auto nested = [](int levels) {
    data x = broker::vector{};
    for (int i = 1; i < levels; ++i)
      x = broker::vector{x};
    return json::encode_data_message("/t", x);
  };
  // 128 levels of JSON hold 64 nested vectors, 65 are too deep.
  fast_ok(nested(64));
  falls_back(nested(65));
  std::string topic;
  data value;
  CHECK(json::decode_data_message(nested(65), topic, value).code == json::pec::nested_too_deeply);
  // Every limit around every shape: containers, none's {}, table entries and their keys.
  auto set_table = R"([{"key":{"@data-type":"set","data":[{"@data-type":"none","data":{}}]},)"
                   R"("value":{"@data-type":"vector","data":[]}}])";
  std::string shapes[] = {
    message("count", "1"),
    message("none", "{}"),
    message("none", "null"),
    message("vector", "[]"),
    message("vector", R"([{"@data-type":"none","data":{}}])"),
    message("table", set_table),
    R"({"@data-type":"none","data":{}})",
    R"({"@data-type":"vector","data":[{"@data-type":"set","data":[]}]})",
    R"(["/a"])",
    "[]",
  };
  for (auto& text : shapes)
    for (size_t max_depth = 0; max_depth <= 7; ++max_depth)
      check_paths_agree(text, max_depth);
  // Limits beyond max_depth_limit are clamped by both paths.
  auto deep = nested(600);
  CHECK(check_paths_agree(deep, SIZE_MAX) == false);
  CHECK(json::decode_data_message(deep, topic, value, SIZE_MAX).code
        == json::pec::nested_too_deeply);
  fast_ok(nested(500), SIZE_MAX);
}

