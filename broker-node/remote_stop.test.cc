#include "remote_stop.hh"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace broker_node;

namespace {

using clock = stop_handler::clock;

broker::data_message local_stop(std::string topic) {
  return broker::data_message{broker::topic{std::move(topic)}, broker::data{std::string{"stop"}}};
}

/// A "stop" as a peer hands it over: with a time to live, and with an origin if `origin`.
broker::data_message peer_stop(std::string topic, std::optional<broker::endpoint_id> origin,
                               uint8_t hops = 0) {
  broker::route_info route;
  route.ttl = 15;
  if (origin) {
    route.origin = *origin;
    route.hops = hops;
  }
  return broker::data_message{new broker::message_impl(std::move(topic),
                                                       broker::data{std::string{"stop"}},
                                                       std::string{}, route)};
}

struct captured_log {
  std::vector<std::string> lines;
  stop_handler::log_fn fn() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("is_stop on a received message reads its bytes", "[node][stop]") {
  auto received = [](std::string bytes) {
    return broker::data_message{
      new broker::message_impl("/t", std::move(bytes), broker::route_info{},
                               broker::message_kind::data)};
  };
  CHECK(is_stop(received(std::string{"\x05\x04stop", 6})));
  CHECK_FALSE(is_stop(received(std::string{"\x05\x04stoq", 6})));
  CHECK_FALSE(is_stop(received(std::string{"\x05\x05stops", 7})));
  CHECK(is_stop(received(std::string{"\x05\x84\x00stop", 7}))); // A longer length form.
  CHECK_FALSE(is_stop(received(std::string{"\x0e\x01\x05\x04stop", 8})));
  CHECK(is_stop(broker::data_message{"/t", broker::data{std::string{"stop"}}}));
  CHECK_FALSE(is_stop(broker::data_message{"/t", broker::data{broker::count{1}}}));
}

TEST_CASE("is_stop: only the string value stop", "[node][stop]") {
  CHECK(is_stop(broker::data{std::string{"stop"}}));
  CHECK_FALSE(is_stop(broker::data{std::string{"stop "}}));
  CHECK_FALSE(is_stop(broker::data{std::string{"STOP"}}));
  CHECK_FALSE(is_stop(broker::data{std::string{}}));
  CHECK_FALSE(is_stop(broker::data{broker::count{0}}));
  CHECK_FALSE(is_stop(broker::vector_builder{}.add(std::string{"stop"}).build()));
}

TEST_CASE("sender_text says what the node knows of the sender", "[node][stop]") {
  broker::route_info local;
  CHECK(contains(sender_text(local), "this node"));
  broker::route_info broker_peer;
  broker_peer.ttl = 16;
  CHECK(contains(sender_text(broker_peer), "does not name the publisher"));
  broker::route_info ours;
  ours.ttl = 14;
  ours.origin = broker::endpoint_id::random();
  ours.hops = 2;
  auto text = sender_text(ours);
  CHECK(contains(text, "node " + to_string(ours.origin)));
  CHECK(contains(text, "relayed 2 times"));
}

TEST_CASE("with exits, stop ends the mode and the line names topic and sender",
          "[node][stop]") {
  captured_log log;
  stop_handler stops{true, "--exit-on-stop", log.fn()};
  auto origin = broker::endpoint_id::random();
  CHECK(stops.on_stop(peer_stop("/zeek/logs/notice", origin, 1)));
  REQUIRE(log.lines.size() == 1);
  CHECK(contains(log.lines[0], "received \"stop\" on topic /zeek/logs/notice"));
  CHECK(contains(log.lines[0], to_string(origin)));
  CHECK(contains(log.lines[0], "exiting (--exit-on-stop)"));
  CHECK(stops.ignored() == 0);
}

TEST_CASE("without exits, stop is ignored and logged once per interval", "[node][stop]") {
  captured_log log;
  stop_handler stops{false, "--exit-on-stop", log.fn()};
  auto t0 = clock::now();
  CHECK_FALSE(stops.on_stop(local_stop("/zeek/a"), t0));
  REQUIRE(log.lines.size() == 1);
  CHECK(contains(log.lines[0], "ignored \"stop\" on topic /zeek/a from this node"));
  CHECK(contains(log.lines[0], "only with --exit-on-stop"));
  CHECK_FALSE(contains(log.lines[0], "since the last"));
  // A flood within the interval writes nothing more.
  for (int i = 1; i <= 1000; ++i)
    CHECK_FALSE(stops.on_stop(peer_stop("/zeek/b", std::nullopt), t0 + std::chrono::milliseconds{i}));
  CHECK(log.lines.size() == 1);
  CHECK(stops.ignored() == 1001);
  // Just before the interval ends: still nothing.
  CHECK_FALSE(stops.on_stop(local_stop("/zeek/c"), t0 + ignored_log_interval - std::chrono::milliseconds{1}));
  CHECK(log.lines.size() == 1);
  // After it, one line that counts what was suppressed (and this one).
  CHECK_FALSE(stops.on_stop(local_stop("/zeek/d"), t0 + ignored_log_interval));
  REQUIRE(log.lines.size() == 2);
  CHECK(contains(log.lines[1], "on topic /zeek/d"));
  CHECK(contains(log.lines[1], "(1002 ignored since the last such line)"));
  // The next interval starts at that line.
  CHECK_FALSE(stops.on_stop(local_stop("/zeek/e"), t0 + ignored_log_interval * 2 - std::chrono::seconds{1}));
  CHECK(log.lines.size() == 2);
  CHECK_FALSE(stops.on_stop(local_stop("/zeek/f"), t0 + ignored_log_interval * 2));
  REQUIRE(log.lines.size() == 3);
  CHECK(contains(log.lines[2], "(2 ignored since the last such line)"));
  CHECK(stops.ignored() == 1005);
}

TEST_CASE("a hostile topic cannot break the log line", "[node][stop]") {
  captured_log log;
  stop_handler stops{false, "--exit-on-stop", log.fn()};
  stops.on_stop(local_stop("/a\nfake line\x01"));
  REQUIRE(log.lines.size() == 1);
  CHECK_FALSE(contains(log.lines[0], "\n"));
  CHECK(contains(log.lines[0], "/a\\nfake line\\x01"));
}
