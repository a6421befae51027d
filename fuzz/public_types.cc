// Fuzz target: the text parsers of the public types and small vocabularies, reached from
// JSON values, config files and command lines. Input: [parser][text...] with parser (mod 9):
//   address, subnet, port, endpoint_id, timestamp (JSON grammar), timespan (JSON grammar),
//   peer address (tools/address), error code name, overflow policy name.
//
// Checks: whatever parses prints to text that parses to the same value (timestamps print
// milliseconds, so they come back floored to the millisecond), and printing is a fixed
// point.

#include "fuzz_common.hh"

#include "broker/address.hh"
#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/internal/codec/json.hh"
#include "broker/overflow_policy.hh"
#include "broker/port.hh"
#include "broker/subnet.hh"
#include "broker/time.hh"

#include "address.hh"

using namespace broker;
namespace json = broker::internal::json;

namespace {

enum class parser : uint8_t {
  address,
  subnet,
  port,
  endpoint_id,
  timestamp,
  timespan,
  peer_uri,
  error_code,
  overflow_policy,
  count,
};

// parse(print(parse(text))) == parse(text) and print is a fixed point.
template <class Parse>
void round_trip(std::string_view text, Parse parse) {
  auto x = parse(text);
  if (!x)
    return;
  auto printed = to_string(*x);
  auto y = parse(printed);
  FUZZ_CHECK_MSG(y, "cannot parse our own " + printed);
  FUZZ_CHECK_MSG(*y == *x, printed);
  FUZZ_CHECK(to_string(*y) == printed);
}

void check_timestamp(std::string_view text) {
  auto ts = json::parse_timestamp(text);
  if (!ts)
    return;
  auto printed = to_string(*ts);
  auto back = json::parse_timestamp(printed);
  FUZZ_CHECK_MSG(back, "cannot parse our own " + printed);
  constexpr int64_t ns_per_ms = 1'000'000;
  auto ns = ts->time_since_epoch().count();
  auto rem = ((ns % ns_per_ms) + ns_per_ms) % ns_per_ms;
  FUZZ_CHECK_MSG(back->time_since_epoch().count() == ns - rem, printed);
}

void check_peer_uri(std::string_view text) {
  // The rules vary with the text, so that every combination gets fuzzed.
  broker_tools::address_rules rules;
  if (text.size() & 1)
    rules.default_port = 9999;
  rules.allow_empty_host = text.size() & 2;
  rules.allow_port_zero = text.size() & 4;
  auto addr = broker_tools::parse_address(text, rules);
  if (!addr) {
    FUZZ_CHECK(addr.error_value() == ec::invalid_config);
    return;
  }
  FUZZ_CHECK(addr->port != 0 || rules.allow_port_zero);
  FUZZ_CHECK(!addr->host.empty() || rules.allow_empty_host);
  // Brackets as an IPv6 address needs them, and for a host that itself starts with one.
  auto bracket = addr->host.find(':') != std::string::npos
                 || (!addr->host.empty() && addr->host.front() == '[');
  auto host = bracket ? "[" + addr->host + "]" : addr->host;
  // Broker's URI form always parses back. The bare form does too, unless the host holds
  // "://", which the parser then takes for an unsupported scheme: such a host is never
  // valid, so rejecting it is fine (fuzz/corpus/public_types/regress-scheme-inside-brackets).
  auto port = ":" + std::to_string(addr->port);
  for (auto printed : {"tcp://" + host + port, host + port}) {
    if (printed.front() != 't' && addr->host.find("://") != std::string::npos)
      continue;
    auto again = broker_tools::parse_address(printed, rules);
    FUZZ_CHECK_MSG(again && again->host == addr->host && again->port == addr->port, printed);
  }
}

void check_error_code(std::string_view text) {
  ec code;
  if (!from_string(text, code))
    return;
  FUZZ_CHECK(to_string(code) == text);
}

void check_overflow_policy(std::string_view text) {
  auto policy = parse_overflow_policy(text);
  if (!policy)
    return;
  auto again = parse_overflow_policy(to_string(*policy));
  FUZZ_CHECK(again && *again == *policy);
}

std::string with(parser p, std::string_view text) {
  return static_cast<char>(p) + std::string{text};
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  return {
    {"address-v4", with(parser::address, "10.0.0.1")},
    {"address-v6", with(parser::address, "2001:db8::")},
    {"address-mapped", with(parser::address, "::ffff:10.0.0.1")},
    {"subnet-v4", with(parser::subnet, "255.255.255.0/24")},
    {"subnet-v6", with(parser::subnet, "2001:db8::/32")},
    {"port-tcp", with(parser::port, "8080/tcp")},
    {"port-unknown", with(parser::port, "0/?")},
    {"port-icmp", with(parser::port, "8/icmp")},
    {"endpoint-id", with(parser::endpoint_id, "925c9110-5b87-57d9-9d80-b65568e87a44")},
    {"timestamp", with(parser::timestamp, "2022-04-10T07:00:00.1234567890")},
    {"timestamp-zone", with(parser::timestamp, "2022-04-10T07:00:00+02:30")},
    {"timespan-ms", with(parser::timespan, "15ms")},
    {"timespan-fraction", with(parser::timespan, "-1.5min")},
    {"peer-uri", with(parser::peer_uri, "tcp://127.0.0.1:9999")},
    {"peer-uri-v6", with(parser::peer_uri, "<tcp://[::1]:9999>")},
    {"error-code", with(parser::error_code, "peer_incompatible")},
    {"overflow-policy", with(parser::overflow_policy, "drop-oldest")},
  };
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1)
    return 0;
  auto text = fuzz::as_text(data + 1, size - 1);
  switch (static_cast<parser>(data[0] % static_cast<uint8_t>(parser::count))) {
    case parser::address:
      round_trip(text, [](std::string_view x) { return address::parse(x); });
      break;
    case parser::subnet:
      round_trip(text, [](std::string_view x) { return subnet::parse(x); });
      break;
    case parser::port:
      round_trip(text, [](std::string_view x) { return port::parse(x); });
      break;
    case parser::endpoint_id:
      round_trip(text, [](std::string_view x) { return endpoint_id::parse(x); });
      break;
    case parser::timestamp:
      check_timestamp(text);
      break;
    case parser::timespan:
      round_trip(text, [](std::string_view x) { return json::parse_timespan(x); });
      break;
    case parser::peer_uri:
      check_peer_uri(text);
      break;
    case parser::error_code:
      check_error_code(text);
      break;
    case parser::overflow_policy:
      check_overflow_policy(text);
      break;
    case parser::count:
      break;
  }
  return 0;
}
