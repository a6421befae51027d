// broker-json-bench: cost of decoding a WebSocket client's data message (a small harness,
// no Catch2), the JSON half of a node's ingest cost (doc/performance.md).
//
// Shapes:
//   string  {"type":"data-message","topic":"/fanout/data","@data-type":"string",
//           "data":"<64 x>"}: what bench/fanout_cost.py's ingest section publishes;
//   event   a Zeek event [1, 1, ["event_1", [42, "test"]]] in the v1 encoding;
//   conn    a Zeek event carrying a connection record, one value of nearly every type:
//           timestamps, addresses, ports, timespan, enum, set, table, reals, unset fields.
//
// Usage: broker-json-bench [--reps R] [--fixed SHAPE N] [--fixed-encode SHAPE N]
//   Prints ns per decoded and per encoded message for each shape, the median of R runs of
//   1 000 000 (encoding as a node does for its WebSocket subscribers, into a fresh string).
//   --fixed decodes SHAPE exactly N times in run_decodes(), for
//   `valgrind --tool=callgrind --toggle-collect='*run_decodes*'` (instructions per message
//   = Ir / N); --fixed-encode encodes it N times in run_encodes() (`'*run_encodes*'`).
//
// The file sits beside the unit it measures; it is compiled only where
// BROKER_JSON_BENCH_PROGRAM is defined (bench/CMakeLists.txt).

#ifdef BROKER_JSON_BENCH_PROGRAM

#include "broker/internal/codec/json.hh"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace broker;
namespace json = broker::internal::json;

namespace {

std::string shape_text(const std::string& name) {
  if (name == "conn")
    return R"({"type":"data-message","topic":"/zeek/event/conn","@data-type":"vector","data":[)"
           R"({"@data-type":"count","data":1},{"@data-type":"count","data":1},)"
           R"({"@data-type":"vector","data":[)"
           R"({"@data-type":"string","data":"connection_state_remove"},)"
           R"({"@data-type":"vector","data":[{"@data-type":"vector","data":[)"
           R"({"@data-type":"timestamp","data":"2023-04-18T14:13:14.123"},)"
           R"({"@data-type":"string","data":"CHhAvVGS1DHFjwGM9"},)"
           R"({"@data-type":"vector","data":[)"
           R"({"@data-type":"address","data":"192.168.1.102"},)"
           R"({"@data-type":"port","data":"68/udp"},)"
           R"({"@data-type":"address","data":"2001:db8::1"},)"
           R"({"@data-type":"port","data":"443/tcp"}]},)"
           R"({"@data-type":"enum-value","data":"tcp"},)"
           R"({"@data-type":"timespan","data":"1.5s"},)"
           R"({"@data-type":"count","data":1458},{"@data-type":"count","data":98234},)"
           R"({"@data-type":"real","data":0.25},{"@data-type":"boolean","data":true},)"
           R"({"@data-type":"none","data":{}},{"@data-type":"integer","data":-3},)"
           R"({"@data-type":"set","data":[{"@data-type":"string","data":"http"},)"
           R"({"@data-type":"string","data":"ssl"}]},)"
           R"({"@data-type":"table","data":[{"key":{"@data-type":"string","data":"k"},)"
           R"("value":{"@data-type":"count","data":7}}]}]}]}]}]})";
  if (name == "event")
    return R"({"type":"data-message","topic":"/zeek/event/x","@data-type":"vector","data":[)"
           R"({"@data-type":"count","data":1},{"@data-type":"count","data":1},)"
           R"({"@data-type":"vector","data":[{"@data-type":"string","data":"event_1"},)"
           R"({"@data-type":"vector","data":[{"@data-type":"integer","data":42},)"
           R"({"@data-type":"string","data":"test"}]}]}]})";
  return R"({"type":"data-message","topic":"/fanout/data","@data-type":"string","data":")"
         + std::string(64, 'x') + R"("})";
}

__attribute__((noinline)) size_t run_decodes(const std::string& text, size_t n) {
  json::decoder dec;
  std::string topic;
  data value;
  size_t ok = 0;
  for (size_t i = 0; i < n; ++i)
    ok += dec.data_message(text, topic, value, 128) ? 1 : 0;
  return ok;
}

/// Encodes the message of `text` `n` times as a node does for its WebSocket subscribers
/// (message_impl::ws_frame(): a fresh string with room for the frame header, then the
/// JSON); returns the total size, so that nothing is optimized away.
__attribute__((noinline)) size_t run_encodes(const std::string& text, size_t n) {
  std::string topic;
  data value;
  if (!json::decode_data_message(text, topic, value)) {
    std::fprintf(stderr, "decoding failed\n");
    std::exit(1);
  }
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    std::string out(10, '\0');
    json::encode_data_message(topic, value, out);
    total += out.size();
  }
  return total;
}

/// Median ns per message of `reps` runs of `n` decodes (or encodes).
double measure(const std::string& text, size_t reps, size_t n, bool encode) {
  std::vector<double> xs;
  for (size_t r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (encode ? run_encodes(text, n) == 0 : run_decodes(text, n) != n) {
      std::fprintf(stderr, "decoding failed\n");
      std::exit(1);
    }
    auto t1 = std::chrono::steady_clock::now();
    xs.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  size_t reps = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::strtoul(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--fixed") == 0 && i + 2 < argc) {
      auto text = shape_text(argv[i + 1]);
      auto n = std::strtoul(argv[i + 2], nullptr, 10);
      std::printf("decoded %zu of %zu\n", run_decodes(text, n), n);
      return 0;
    } else if (std::strcmp(argv[i], "--fixed-encode") == 0 && i + 2 < argc) {
      auto text = shape_text(argv[i + 1]);
      auto n = std::strtoul(argv[i + 2], nullptr, 10);
      std::printf("encoded %zu bytes\n", run_encodes(text, n));
      return 0;
    } else {
      std::fprintf(stderr, "usage: broker-json-bench [--reps R] [--fixed SHAPE N] "
                           "[--fixed-encode SHAPE N]\n  SHAPE: string, event or conn\n");
      return 1;
    }
  }
  for (auto name : {"string", "event", "conn"}) {
    auto text = shape_text(name);
    std::printf("%-7s %4zu bytes %8.1f ns/message decode %8.1f ns/message encode\n", name,
                text.size(), measure(text, reps, 1000000, false),
                measure(text, reps, 1000000, true));
  }
  return 0;
}

#endif // BROKER_JSON_BENCH_PROGRAM
