// Fuzz target: the WebSocket JSON v1 decoder (codec/json*), which reads every text message
// a WebSocket client sends. The input goes to all three entry points: decode_data_message()
// (every message after the first), decode() (a single value object) and decode_filter()
// (the first message); and, split at newlines into a session's messages, to one reusable
// json::decoder, which a WebSocket session keeps for all its messages.
//
// Checks: syntax errors carry 1-based positions and render as Broker's texts; a decoded
// message re-encodes to JSON that decodes again (only duplicates may appear, see
// codec_checks.hh) and re-encodes byte for byte, with the same topic; no reserved topic gets
// through; decoded values survive the binary codec; a decoded filter re-rendered decodes to
// the same topics; the reusable decoder answers every message exactly as
// decode_data_message() does, whatever it decoded before; the single pass (json_fast.cc)
// and the general path (tokenizer and converter) give the same value or the same error,
// word for word, at the default nesting limit and at a small one taken from the input.

#include "codec_checks.hh"
#include "fuzz_common.hh"

#include "broker/internal/codec/json.hh"
#include "broker/internal/codec/json_internal.hh"
#include "broker/topic.hh"

using namespace broker;
namespace json = broker::internal::json;

namespace {

// The JSON literals of codec/json.test.cc that clients could send, whole and in fragments.
const char* const test_vectors[] = {
  "{\"type\":\"data-message\",\"topic\":\"/t\",\"@data-type\":\"",
  "{\"type\": \"data-message\", \"topic\": \"/test\", \"@data-type\": \"vector\", \"data\":"
  " [{\"@data-type\": \"integer\", \"data\": -9223372036854775808}, {\"@data-type\": \"inte"
  "ger\", \"data\": 9223372036854775807}, {\"@data-type\": \"count\", \"data\": 0}, {\"@dat"
  "a-type\": \"count\", \"data\": 18446744073709551615}, {\"@data-type\": \"string\", \"dat"
  "a\": \"Hello \\\\u003cBroker\\\\u003e!\"}, {\"@data-type\": \"none\", \"data\": {}}, {\""
  "@data-type\": \"boolean\", \"data\": true}, {\"@data-type\": \"real\", \"data\": -7.5}, "
  "{\"@data-type\": \"timespan\", \"data\": \"15ms\"}, {\"@data-type\": \"enum-value\", \"d"
  "ata\": \"foo\"}, {\"@data-type\": \"address\", \"data\": \"2001:db8::\"}, {\"@data-type"
  "\": \"subnet\", \"data\": \"255.255.255.0/24\"}, {\"@data-type\": \"port\", \"data\": \""
  "8080/tcp\"}, {\"@data-type\": \"set\", \"data\": [{\"@data-type\": \"string\", \"data\":"
  " \"bar\"}, {\"@data-type\": \"string\", \"data\": \"foo\"}]}, {\"@data-type\": \"table\""
  ", \"data\": [{\"key\": {\"@data-type\": \"string\", \"data\": \"first-name\"}, \"value\""
  ": {\"@data-type\": \"string\", \"data\": \"John\"}}, {\"key\": {\"@data-type\": \"string"
  "\", \"data\": \"last-name\"}, \"value\": {\"@data-type\": \"string\", \"data\": \"Doe\"}"
  "}]}]}",
  "{\"type\":\"data-message\",\"topic\":\"/test\",\"@data-type\":\"vector\",\"data\":[{\"@d"
  "ata-type\":\"integer\",\"data\":-9223372036854775808},{\"@data-type\":\"integer\",\"data"
  "\":9223372036854775807},{\"@data-type\":\"count\",\"data\":0},{\"@data-type\":\"count\","
  "\"data\":18446744073709551615},{\"@data-type\":\"string\",\"data\":\"Hello \\\\u003cBrok"
  "er\\\\u003e!\"},{\"@data-type\":\"none\",\"data\":{}},{\"@data-type\":\"boolean\",\"data"
  "\":true},{\"@data-type\":\"real\",\"data\":-7.5},{\"@data-type\":\"timespan\",\"data\":"
  "\"15ms\"},{\"@data-type\":\"enum-value\",\"data\":\"foo\"},{\"@data-type\":\"address\","
  "\"data\":\"2001:db8::\"},{\"@data-type\":\"subnet\",\"data\":\"255.255.255.0/24\"},{\"@d"
  "ata-type\":\"port\",\"data\":\"8080/tcp\"},{\"@data-type\":\"set\",\"data\":[{\"@data-ty"
  "pe\":\"string\",\"data\":\"bar\"},{\"@data-type\":\"string\",\"data\":\"foo\"}]},{\"@dat"
  "a-type\":\"table\",\"data\":[{\"key\":{\"@data-type\":\"string\",\"data\":\"first-name\""
  "},\"value\":{\"@data-type\":\"string\",\"data\":\"John\"}},{\"key\":{\"@data-type\":\"st"
  "ring\",\"data\":\"last-name\"},\"value\":{\"@data-type\":\"string\",\"data\":\"Doe\"}}]}"
  "]}",
  "{\n  \"type\": \"data-message\",\n  \"topic\": \"/test\",\n  \"@data-type\": \"vector\","
  "\n  \"data\": [\n    {\n      \"@data-type\": \"integer\",\n      \"data\": -92233720368"
  "54775808\n    },\n    {\n      \"@data-type\": \"integer\",\n      \"data\": 92233720368"
  "54775807\n    },\n    {\n      \"@data-type\": \"count\",\n      \"data\": 0\n    },\n  "
  "  {\n      \"@data-type\": \"count\",\n      \"data\": 18446744073709551615\n    },\n   "
  " {\n      \"@data-type\": \"string\",\n      \"data\": \"Hello \\\\u003cBroker\\\\u003e!"
  "\"\n    },\n    {\n      \"@data-type\": \"none\",\n      \"data\": {}\n    },\n    {\n "
  "     \"@data-type\": \"boolean\",\n      \"data\": true\n    },\n    {\n      \"@data-ty"
  "pe\": \"real\",\n      \"data\": -7.5\n    },\n    {\n      \"@data-type\": \"timespan\""
  ",\n      \"data\": \"15ms\"\n    },\n    {\n      \"@data-type\": \"enum-value\",\n     "
  " \"data\": \"foo\"\n    },\n    {\n      \"@data-type\": \"address\",\n      \"data\": "
  "\"2001:db8::\"\n    },\n    {\n      \"@data-type\": \"subnet\",\n      \"data\": \"255."
  "255.255.0/24\"\n    },\n    {\n      \"@data-type\": \"port\",\n      \"data\": \"8080/t"
  "cp\"\n    },\n    {\n      \"@data-type\": \"set\",\n      \"data\": [\n        {\n     "
  "     \"@data-type\": \"string\",\n          \"data\": \"bar\"\n        },\n        {\n  "
  "        \"@data-type\": \"string\",\n          \"data\": \"foo\"\n        }\n      ]\n  "
  "  },\n    {\n      \"@data-type\": \"table\",\n      \"data\": [\n        {\n          "
  "\"key\": {\n            \"@data-type\": \"string\",\n            \"data\": \"first-name"
  "\"\n          },\n          \"value\": {\n            \"@data-type\": \"string\",\n     "
  "       \"data\": \"John\"\n          }\n        },\n        {\n          \"key\": {\n   "
  "         \"@data-type\": \"string\",\n            \"data\": \"last-name\"\n          },"
  "\n          \"value\": {\n            \"@data-type\": \"string\",\n            \"data\":"
  " \"Doe\"\n          }\n        }\n      ]\n    }\n  ]\n}",
  "{\"topic\": \"/test\", \"@data-type\": \"phone\", \"data\": \"555-0123\"}",
  "{\"type\":\"data-message\",\"topic\":\"/t\",\"@data-type\":\"count\",\"data\":1}",
  "{\"type\":\"data-message\",\"topic\":\"/t\",\"@data-type\":\"set\",\"data\":[{\"@data-ty"
  "pe\":\"count\",\"data\":1},{\"@data-type\":\"count\",\"data\":1}]}",
  "[{\"key\":{\"@data-type\":\"count\",\"data\":1},\"value\":{\"@data-type\":\"string\",\"d"
  "ata\":\"a\"}},",
  "{\"key\":{\"@data-type\":\"count\",\"data\":1},\"value\":{\"@data-type\":\"string\",\"da"
  "ta\":\"b\"}}]",
  "{\"a\"",
  "{\"a\":}",
  "{\"a\" 1}",
  "{a:1}",
  "{\"a\":1,}",
  "[\"\\x\"]",
  "[\"\\u12G4\"]",
  "[\"\\u12",
  "[\"abc",
  "[\"abc\\",
  "{\"@data-type\":\"phone\",\"data\":1,",
  "[{\"@data-type\":\"count\",\"data\":1},{\"@data-type\":\"count\",\"data\":1},",
  "{\"@data-type\":\"count\",\"data\":-1}]",
  "{\"type\":\"data-message\",\"topic\":\"/test\",\"@data-type\":\"count\",\"data\":1}",
  "{\"type\": \"data-message\", \"topic\": \"/test\", \"@data-type\": \"count\", \"data\": ",
  "{\"type\":\"data-message\",\"topic\":\"/test\",\"@data-type\":\"vector\",\"data\":[",
  "{\"@data-type\":\"count\",\"data\":",
  "{\"@data-type\":\"none\",\"data\":{}}",
  "{\"@data-type\":\"timespan\",\"data\":\"1500ms\"}",
  "{\"@data-type\":\"timespan\",\"data\":\"0s\"}",
  "{\"@data-type\":\"timespan\",\"data\":\"2us\"}",
  "{\"@data-type\":\"timestamp\",\"data\":\"2022-04-10T07:00:00.000\"}",
  "{\"@data-type\":\"timestamp\",\"data\":\"2022-04-10T07:00:00.123\"}",
  "{\"@data-type\":\"port\",\"data\":\"8080/tcp\"}",
  "{\"@data-type\":\"port\",\"data\":\"0/?\"}",
  "{\"@data-type\":\"address\",\"data\":\"2001:db8::\"}",
  "{\"@data-type\":\"address\",\"data\":\"10.0.0.1\"}",
  "{\"@data-type\":\"subnet\",\"data\":\"255.255.255.0/24\"}",
  "{\"@data-type\":\"real\",\"data\":-7.5}",
  "{\"@data-type\":\"real\",\"data\":2.0}",
  "{\"@data-type\":\"string\",\"data\":\"a\\tb\\u0001\"}",
  "{\"@data-type\":\"vector\",\"data\":[]}",
  "{\"@data-type\":\"set\",\"data\":[]}",
  "{\"@data-type\":\"table\",\"data\":[]}",
  "{\"@data-type\":\"table\",\"data\":[{\"key\":{\"@data-type\":\"string\",\"data\":\"first"
  "-name\"},\"value\":{\"@data-type\":\"string\",\"data\":\"John\"}}]}",
  "{\"@data-type\":\"set\",\"data\":[{\"@data-type\":\"count\",\"data\":2},{\"@data-type\":"
  "\"count\",\"data\":10},{\"@data-type\":\"string\",\"data\":\"a\"}]}",
  "{\"type\":\"data-message\",\"topic\":\"/foo/bar\",\"@data-type\":\"count\",\"data\":1}",
  "{\"type\":\"data-message\",\"topic\":\"\",\"@data-type\":\"none\",\"data\":{}}",
  "{\"type\":\"data-message\",\"topic\":\"a\\\"b\\u0001\",\"@data-type\":\"boolean\",\"data"
  "\":true}",
  "{\"type\":\"data-message\",\"topic\":\"/foo/bar\",\"@data-type\":\"vector\",\"data\":[{"
  "\"@data-type\":\"count\",\"data\":1},{\"@data-type\":\"count\",\"data\":1},{\"@data-type"
  "\":\"vector\",\"data\":[{\"@data-type\":\"string\",\"data\":\"event_1\"},{\"@data-type\""
  ":\"vector\",\"data\":[{\"@data-type\":\"integer\",\"data\":42},{\"@data-type\":\"string"
  "\",\"data\":\"test\"}]}]}]}",
  "{\"@data-type\":\"real\",\"data\":0.1}",
  "{\"@data-type\":\"real\",\"data\":1e-07}",
  "{\"@data-type\":\"real\",\"data\":-0.0}",
  "{\"@data-type\":\"real\",\"data\":1e+300}",
  "{\"@data-type\":\"real\",\"data\":NaN}",
  "{\"@data-type\":\"real\",\"data\":Infinity}",
  "{\"@data-type\":\"real\",\"data\":-Infinity}",
  "{\"@data-type\":\"real\",\"data\":5e-324}",
  "{\"@data-type\":\"real\",\"data\":",
  "{\"@data-type\":\"timestamp\",\"data\":\"",
  "{\"@data-type\":\"timespan\",\"data\":\"",
  "{\"@data-type\":\"subnet\",\"data\":\"10.0.0.0/8\"}",
  "{\"@data-type\":\"port\",\"data\":\"80/tcp\"}",
  "{\"@data-type\":\"port\",\"data\":\"53/udp\"}",
  "{\"@data-type\":\"port\",\"data\":\"8/icmp\"}",
  "{\"@data-type\":\"address\",\"data\":\"",
  "{\"@data-type\":\"string\",\"data\":\"a/b\"}",
  "{\"@data-type\":\"string\",\"data\":\"\\u00fc\\ud83d\\ude00\"}",
  "[{\"@data-type\":\"count\",\"data\":10},{\"@data-type\":\"count\",\"data\":2},",
  "{\"@data-type\":\"string\",\"data\":\"a\"}]",
  "[{\"key\":{\"@data-type\":\"count\",\"data\":2},\"value\":{\"@data-type\":\"none\"}},",
  "{\"key\":{\"@data-type\":\"count\",\"data\":1},\"value\":{\"@data-type\":\"none\"}}]",
  "{\"@data-type\":\"table\",\"data\":[{\"key\":{\"@data-type\":\"count\",\"data\":1},\"val"
  "ue\":{\"@data-type\":\"none\",\"data\":{}}},{\"key\":{\"@data-type\":\"count\",\"data\":"
  "2},\"value\":{\"@data-type\":\"none\",\"data\":{}}}]}",
  "{\"@data-type\":\"set\",\"data\":[{\"@data-type\":\"string\",\"data\":\"z\"},{\"@data-ty"
  "pe\":\"string\",\"data\":\"é\"}]}",
  "{\"type\":\"whatever\",\"topic\":\"/t\",\"@data-type\":\"count\",\"data\":1}",
  "{\"topic\":\"/t\",\"@data-type\":\"count\",\"data\":1}",
  "{\"type\":42,\"topic\":\"/t\",\"@data-type\":\"count\",\"data\":1}",
  "{\"@data-type\":\"count\",\"data\":1}",
  "{\"topic\":42,\"@data-type\":\"count\",\"data\":1}",
  "{\"topic\":null,\"@data-type\":\"count\",\"data\":1}",
  "{\"topic\":[\"/t\"],\"@data-type\":\"count\",\"data\":1}",
  "{\"topic\":\"<$>/local/data/statuses\",\"@data-type\":\"count\",\"data\":1}",
  "{\"topic\":\"\\u003c$>/x\",\"@data-type\":\"count\",\"data\":1}",
  "{\"topic\":\"<$\",\"@data-type\":\"count\",\"data\":1}",
  "{\"topic\":\"/<$>\",\"@data-type\":\"count\",\"data\":1}",
  "{\"data\":[{\"x\":1,\"data\":\"a\",\"@data-type\":\"string\"}],\"extra\":{\"deep\":[1,2,"
  "3]},",
  "{\"topic\":\"/a\",\"topic\":\"/b\",\"@data-type\":\"count\",\"data\":1,\"data\":\"x\"}",
  "{\"\\u0040data-type\":\"count\",\"d\\u0061ta\":3}",
  "[\"a\"]",
  "[1]",
  "[{\"key\":1,\"value\":{\"@data-type\":\"none\"}}]",
  "[{\"key\":{\"@data-type\":\"none\"}}]",
  "[{\"value\":{\"@data-type\":\"none\"}}]",
  "[{\"key\":{\"@data-type\":\"none\"},\"value\":{\"@data-type\":\"none\"},\"x\":1}]",
  "[{\"data\":1}]",
  "[{\"@data-type\":1,\"data\":1}]",
  "[{\"@data-type\":\"Count\",\"data\":1}]",
  "{\"topic\":\"/t\",\"data\":1}",
  "{\"topic\":\"/t\",\"@data-type\":\"count\"}",
  "{\"topic\":\"/t\"}",
  "{}",
  "{\"@data-type\":\"none\"}",
  "{\"@data-type\":\"none\",\"data\":[1,{\"x\":nan},\"y\"]}",
  "{\"@data-type\":\"none\",\"data\":null}",
  "{\"@data-type\":\"count\",\"data\":18446744073709551615}",
  "{\"@data-type\":\"count\",\"data\":0}",
  "{\"@data-type\":\"count\",\"data\":-0}",
  "{\"@data-type\":\"integer\",\"data\":-9223372036854775808}",
  "{\"@data-type\":\"integer\",\"data\":9223372036854775807}",
  "[{\"@data-type\":\"real\",\"data\":0.0},{\"@data-type\":\"real\",\"data\":-0.0}]",
  "[{\"@data-type\":\"real\",\"data\":NaN},{\"@data-type\":\"real\",\"data\":nan}]",
  "[{\"@data-type\":\"count\",\"data\":1},{\"@data-type\":\"integer\",\"data\":1}]",
  "[{\"@data-type\":\"set\",\"data\":[{\"@data-type\":\"none\"},{\"@data-type\":\"none\"}]}"
  "]",
  "{\"@data-type\":\"subnet\",\"data\":\"192.168.99.0/24\"}",
  "{\"@data-type\":\"subnet\",\"data\":\"2001:db8::/32\"}",
  "{\"@data-type\":\"subnet\",\"data\":\"0.0.0.0/0\"}",
  "{\"@data-type\":\"timestamp\",\"data\":\"1969-12-31T23:59:58.500\"}",
  "{\"@data-type\":\"timestamp\",\"data\":\"1970-01-01T00:00:00.000\"}",
  "{\"@data-type\":\"timespan\",\"data\":\"15ms\"}",
  "{\"@data-type\":\"timespan\",\"data\":\"1s\"}",
  "{\"@data-type\":\"timespan\",\"data\":\"60s\"}",
  "{\"@data-type\":\"timespan\",\"data\":\"1500ns\"}",
  "{\"@data-type\":\"timespan\",\"data\":\"3600s\"}",
  "{\"@data-type\":\"timespan\",\"data\":\"-15ms\"}",
  "{\"@data-type\":\"string\",\"data\":",
  "[\"/test\"]",
  "[\"/topic/a\", \"/topic/b\"]",
  "[\"/a\",\"/a\"]",
  "[\"\\u003c$>\"]",
  "{\"a\":1}",
  "[[\"/a\"]]",
  "[\"/a\",1]",
  "[\"/a\"] x",
  "[\"/a\"",
  "[null]",
  "{\"@data-type\":\"timestamp\",\"data\":\"1677-09-21T00:12:43.145\"}",
  "{\"a\":",
  "{\"@data-type\":\"real\",\"data\":0.",
  "{\"@data-type\":\"real\",\"data\":1e-",
  "{}[]:,\"\\ 0123456789-.eE+tfnulrsaNIiy@/u",

};

void check_failure(const json::decode_result& res) {
  auto context = json::error_context(3, res);
  FUZZ_CHECK(context.find("input #3") != std::string::npos);
  if (res.status == json::decode_status::malformed_json) {
    FUZZ_CHECK(res.line >= 1 && res.column >= 1);
    FUZZ_CHECK(json::parser_error_text(res).rfind("caf::pec::", 0) == 0);
  }
}

void check_data_message(std::string_view text) {
  std::string topic;
  data value;
  auto res = json::decode_data_message(text, topic, value);
  if (!res) {
    check_failure(res);
    return;
  }
  FUZZ_CHECK_MSG(!is_reserved_topic(topic), topic);
  auto encoded = json::encode_data_message(topic, value);
  std::string topic2;
  data value2;
  auto res2 = json::decode_data_message(encoded, topic2, value2);
  if (!res2) {
    FUZZ_CHECK_MSG(fuzz::json_may_reject(value, res2.status), encoded);
    return;
  }
  FUZZ_CHECK_MSG(topic2 == topic, topic2 + " vs " + topic);
  auto again = json::encode_data_message(topic2, value2);
  FUZZ_CHECK_MSG(again == encoded, encoded + " became " + again);
  fuzz::check_bin_encoding(value);
}

void check_value(std::string_view text) {
  data value;
  auto res = json::decode(text, value);
  if (!res) {
    check_failure(res);
    return;
  }
  fuzz::check_json_encoding(value);
}

void check_filter(std::string_view text) {
  auto filter = json::decode_filter(text);
  if (!filter) {
    FUZZ_CHECK(filter.error_value() == ec::deserialization_failed);
    return;
  }
  std::string rendered = "[";
  for (const auto& x : *filter) {
    if (rendered.size() > 1)
      rendered += ',';
    json::append_string(x, rendered);
  }
  rendered += ']';
  auto again = json::decode_filter(rendered);
  FUZZ_CHECK_MSG(again && *again == *filter, rendered);
}

bool same_result(const json::decode_result& x, const json::decode_result& y) {
  return x.status == y.status && x.detail == y.detail
         && (x.status != json::decode_status::malformed_json
             || (x.code == y.code && x.line == y.line && x.column == y.column));
}

/// Equal values that also encode alike (which tells -0.0 from 0.0).
bool same_value(const std::string& topic1, const data& x, const std::string& topic2,
                const data& y) {
  return topic1 == topic2 && x == y
         && json::encode_data_message(topic1, x) == json::encode_data_message(topic2, y);
}

// The single pass must take only what the general path accepts, decode it alike, and leave
// everything else to the general path, so that the public functions answer exactly as the
// general path alone.
void check_paths(std::string_view text, size_t max_depth) {
  auto why = [&](std::string_view what) {
    return std::string{what} + " (max_depth " + std::to_string(max_depth) + "): "
           + std::string{text};
  };
  std::string general_topic;
  data general_value;
  std::vector<json::detail::token> tape;
  auto general = json::detail::general_data_message(text, general_topic, general_value,
                                                    max_depth, tape);
  std::string topic;
  data value;
  std::vector<data> stack;
  if (json::detail::fast_data_message(text, topic, value, max_depth, stack)) {
    FUZZ_CHECK_MSG(general, why("the single pass took a message the general path rejects"));
    FUZZ_CHECK_MSG(same_value(topic, value, general_topic, general_value),
                   why("the paths decoded different messages"));
  }
  auto res = json::decode_data_message(text, topic, value, max_depth);
  FUZZ_CHECK_MSG(same_result(res, general), why("the paths answered differently"));
  if (res && general)
    FUZZ_CHECK_MSG(same_value(topic, value, general_topic, general_value),
                   why("the paths decoded different messages"));
  data value1;
  data value2;
  auto res1 = json::decode(text, value1, max_depth);
  auto res2 = json::detail::general_decode(text, value2, max_depth);
  FUZZ_CHECK_MSG(same_result(res1, res2), why("decode() answered differently"));
  if (res1 && res2)
    FUZZ_CHECK_MSG(same_value({}, value1, {}, value2), why("decode() decoded differently"));
  auto filter1 = json::decode_filter(text, max_depth);
  auto filter2 = json::detail::general_filter(text, max_depth);
  FUZZ_CHECK_MSG(filter1.has_value() == filter2.has_value(), why("filters differ"));
  if (filter1 && filter2)
    FUZZ_CHECK_MSG(*filter1 == *filter2, why("filters differ"));
  else if (!filter1 && !filter2)
    FUZZ_CHECK_MSG(filter1.error_value().message() == filter2.error_value().message(),
                   why("filter errors differ"));
}

// One decoder for a whole session: its reused token tape must never leak from one message
// into the next.
void check_session(std::string_view text) {
  constexpr size_t max_messages = 16;
  json::decoder session;
  auto one = [&session](std::string_view msg) {
    std::string topic, topic2;
    data value, value2;
    auto res = session.data_message(msg, topic, value);
    auto res2 = json::decode_data_message(msg, topic2, value2);
    FUZZ_CHECK_MSG(same_result(res, res2), std::string{msg});
    if (res)
      FUZZ_CHECK_MSG(topic == topic2 && value == value2, std::string{msg});
  };
  size_t n = 0;
  for (size_t pos = 0; pos <= text.size() && n < max_messages; ++n) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    one(text.substr(pos, end - pos));
    pos = end + 1;
  }
  one(text);
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  std::vector<seed> result;
  size_t n = 0;
  std::string session;
  for (auto text : test_vectors) {
    result.push_back({"test-vector-" + std::to_string(n++), text});
    if (n <= 8)
      session.append(text).append("\n");
  }
  // Messages of one session, one per line (check_session()).
  result.push_back({"session", session});
  return result;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = fuzz::as_text(data, size);
  check_data_message(text);
  check_value(text);
  check_filter(text);
  check_session(text);
  check_paths(text, json::default_max_depth);
  if (!text.empty())
    check_paths(text, static_cast<uint8_t>(text.back()) % 8); // small limits, 0 included
  return 0;
}
