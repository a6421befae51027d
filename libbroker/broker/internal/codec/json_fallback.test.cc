// Tests of the JSON decoder's fallback from the single pass to the general path: every
// input outside Broker's layout, every error, decode() and decode_filter(), a long-lived
// decoder, and random messages and mutations on which both paths must agree
// (check_paths_agree() in json_fast.test.cc).

#include "broker/internal/codec/json.test.hh"

#include <random>
#include <string>
#include <string_view>
#include <vector>

using namespace broker;
using namespace broker::internal::json::test;
using namespace std::literals;

namespace json = broker::internal::json;
namespace detail = broker::internal::json::detail;

// -- what it leaves to the general path ----------------------------------------------------

TEST_CASE("anything but Broker's layout falls back with the general path's answer", "[json]") {
  const std::string_view inputs[] = {
    // Other member orders, repeated and extra members, escaped keys.
    R"({"topic":"/t","type":"data-message","@data-type":"count","data":1})",
    R"({"type":"data-message","@data-type":"count","data":1,"topic":"/t"})",
    R"({"type":"data-message","topic":"/t","data":1,"@data-type":"count"})",
    R"({"topic":"/t","@data-type":"vector","data":[{"data":1,"@data-type":"count"}]})",
    R"({"topic":"/a","topic":"/b","@data-type":"count","data":1})",
    R"({"topic":"/t","@data-type":"count","data":1,"data":2})",
    R"({"topic":"/t","@data-type":"count","@data-type":"string","data":1})",
    R"({"topic":"/t","@data-type":"count","data":1,"extra":true})",
    R"({"topic":"/t","x":0,"@data-type":"count","data":1})",
    R"({"x":0,"topic":"/t","@data-type":"count","data":1})",
    R"({"topic":"/t","@data-type":"vector","data":[{"@data-type":"count","data":1,"x":0}]})",
    R"({"topic":"/t","@data-type":"none","x":0})",
    R"({"topic":"/t","@data-type":"none","data":[1]})",
    R"({"topic":"/t","@data-type":"none","data":{"a":1}})",
    R"({"topic":"/t","@data-type":"none","data":0})",
    R"({"topic":"/t","@data-type":"table","data":[{"value":{"@data-type":"none"},"key":{"@data-type":"none"}}]})",
    R"({"topic":"/t","@data-type":"table","data":[{"key":{"@data-type":"none"},"value":{"@data-type":"none"},"x":1}]})",
    R"({"topic":"/t","@data-type":"table","data":[{"key":{"@data-type":"none"}}]})",
    R"({"t\u006fpic":"/t","@data-type":"count","data":1})",
    R"({"topic":"/t","\u0040data-type":"count","d\u0061ta":3})",
    R"({"topic":"/t","@data-type":"\u0063ount","data":3})",
    // Missing or odd envelope members.
    R"({"@data-type":"count","data":1})",
    R"({"type":"data-message","@data-type":"count","data":1})",
    R"({"type":42,"topic":"/t","@data-type":"count","data":1})",
    R"({"topic":42,"@data-type":"count","data":1})",
    R"({"topic":null,"@data-type":"count","data":1})",
    R"({"topic":"/t","data":1})",
    R"({"topic":"/t","@data-type":"count"})",
    R"({"topic":"/t"})",
    "{}",
    // Reserved topics, unknown types, wrong data.
    R"({"topic":"<$>/local","@data-type":"count","data":1})",
    R"({"topic":"\u003c$>/x","@data-type":"count","data":1})",
    R"({"topic":"/t","@data-type":"phone","data":"555"})",
    R"({"topic":"/t","@data-type":"Count","data":1})",
    R"({"topic":"/t","@data-type":"count ","data":1})",
    R"({"topic":"/t","@data-type":"time","data":1})",
    R"({"topic":"/t","@data-type":"se","data":1})",
    R"({"topic":"/t","@data-type":"timespans","data":"1s"})",
    R"({"topic":"/t","@data-type":1,"data":1})",
    R"({"topic":"/t","@data-type":"boolean","data":"true"})",
    R"({"topic":"/t","@data-type":"string","data":1})",
    R"({"topic":"/t","@data-type":"address","data":"10.0.0.256"})",
    R"({"topic":"/t","@data-type":"subnet","data":"10.0.0.0/33"})",
    R"({"topic":"/t","@data-type":"port","data":"80/xyz"})",
    R"({"topic":"/t","@data-type":"timestamp","data":"2022-02-30T00:00:00"})",
    R"({"topic":"/t","@data-type":"timespan","data":"1 s"})",
    R"({"topic":"/t","@data-type":"vector","data":{}})",
    R"({"topic":"/t","@data-type":"vector","data":[1]})",
    R"({"topic":"/t","@data-type":"vector","data":[{}]})",
    R"({"topic":"/t","@data-type":"set","data":[{"@data-type":"count","data":1},{"@data-type":"count","data":1}]})",
    R"({"topic":"/t","@data-type":"table","data":[{"key":{"@data-type":"none"},"value":{"@data-type":"none"}},{"key":{"@data-type":"none"},"value":{"@data-type":"count","data":1}}]})",
    R"({"topic":"/t","@data-type":"set","data":[{"@data-type":"none"},{"@data-type":"none"},{"@data-type":"count","data":-1}]})",
    // Syntax errors: truncation, trailing text, stray characters.
    R"({"topic":"/t","@data-type":"count","data":1)",
    R"({"topic":"/t","@data-type":"count","data":1}})",
    R"({"topic":"/t","@data-type":"count","data":1} x)",
    R"({"topic":"/t","@data-type":"count","data":1,})",
    R"({"topic":"/t","@data-type":"vector","data":[{"@data-type":"none"},]})",
    R"({"topic":"/t","@data-type":"vector","data":[,]})",
    R"({"topic":"/t" "@data-type":"count","data":1})",
    R"({"type" "topic":"/t","@data-type":"count","data":1})",
    R"({"topic":"/t","@data-type":"count","data":01})",
    R"({"topic":"/t","@data-type":"boolean","data":truex})",
    R"({"topic":"/t","@data-type":"string","data":"\x"})",
    R"({"topic":"/t","@data-type":"string","data":"\u12G4"})",
    "{\"topic\":\"/t\",\"@data-type\":\"count\",\"data\":1}\0"sv,
    "\0{\"topic\":\"/t\",\"@data-type\":\"count\",\"data\":1}"sv,
    "\xef\xbb\xbf{\"topic\":\"/t\",\"@data-type\":\"count\",\"data\":1}",
    "{\"topic\":\"/t\",\f\"@data-type\":\"count\",\"data\":1}",
    "[1]",
    "\"x\"",
    "",
    " ",
  };
  for (auto text : inputs)
    falls_back(text);
  // Each proper prefix of a message is an unexpected end, whichever path starts.
  auto text = message("table", R"([{"key":{"@data-type":"string","data":"k"},"value":{"@data-type":"real","data":1.5e3}}])");
  fast_ok(text);
  for (size_t n = 0; n < text.size(); ++n)
    falls_back(text.substr(0, n));
}

TEST_CASE("decode() and decode_filter() take the single pass where they can", "[json]") {
  std::vector<data> stack;
  data value;
  for (auto text : {R"({"@data-type":"count","data":1})", R"( { "@data-type" : "none" } )",
                    R"({"@data-type":"vector","data":[{"@data-type":"real","data":1e3}]})"}) {
    INFO("input: " << text);
    CHECK(detail::fast_decode(text, value, json::default_max_depth, stack));
    check_paths_agree(text);
  }
  for (auto text : {R"({"topic":"/t","@data-type":"count","data":1})",
                    R"({"data":1,"@data-type":"count"})", R"({"@data-type":"count","data":-1})"}) {
    INFO("input: " << text);
    CHECK_FALSE(detail::fast_decode(text, value, json::default_max_depth, stack));
    check_paths_agree(text);
  }
  std::vector<std::string> topics;
  for (auto text : {R"(["/a","/b"])", R"([ "/a" , "\u00fc" ])", "[]", "\n[\"\"]\n"}) {
    INFO("input: " << text);
    CHECK(detail::fast_filter(text, json::default_max_depth, topics));
    check_paths_agree(text);
  }
  CHECK(*json::decode_filter(R"([ "/a" , "\u00fc" ])") == std::vector<std::string>{"/a", "\xc3\xbc"});
  for (auto text : {"[1]", R"(["/a",1])", R"([["/a"]])", R"(["/a"] x)", R"(["/a")", R"(["/a",])",
                    "{}", "[null]"}) {
    INFO("input: " << text);
    CHECK_FALSE(detail::fast_filter(text, json::default_max_depth, topics));
    check_paths_agree(text);
  }
  CHECK_FALSE(detail::fast_filter("[]", 0, topics));
  check_paths_agree("[]", 0);
}

TEST_CASE("a long-lived decoder reuses its memory and never leaks a value", "[json]") {
  json::decoder dec;
  std::string topic;
  data value;
  auto string_message = message("string", "\"" + std::string(64, 'x') + "\"");
  REQUIRE(dec.data_message(string_message, topic, value));
  // The caller's topic and string keep their buffers from message to message.
  auto topic_buffer = topic.data();
  auto string_buffer = get<std::string>(value).data();
  auto other = R"({"topic":"/u","@data-type":"string","data":")" + std::string(60, 'y') + "\"}";
  REQUIRE(dec.data_message(other, topic, value));
  CHECK(topic == "/u");
  CHECK(get<std::string>(value) == std::string(60, 'y'));
  CHECK(topic.data() == topic_buffer);
  CHECK(get<std::string>(value).data() == string_buffer);
  // Failures on either path in between leave nothing behind for the next message.
  std::string big = R"({"topic":"/t","@data-type":"vector","data":[)";
  for (int i = 0; i < 5000; ++i)
    big += R"({"@data-type":"vector","data":[{"@data-type":"count","data":1}]},)";
  auto cases = {big + "]}", big + R"({"@data-type":"count","data":-1}]})",
                big.substr(0, big.size() - 1) + "]}", message("vector", "[]"), string_message,
                message("set", R"([{"@data-type":"count","data":1},{"@data-type":"count","data":1}])"),
                message("count", "1")};
  for (auto& text : cases) {
    std::string fresh_topic;
    data fresh_value;
    auto expected = json::decode_data_message(text, fresh_topic, fresh_value);
    auto res = dec.data_message(text, topic, value);
    CHECK(res.status == expected.status);
    CHECK(res.detail == expected.detail);
    if (res) {
      CHECK(topic == fresh_topic);
      CHECK(value == fresh_value);
    }
  }
  CHECK(get<broker::vector>(fast_ok(big.substr(0, big.size() - 1) + "]}")).size() == 5000);
}

// -- random messages -------------------------------------------------------------------------

namespace {

/// Writes random messages close to Broker's layout: mostly well-formed, with random
/// whitespace, escapes, number forms and nesting, and now and then a wrong token, another
/// member order, an extra or a missing member.
class message_generator {
public:
  explicit message_generator(uint32_t seed) : rng_(seed) {}

  std::string next() {
    spacing_ = pick(0, 3) == 0 ? pick(1, 50) : 0;
    std::string result = ws() + "{" + ws();
    if (chance(70))
      result += member("type", chance(95) ? R"("data-message")" : "42") + "," + ws();
    result += member("topic", chance(95) ? string_token() : "null") + "," + ws();
    result += fields(0) + "}" + ws();
    return result;
  }

  std::mt19937& rng() { return rng_; }

  size_t pick(size_t lo, size_t hi) {
    return std::uniform_int_distribution<size_t>{lo, hi}(rng_);
  }

private:
  bool chance(size_t percent) { return pick(1, 100) <= percent; }

  template <size_t N>
  std::string_view one_of(const std::string_view (&xs)[N]) {
    return xs[pick(0, N - 1)];
  }

  std::string ws() {
    static constexpr std::string_view spaces[] = {" ", "\n", "\r\n", "\t", "  "};
    return chance(spacing_) ? std::string{one_of(spaces)} : std::string{};
  }

  std::string member(std::string_view key, const std::string& value) {
    return "\"" + std::string{key} + "\"" + ws() + ":" + ws() + value + ws();
  }

  std::string string_token() {
    static constexpr std::string_view pieces[] = {
      "a", "/t", "event_1", "0123456789abcdef", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n",
      "\\r", "\\t", "\\v", "\\u0041", "\\u00fc", "\\ud83d\\ude00", "\\ud800", "\\udc00x",
      "\xc3\xbc", "\xe2\x82\xac", "\xff", "\xc3", "\x01", "<$>", " "};
    std::string result = "\"";
    for (auto n = pick(0, 8); n > 0; --n)
      result += one_of(pieces);
    return result + "\"";
  }

  std::string number_token() {
    static constexpr std::string_view edges[] = {
      "0", "-0", "1", "-1", "42", "18446744073709551615", "18446744073709551616",
      "9223372036854775807", "9223372036854775808", "-9223372036854775808",
      "-9223372036854775809", "1.5", "-0.0", "1e5", "1E+5", "2e-3", "1e400", "-1e400",
      "1e-400", "0.1", "123456789012345678901234567890", "5e-324", "NaN", "nan", "Infinity",
      "-Infinity", "inf", "-inf"};
    if (chance(50))
      return std::string{one_of(edges)};
    std::string result = chance(30) ? "-" : "";
    result += std::to_string(pick(0, 1'000'000'000));
    if (chance(20))
      result += "." + std::to_string(pick(0, 999));
    if (chance(10))
      result += "e" + std::to_string(pick(0, 30));
    return result;
  }

  std::string string_of(std::initializer_list<std::string_view> xs) {
    return "\"" + std::string{*(xs.begin() + pick(0, xs.size() - 1))} + "\"";
  }

  /// A random token of any kind, mostly the wrong one for the type at hand.
  std::string any_token(size_t depth) {
    switch (pick(0, 5)) {
      case 0:
        return string_token();
      case 1:
        return number_token();
      case 2:
        return chance(50) ? "true" : "null";
      case 3:
        return "[" + ws() + "]";
      case 4:
        return "{" + ws() + "}";
      default:
        return "{" + fields(depth + 1) + "}";
    }
  }

  std::string elements(size_t depth, bool table) {
    std::string result = "[" + ws();
    auto n = depth > 4 ? 0 : pick(0, 4);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0)
        result += "," + ws();
      if (table)
        result += "{" + ws() + member("key", "{" + ws() + fields(depth + 1) + "}") + ","
                  + ws() + member("value", "{" + ws() + fields(depth + 1) + "}") + "}" + ws();
      else
        result += "{" + ws() + fields(depth + 1) + "}" + ws();
    }
    return result + "]";
  }

  /// The members of a value object, then whitespace.
  std::string fields(size_t depth) {
    static constexpr std::string_view types[] = {
      "none", "boolean", "count", "integer", "real", "string", "address", "subnet", "port",
      "timestamp", "timespan", "enum-value", "set", "table", "vector"};
    static constexpr std::string_view odd_types[] = {"Count", "\\u0063ount", "time", "se", ""};
    auto type = chance(97) ? one_of(types) : one_of(odd_types);
    std::string data;
    if (chance(5)) {
      data = any_token(depth);
    } else if (type == "boolean") {
      data = chance(50) ? "true" : "false";
    } else if (type == "count" || type == "integer" || type == "real") {
      data = number_token();
    } else if (type == "address") {
      data = string_of({"10.0.0.1", "2001:db8::", "::ffff:1.2.3.4", "1.2.3", "\\u0031.2.3.4"});
    } else if (type == "subnet") {
      data = string_of({"10.0.0.0/8", "::/0", "1.2.3.4/33", "2001:db8::/32"});
    } else if (type == "port") {
      data = string_of({"80/tcp", "53/udp", "8/icmp", "0/?", "99999/tcp", "22"});
    } else if (type == "timestamp") {
      data = string_of({"2023-04-18T14:13:14.000", "1970-01-01T00:00:00Z",
                        "2022-02-30T00:00:00", "2022-04-10T07:00:00.123+02:00"});
    } else if (type == "timespan") {
      data = string_of({"15ms", "1.5s", "-3ns", "1x", "2d", "0.000000001s"});
    } else if (type == "set" || type == "vector" || type == "table") {
      data = elements(depth + 1, type == "table");
    } else if (type == "none") {
      data = chance(70) ? "{}" : "null";
    } else {
      data = string_token();
    }
    auto type_member = member("@data-type", "\"" + std::string{type} + "\"");
    auto data_member = member("data", data);
    if (type == "none" && chance(30))
      return type_member;
    if (chance(3))
      return data_member + "," + ws() + type_member; // other order
    if (chance(2))
      return type_member + "," + ws() + data_member + "," + ws() + member("x", "1");
    if (chance(2))
      return type_member; // no data
    return type_member + "," + ws() + data_member;
  }

  std::mt19937 rng_;
  size_t spacing_ = 0;
};

} // namespace

TEST_CASE("random messages decode alike on both paths", "[json]") {
  message_generator gen{20'24'06'01};
  size_t taken = 0;
  size_t n = 4000;
  for (size_t i = 0; i < n; ++i) {
    auto text = gen.next();
    auto max_depth = gen.pick(0, 9) == 0 ? gen.pick(0, 12) : json::default_max_depth;
    if (check_paths_agree(text, max_depth))
      ++taken;
  }
  // Both paths get their share: most messages are in Broker's layout.
  CHECK(taken > n / 4);
  CHECK(taken < n);
}

TEST_CASE("random mutations of messages decode alike on both paths", "[json]") {
  message_generator gen{4711};
  auto& rng = gen.rng();
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>{0, n - 1}(rng); };
  constexpr std::string_view tokens[] = {"{", "}", "[", "]", ",", ":", "\"", "\\", "-", "0",
                                         "1e9", "NaN", "null", "\\u", "\xff", " ", "\r\n",
                                         "\"data\":", "\"@data-type\":", "{}", "\"none\""};
  size_t taken = 0;
  for (int i = 0; i < 4000; ++i) {
    auto text = gen.next();
    for (auto n = 1 + pick(3); n > 0; --n) {
      mutate_once(text, pick, tokens);
    }
    if (check_paths_agree(text))
      ++taken;
  }
  CHECK(taken > 0);
}
