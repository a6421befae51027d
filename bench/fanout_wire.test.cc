// Tests of fanout-drive's parsers (fanout_wire.hh) and its payload parsing: whole frames,
// frames cut at every byte, malformed and hostile input. A parser must never read past what
// it was given, report a payload twice, or accept garbage as a payload.

#include "fanout_wire.hh"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace fanout;

namespace {

/// Feeds `input` in pieces of at most `step` bytes, keeping the unconsumed tail like the
/// driver does; returns the payloads seen.
std::vector<std::string> feed_in_steps(wire& w, const std::string& input, size_t step,
                                       std::string* out = nullptr) {
  std::vector<std::string> seen;
  std::string pending, replies;
  for (size_t at = 0; at < input.size(); at += step) {
    pending += input.substr(at, step);
    auto used = w.feed(pending.data(), pending.size(), replies,
                       [&](std::string_view p) { seen.emplace_back(p); });
    REQUIRE(used <= pending.size());
    pending.erase(0, used);
    if (w.event == wire_event::failed)
      break;
  }
  if (out)
    *out = replies;
  return seen;
}

std::string payload(uint64_t seq) {
  return make_payload(stamp{123456789, seq, kind::throughput, false});
}

std::string ws_server_frame(const std::string& body, uint8_t opcode = 0x1) {
  std::string f;
  f.push_back(static_cast<char>(0x80 | opcode));
  if (body.size() < 126) {
    f.push_back(static_cast<char>(body.size()));
  } else {
    f.push_back(126);
    f.push_back(static_cast<char>(body.size() >> 8));
    f.push_back(static_cast<char>(body.size() & 0xFF));
  }
  return f + body;
}

std::string ws_data(uint64_t seq) {
  return ws_server_frame("{\"type\":\"data-message\",\"topic\":\"/fanout/data\","
                         "\"@data-type\":\"string\",\"data\":\""
                         + payload(seq) + "\"}");
}

const std::string upgrade = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                            "Connection: Upgrade\r\n\r\n";
const std::string ack = ws_server_frame("{\"type\":\"ack\",\"endpoint\":\"x\",\"version\":\"1\"}");

} // namespace

TEST_CASE("ws: upgrade, ack and data frames at every cut", "[fanout-wire]") {
  auto input = upgrade + ack + ws_data(1) + ws_data(2) + ws_data(3);
  for (size_t step = 1; step <= input.size(); ++step) {
    wire w{protocol::ws, true, false, "h:1"};
    std::string replies;
    auto seen = feed_in_steps(w, input, step, &replies);
    REQUIRE(w.event == wire_event::ready);
    REQUIRE(seen == std::vector<std::string>{payload(1), payload(2), payload(3)});
    // The filter went out right after the upgrade, as one masked text frame.
    REQUIRE(replies.size() == 2 + 4 + std::string{"[\"/fanout/\"]"}.size());
    REQUIRE(static_cast<uint8_t>(replies[0]) == 0x81);
  }
}

TEST_CASE("ws: refusals and hostile frames fail", "[fanout-wire]") {
  SECTION("refused upgrade") {
    wire w{protocol::ws, true, false, "h:1"};
    feed_in_steps(w, "HTTP/1.1 403 Forbidden\r\n\r\n", 64);
    REQUIRE(w.event == wire_event::failed);
    REQUIRE(w.error.find("403") != std::string::npos);
  }
  SECTION("no end of the response header") {
    wire w{protocol::ws, true, false, "h:1"};
    feed_in_steps(w, std::string(20000, 'x'), 20000);
    REQUIRE(w.event == wire_event::failed);
  }
  SECTION("something else instead of the ack") {
    wire w{protocol::ws, true, false, "h:1"};
    feed_in_steps(w, upgrade + ws_data(1), 4096);
    REQUIRE(w.event == wire_event::failed);
  }
  SECTION("an error frame after the ack") {
    wire w{protocol::ws, true, false, "h:1"};
    auto seen = feed_in_steps(w, upgrade + ack + ws_server_frame("{\"type\":\"error\"}"), 4096);
    REQUIRE(w.event == wire_event::failed);
    REQUIRE(seen.empty());
  }
  SECTION("a data-message whose payload is cut short") {
    wire w{protocol::ws, true, false, "h:1"};
    auto seen = feed_in_steps(w, upgrade + ack + ws_server_frame("{\"data\":\"123\"}"), 4096);
    REQUIRE(w.event == wire_event::failed);
    REQUIRE(seen.empty());
  }
  SECTION("a later frame without the key at the learned offset is parsed again") {
    wire w{protocol::ws, true, false, "h:1"};
    auto shifted = ws_server_frame("{\"type\":\"data-message\",\"topic\":\"/fanout/datax\","
                                   "\"@data-type\":\"string\",\"data\":\""
                                   + payload(2) + "\"}");
    auto seen = feed_in_steps(w, upgrade + ack + ws_data(1) + shifted, 4096);
    REQUIRE(w.event == wire_event::ready);
    REQUIRE(seen == std::vector<std::string>{payload(1), payload(2)});
  }
  SECTION("close frame") {
    wire w{protocol::ws, true, false, "h:1"};
    feed_in_steps(w, upgrade + ack + ws_server_frame("", 0x8), 4096);
    REQUIRE(w.event == wire_event::failed);
  }
  SECTION("a huge announced length waits for more instead of reading past the end") {
    wire w{protocol::ws, true, false, "h:1"};
    std::string frame = "\x81\x7f\xff\xff\xff\xff\xff\xff\xff\xff";
    auto seen = feed_in_steps(w, upgrade + ack + frame + "abc", 4096);
    REQUIRE(w.event == wire_event::ready);
    REQUIRE(seen.empty());
  }
  SECTION("a ping is answered with a pong") {
    wire w{protocol::ws, true, false, "h:1"};
    std::string replies;
    feed_in_steps(w, upgrade + ack + ws_server_frame("hi", 0x9), 4096, &replies);
    REQUIRE(replies.size() >= 8);
    auto pong = replies.substr(replies.size() - 8);
    REQUIRE(static_cast<uint8_t>(pong[0]) == 0x8A);
    REQUIRE(static_cast<uint8_t>(pong[1]) == (0x80 | 2));
    REQUIRE(static_cast<char>(pong[6] ^ pong[2]) == 'h');
    REQUIRE(static_cast<char>(pong[7] ^ pong[3]) == 'i');
  }
}

TEST_CASE("redis: subscribe confirmations and messages at every cut", "[fanout-wire]") {
  auto msg = [](uint64_t seq) {
    return "*4\r\n$8\r\npmessage\r\n$9\r\n/fanout/*\r\n$12\r\n/fanout/data\r\n$64\r\n"
           + payload(seq) + "\r\n";
  };
  auto input = "*3\r\n$10\r\npsubscribe\r\n$9\r\n/fanout/*\r\n:1\r\n" + msg(1) + msg(2)
               + "*3\r\n$7\r\nmessage\r\n$12\r\n/fanout/data\r\n$64\r\n" + payload(3) + "\r\n";
  for (size_t step = 1; step <= input.size(); ++step) {
    wire w{protocol::redis, true, true, "h:1"};
    auto seen = feed_in_steps(w, input, step);
    REQUIRE(w.event == wire_event::ready);
    REQUIRE(seen == std::vector<std::string>{payload(1), payload(2), payload(3)});
  }
}

TEST_CASE("redis: errors and malformed replies fail", "[fanout-wire]") {
  for (std::string bad : {"-ERR no\r\n", "?what\r\n", "*9\r\n", "*2\r\n$x\r\n",
                          "*2\r\n$-5\r\nab\r\n", "*2\r\n+ok\r\n+ok\r\n",
                          "*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n",
                          "*2\r\n$99999999999999999999999\r\nab\r\n",
                          "*99999999999999999999999\r\n"}) {
    wire w{protocol::redis, true, true, "h:1"};
    auto seen = feed_in_steps(w, bad, 4096);
    INFO(bad);
    REQUIRE(w.event == wire_event::failed);
    REQUIRE(seen.empty());
  }
  SECTION("the publisher is ready at +PONG and skips integer replies") {
    wire w{protocol::redis, false, false, "h:1"};
    feed_in_steps(w, "+PONG\r\n:3\r\n:3\r\n", 1);
    REQUIRE(w.event == wire_event::ready);
  }
}

TEST_CASE("nats: MSG, PING and PONG at every cut", "[fanout-wire]") {
  auto msg = [](uint64_t seq) { return "MSG fanout.data 1 64\r\n" + payload(seq) + "\r\n"; };
  auto input = "INFO {\"server_id\":\"x\"}\r\nPONG\r\n" + msg(1) + "PING\r\n" + msg(2);
  for (size_t step = 1; step <= input.size(); ++step) {
    wire w{protocol::nats, true, false, "h:1"};
    std::string replies;
    auto seen = feed_in_steps(w, input, step, &replies);
    REQUIRE(w.event == wire_event::ready);
    REQUIRE(seen == std::vector<std::string>{payload(1), payload(2)});
    REQUIRE(replies == "PONG\r\n");
  }
  SECTION("hostile MSG lengths fail or wait, never read past the end") {
    for (std::string bad : {"MSG a 1 x\r\nabc\r\n", "MSG a 1 99999999999999999999999\r\nab\r\n",
                            "MSG a 1 18446744073709551615\r\nab\r\n"}) {
      wire w{protocol::nats, true, false, "h:1"};
      auto seen = feed_in_steps(w, bad, 4096);
      INFO(bad);
      REQUIRE(w.event == wire_event::failed);
      REQUIRE(seen.empty());
    }
    wire w{protocol::nats, true, false, "h:1"};
    auto seen = feed_in_steps(w, "MSG a 1 1000000\r\nab\r\n", 4096);
    REQUIRE(w.event == wire_event::none); // Waits for the rest.
    REQUIRE(seen.empty());
  }
  SECTION("-ERR fails") {
    wire w{protocol::nats, true, false, "h:1"};
    feed_in_steps(w, "-ERR 'Authorization Violation'\r\n", 4096);
    REQUIRE(w.event == wire_event::failed);
  }
}

TEST_CASE("publications have the wire format each server expects", "[fanout-wire]") {
  auto p = payload(7);
  SECTION("redis") {
    wire w{protocol::redis, false, false, "h:1"};
    std::string out;
    w.publish(p.data(), out);
    REQUIRE(out == "*3\r\n$7\r\nPUBLISH\r\n$12\r\n/fanout/data\r\n$64\r\n" + p + "\r\n");
  }
  SECTION("nats") {
    wire w{protocol::nats, false, false, "h:1"};
    std::string out;
    w.publish(p.data(), out);
    REQUIRE(out == "PUB fanout.data 64\r\n" + p + "\r\n");
  }
  SECTION("ws: a masked text frame whose unmasked body is the data-message") {
    wire w{protocol::ws, false, false, "h:1"};
    std::string out;
    w.publish(p.data(), out);
    REQUIRE(static_cast<uint8_t>(out[0]) == 0x81);
    REQUIRE(static_cast<uint8_t>(out[1]) == (0x80 | 126));
    size_t len = (static_cast<uint8_t>(out[2]) << 8) | static_cast<uint8_t>(out[3]);
    REQUIRE(out.size() == 4 + 4 + len);
    std::string body;
    for (size_t i = 0; i < len; ++i)
      body.push_back(static_cast<char>(out[8 + i] ^ out[4 + i % 4]));
    REQUIRE(body == "{\"type\":\"data-message\",\"topic\":\"/fanout/data\","
                    "\"@data-type\":\"string\",\"data\":\"" + p + "\"}");
  }
}

TEST_CASE("fast_parse_payload agrees with parse_payload", "[fanout-wire]") {
  uint64_t x = 88172645463325252ull; // xorshift64
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 200000; ++i) {
    stamp s{next() % 10'000'000'000'000'000'000ull, next() % 1'000'000'000'000ull,
            kind::latency, (i & 1) != 0};
    auto p = make_payload(s);
    if (i % 2 == 1) // Hostile: one byte anywhere in the numbers replaced by anything.
      p[next() % 33] = static_cast<char>(next() & 0xFF);
    stamp a, b;
    bool ok_a = parse_payload(p, a);
    bool ok_b = fast_parse_payload(p, b);
    INFO(p);
    REQUIRE(ok_a == ok_b);
    uint64_t seq = 0;
    kind what = kind::probe;
    if (ok_a) {
      REQUIRE(fast_parse_seq(p, seq, what));
      REQUIRE(seq == a.seq);
      REQUIRE(what == a.what);
      REQUIRE(a.sent_ns == b.sent_ns);
      REQUIRE(a.seq == b.seq);
      REQUIRE(a.what == b.what);
      REQUIRE(a.ack == b.ack);
    }
  }
  stamp s;
  REQUIRE_FALSE(fast_parse_payload("", s));
  REQUIRE_FALSE(fast_parse_payload(std::string(35, '1'), s));
}
