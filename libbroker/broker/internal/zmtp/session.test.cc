#include "broker/internal/zmtp/session.hh"

#include "broker/internal/zmtp/zmtp.test.hh"

#include <catch2/catch.hpp>

#include <string>

// The NULL mechanism end to end between two sessions, the byte examples of
// doc/protocol/zeromq.md §4 and §7, and what a session does with hostile input.

using namespace broker::internal::zmtp;
using namespace broker::internal::zmtp::test;
using namespace std::literals;

namespace {

using kind = event::kind;

// The forwarder's side of a node's XSUB connection: our XPUB accepted it.
link forwarder_xpub_link(session_config node = null_config(socket_type::xsub, false)) {
  return link{null_config(socket_type::xpub, true), std::move(node)};
}

// Zeek's 4-frame event: topic, sender node id, format, payload.
const std::string_view zeek_event[] = {"zeek/cluster/nodeid/w1/", "w1-1234", "broker-bin-v1",
                                       "\x01\x02\x03\x00\xff"sv};

std::string greeting_of_peer(std::string_view mechanism = "NULL", uint8_t major = 3,
                             uint8_t minor = 1) {
  auto bytes = make_greeting(mechanism::null, false);
  bytes[10] = static_cast<char>(major);
  bytes[11] = static_cast<char>(minor);
  bytes.replace(12, 20, 20, '\0');
  bytes.replace(12, mechanism.size(), mechanism);
  return bytes;
}

std::string ready_of(std::string_view type) {
  std::string md;
  append_property(md, "Socket-Type", type);
  std::string out;
  append_command(out, "READY", md);
  return out;
}

// A session of `type` that has completed the NULL handshake with a scripted peer.
session handshaken(socket_type type, std::string_view peer_type, uint8_t minor = 1) {
  session s{null_config(type, true)};
  s.take_output();
  auto events = s.feed(greeting_of_peer("NULL", 3, minor) + ready_of(peer_type));
  REQUIRE(kinds(events) == std::vector{kind::ready});
  s.take_output();
  return s;
}

} // namespace

TEST_CASE("a NULL handshake sends greeting then READY and reports the peer", "[zmtp]") {
  session s{null_config(socket_type::xpub, true)};
  CHECK(s.take_output() == make_greeting(mechanism::null, false));
  auto events = s.feed(greeting_of_peer());
  CHECK(events.empty());
  CHECK(s.take_output() == ready_of("XPUB"));
  std::string md;
  append_property(md, "Socket-Type", "XSUB");
  append_property(md, "Identity", "w1");
  std::string ready;
  append_command(ready, "READY", md);
  events = s.feed(ready);
  REQUIRE(kinds(events) == std::vector{kind::ready});
  CHECK(s.ready());
  CHECK(s.peer().type == socket_type::xsub);
  CHECK(s.peer().identity == "w1");
  CHECK(s.peer().minor == 1);
  CHECK(s.peer().metadata.size() == 2);
}

TEST_CASE("both sides of a NULL link become ready, fed in any chunking", "[zmtp]") {
  for (size_t chunk : {1, 2, 7, 64, 1000}) {
    session xpub{null_config(socket_type::xpub, true)};
    session xsub{null_config(socket_type::xsub, false)};
    std::vector<event> xpub_events;
    std::vector<event> xsub_events;
    for (int round = 0; round < 4; ++round) {
      auto a = xpub.take_output();
      for (size_t i = 0; i < a.size(); i += chunk)
        xsub.feed(std::string_view{a}.substr(i, chunk), xsub_events);
      auto b = xsub.take_output();
      for (size_t i = 0; i < b.size(); i += chunk)
        xpub.feed(std::string_view{b}.substr(i, chunk), xpub_events);
    }
    CHECK(kinds(xpub_events) == std::vector{kind::ready});
    CHECK(kinds(xsub_events) == std::vector{kind::ready});
  }
}

TEST_CASE("subscriptions reach an XPUB as SUBSCRIBE/CANCEL or as messages", "[zmtp]") {
  SECTION("ZMTP 3.1 peer: commands (doc/protocol/zeromq.md §7)") {
    auto l = forwarder_xpub_link();
    l.pump();
    REQUIRE(l.b.subscribe("zeek/"));
    auto bytes = l.b.take_output();
    CHECK(bytes == hex("04 0f 09 53 55 42 53 43 52 49 42 45 7a 65 65 6b 2f"));
    REQUIRE(l.b.unsubscribe("zeek/"));
    bytes += l.b.take_output();
    auto events = l.a.feed(bytes);
    REQUIRE(kinds(events) == std::vector{kind::subscribe, kind::unsubscribe});
    CHECK(events[0].data == "zeek/");
    CHECK(events[1].data == "zeek/");
  }
  SECTION("message form: 0x01 + prefix, 0x00 + prefix") {
    auto cfg = null_config(socket_type::xsub, false);
    cfg.subscriptions_as_messages = true;
    auto l = forwarder_xpub_link(cfg);
    l.pump();
    REQUIRE(l.b.subscribe("zeek/"));
    REQUIRE(l.b.subscribe(""));
    auto bytes = l.b.take_output();
    CHECK(bytes == hex("00 06 01 7a 65 65 6b 2f  00 01 01"));
    REQUIRE(l.b.unsubscribe("zeek/"));
    auto events = l.a.feed(bytes + l.b.take_output());
    REQUIRE(kinds(events) == std::vector{kind::subscribe, kind::subscribe, kind::unsubscribe});
    CHECK(events[1].data.empty());
    CHECK(events[2].data == "zeek/");
  }
  SECTION("a ZMTP 3.0 peer gets the message form") {
    auto s = handshaken(socket_type::xsub, "XPUB", 0);
    REQUIRE(s.subscribe("a"));
    CHECK(s.take_output() == hex("00 02 01 61"));
    CHECK(!s.ping(10));
  }
  SECTION("an XPUB cannot subscribe, nor before the handshake") {
    session s{null_config(socket_type::xsub, false)};
    CHECK(!s.subscribe("a"));
    auto x = handshaken(socket_type::xpub, "XSUB");
    CHECK(!x.subscribe("a"));
  }
}

TEST_CASE("a Zeek 4-frame event crosses a NULL link byte-exact", "[zmtp]") {
  auto l = forwarder_xpub_link();
  l.pump();
  string_sink sink;
  REQUIRE(l.a.write_message(zeek_event, 4, sink));
  // Headers are copied, frames referenced: 4 two-byte headers plus the frames.
  CHECK(sink.out.size() == 8 + 23 + 7 + 13 + 5);
  CHECK(sink.out.substr(0, 2) == hex("01 17"));
  auto events = l.b.feed(sink.out);
  REQUIRE(kinds(events) == std::vector{kind::message});
  auto& msg = events[0].msg;
  REQUIRE(msg.size() == 4);
  for (size_t i = 0; i < 4; ++i)
    CHECK(msg.frame(i) == zeek_event[i]);
}

TEST_CASE("encode_plain() is what write_message() writes under NULL", "[zmtp]") {
  auto l = forwarder_xpub_link();
  l.pump();
  REQUIRE(l.a.writes_plain());
  // Frame sizes around the short/long header boundary (255/256), empty frames, one frame.
  std::vector<std::vector<std::string>> cases = {
    {std::string{zeek_event[0]}, std::string{zeek_event[1]}, std::string{zeek_event[2]},
     std::string{zeek_event[3]}},
    {"t", "", std::string(255, 'x'), std::string(256, 'y')},
    {std::string(70000, 'z')},
    {""},
    {"", "", ""},
  };
  for (auto& frames : cases) {
    multipart msg;
    std::vector<std::string_view> views;
    for (auto& f : frames) {
      msg.bytes += f;
      msg.ends.push_back(msg.bytes.size());
      views.emplace_back(f);
    }
    encode_plain(msg);
    string_sink sink;
    REQUIRE(l.a.write_message(views.data(), views.size(), sink));
    CHECK(msg.plain == sink.out);
    // And the peer reads the same frames back.
    auto events = l.b.feed(msg.plain);
    REQUIRE(kinds(events) == std::vector{kind::message});
    CHECK(events[0].msg.bytes == msg.bytes);
    CHECK(events[0].msg.ends == msg.ends);
  }
  multipart none;
  none.plain = "stale";
  encode_plain(none);
  CHECK(none.plain.empty());
}

TEST_CASE("messages encoded together lie back to back, each as encoded alone", "[zmtp]") {
  // Sizes around the block limit, a message without frames in between.
  std::vector<std::vector<std::string>> cases = {
    {"a", std::string(100, 'x')},
    {},
    {"b", std::string(300, 'y'), ""},
    {"c", std::string(plain_block_bytes, 'z')}, // Fills the block: the next one starts anew.
    {"d", std::string(10, 'w')},
    {"e", std::string(256, 'v')},
  };
  std::vector<multipart> msgs(cases.size());
  std::vector<multipart*> ptrs;
  for (size_t i = 0; i < cases.size(); ++i) {
    for (auto& f : cases[i]) {
      msgs[i].bytes += f;
      msgs[i].ends.push_back(msgs[i].bytes.size());
    }
    ptrs.push_back(&msgs[i]);
  }
  msgs[1].plain = "stale";
  encode_plain(ptrs.data(), ptrs.size());
  CHECK(msgs[1].plain.empty());
  for (auto& msg : msgs) {
    multipart alone = msg;
    encode_plain(alone);
    CHECK(msg.plain == alone.plain);
  }
  auto adjacent = [&](size_t i, size_t j) {
    return msgs[i].plain.data() + msgs[i].plain.size() == msgs[j].plain.data();
  };
  CHECK(adjacent(0, 2));
  CHECK(adjacent(2, 3));
  CHECK(msgs[0].plain_block == msgs[3].plain_block);
  CHECK(msgs[3].plain_block != msgs[4].plain_block);
  CHECK(adjacent(4, 5));
  // The block lives on with any message of it.
  auto keep = msgs[5];
  msgs.clear();
  CHECK(keep.plain.substr(keep.plain.size() - 256) == std::string(256, 'v'));
}

TEST_CASE("messages of changing sizes and frame counts assemble exactly", "[zmtp]") {
  // The assembly reserves by the last message (capped): larger, smaller, more and fewer
  // frames than the one before, one beyond the cap, fed in odd chunks.
  auto l = forwarder_xpub_link();
  l.pump();
  std::vector<std::vector<std::string>> msgs = {
    {"a", "bb", "ccc", "dddd"},
    {std::string(100000, 'x')},
    {"t", std::string(300, 'p')},
    {"", "", "", "", "", ""},
    {"zeek/x", "n", "broker-bin-v1", std::string(512, 'q')},
    {"zeek/x", "n", "broker-bin-v1", std::string(12, 'r')},
  };
  std::string wire;
  for (auto& frames : msgs) {
    std::vector<std::string_view> views(frames.begin(), frames.end());
    string_sink sink;
    REQUIRE(l.a.write_message(views.data(), views.size(), sink));
    wire += sink.out;
  }
  std::vector<event> events;
  for (size_t i = 0; i < wire.size(); i += 777)
    l.b.feed(std::string_view{wire}.substr(i, 777), events);
  REQUIRE(events.size() == msgs.size());
  for (size_t m = 0; m < msgs.size(); ++m) {
    REQUIRE(events[m].what == kind::message);
    REQUIRE(events[m].msg.size() == msgs[m].size());
    for (size_t i = 0; i < msgs[m].size(); ++i)
      CHECK(events[m].msg.frame(i) == msgs[m][i]);
  }
}

TEST_CASE("a one-frame message from an XSUB not starting with 0 or 1 is a message", "[zmtp]") {
  auto s = handshaken(socket_type::xpub, "XSUB");
  std::string bytes;
  append_frame_header(bytes, false, false, 3);
  bytes += "hey";
  append_frame_header(bytes, false, false, 0); // an empty message
  auto events = s.feed(bytes);
  REQUIRE(kinds(events) == std::vector{kind::message, kind::message});
  CHECK(events[0].msg.frame(0) == "hey");
  CHECK(events[1].msg.frame(0).empty());
}

TEST_CASE("PING is answered with PONG echoing the context; our PING gets a PONG", "[zmtp]") {
  auto l = forwarder_xpub_link();
  l.pump();
  REQUIRE(l.a.ping(300, "ctx"));
  auto ping = l.a.take_output();
  CHECK(ping == hex("04 0a 04 50 49 4e 47 01 2c 63 74 78"));
  CHECK(l.b.feed(ping).empty());
  CHECK(l.b.peer_ttl() == 300);
  auto pong = l.b.take_output();
  CHECK(pong == hex("04 08 04 50 4f 4e 47 63 74 78"));
  auto events = l.a.feed(pong);
  REQUIRE(kinds(events) == std::vector{kind::pong});
  CHECK(events[0].data == "ctx");
  CHECK(!l.a.ping(1, std::string(17, 'x')));
  std::string long_pong;
  append_command(long_pong, "PONG", std::string(17, 'x'));
  events = l.a.feed(long_pong);
  REQUIRE(kinds(events) == std::vector{kind::failed});
  CHECK(events[0].err.code == errc::malformed_command);
}

TEST_CASE("a command between the frames of a message does not break it", "[zmtp]") {
  auto s = handshaken(socket_type::xsub, "XPUB");
  std::string bytes;
  append_frame_header(bytes, true, false, 1);
  bytes += "a";
  append_command(bytes, "PING", ping_data(0, ""));
  append_frame_header(bytes, false, false, 1);
  bytes += "b";
  auto events = s.feed(bytes);
  REQUIRE(kinds(events) == std::vector{kind::message});
  CHECK(events[0].msg.size() == 2);
  CHECK(s.take_output() == hex("04 05 04 50 4f 4e 47"));
}

TEST_CASE("unknown commands after the handshake are counted and ignored", "[zmtp]") {
  auto s = handshaken(socket_type::xpub, "XSUB");
  std::string bytes;
  append_command(bytes, "HELLO", "");
  append_command(bytes, "READY", "");
  CHECK(s.feed(bytes).empty());
  CHECK(s.ignored_commands() == 2);
  CHECK(s.ready());
}

// -- hostile and broken peers -----------------------------------------------------------------

namespace {

// Feeds `bytes` to a fresh XPUB server session (after its greeting, when `after_greeting`)
// and returns the one failure it must report.
error failure_of(std::string_view bytes, limits lim = {}) {
  auto cfg = null_config(socket_type::xpub, true);
  cfg.lim = lim;
  session s{cfg};
  auto events = s.feed(bytes);
  REQUIRE(!events.empty());
  REQUIRE(events.back().what == kind::failed);
  CHECK(s.failed());
  std::vector<event> later;
  CHECK(!s.feed(greeting_of_peer(), later));
  CHECK(later.empty());
  return events.back().err;
}

std::string handshake_bytes(std::string_view peer_type = "XSUB") {
  return greeting_of_peer() + ready_of(peer_type);
}

} // namespace

TEST_CASE("peers that do not speak our ZMTP are refused with the reason", "[zmtp]") {
  CHECK(failure_of("\x01\x00"s).code == errc::unsupported_version);
  CHECK(failure_of(hex("ff 00 00 00 00 00 00 00 01 7f 01 01")).code
        == errc::unsupported_version);
  auto err = failure_of(greeting_of_peer("PLAIN"));
  CHECK(err.code == errc::mechanism_mismatch);
  CHECK(err.reason == "the peer uses the PLAIN mechanism, we use NULL");
  CHECK(failure_of(greeting_of_peer("CURVE")).code == errc::mechanism_mismatch);
}

TEST_CASE("handshake violations fail the session", "[zmtp]") {
  SECTION("a data frame before READY") {
    CHECK(failure_of(greeting_of_peer() + hex("00 01 61")).code == errc::malformed_frame);
  }
  SECTION("another command instead of READY") {
    std::string bytes = greeting_of_peer();
    append_command(bytes, "PING", ping_data(0, ""));
    CHECK(failure_of(bytes).code == errc::unexpected_command);
  }
  SECTION("READY without Socket-Type") {
    std::string bytes = greeting_of_peer();
    append_command(bytes, "READY", "");
    CHECK_THAT(failure_of(bytes).reason, Catch::Contains("no Socket-Type"));
  }
  SECTION("an incompatible socket type gets an ERROR naming it") {
    session s{null_config(socket_type::xpub, true)};
    s.take_output();
    auto events = s.feed(handshake_bytes("PUB"));
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::incompatible_peer);
    CHECK(events[0].err.reason == "the peer is a 'PUB' socket; an XPUB talks to SUB or XSUB only");
    auto out = s.take_output();
    CHECK_THAT(out, Catch::Contains("ERROR") && Catch::Contains("'PUB'"));
  }
  SECTION("the peer's ERROR") {
    std::string bytes = greeting_of_peer();
    append_command(bytes, "ERROR", error_data("go away"));
    auto err = failure_of(bytes);
    CHECK(err.code == errc::peer_error);
    CHECK_THAT(err.reason, Catch::Contains("go away"));
  }
  SECTION("a truncated READY metadata") {
    std::string bytes = greeting_of_peer();
    append_command(bytes, "READY", "\x0bSocket-Type\x00\x00\x00\x04XP"s);
    CHECK(failure_of(bytes).code == errc::malformed_command);
  }
  SECTION("an empty command frame") {
    CHECK(failure_of(greeting_of_peer() + hex("04 00")).code == errc::malformed_command);
  }
}

TEST_CASE("limits bound frames, messages and commands", "[zmtp]") {
  limits lim;
  lim.max_message_size = 100;
  lim.max_frames = 3;
  lim.max_command_size = 50;
  SECTION("a frame over the message limit fails on its header") {
    auto err = failure_of(handshake_bytes() + hex("02 00 00 00 00 00 10 00 00"), lim);
    CHECK(err.code == errc::message_too_large);
    CHECK_THAT(err.reason, Catch::Contains("1048576 bytes exceeds the limit of 100"));
  }
  SECTION("frames that add up past the limit") {
    std::string bytes = handshake_bytes();
    append_frame_header(bytes, true, false, 60);
    bytes += std::string(60, 'x');
    append_frame_header(bytes, false, false, 41);
    CHECK(failure_of(bytes, lim).code == errc::message_too_large);
  }
  SECTION("exactly the limit passes") {
    auto cfg = null_config(socket_type::xpub, true);
    cfg.lim = lim;
    session s{cfg};
    std::string bytes = handshake_bytes();
    append_frame_header(bytes, true, false, 60);
    bytes += std::string(60, 'x');
    append_frame_header(bytes, false, false, 40);
    bytes += std::string(40, 'y');
    CHECK(kinds(s.feed(bytes)) == std::vector{kind::ready, kind::message});
  }
  SECTION("too many frames") {
    std::string bytes = handshake_bytes();
    for (int i = 0; i < 4; ++i)
      bytes += hex("01 00");
    CHECK(failure_of(bytes, lim).code == errc::too_many_frames);
  }
  SECTION("a long command") {
    std::string bytes = handshake_bytes();
    append_command(bytes, "SUBSCRIBE", std::string(45, 'x'));
    CHECK(failure_of(bytes, lim).code == errc::malformed_command);
  }
  SECTION("a PING flood the caller does not drain") {
    lim.max_pending_output = 1000;
    std::string bytes = handshake_bytes();
    for (int i = 0; i < 1000; ++i)
      append_command(bytes, "PING", ping_data(0, "0123456789abcdef"));
    auto err = failure_of(bytes, lim);
    CHECK(err.code == errc::flood);
  }
}

TEST_CASE("SUBSCRIBE at an XSUB is a protocol error", "[zmtp]") {
  auto s = handshaken(socket_type::xsub, "XPUB");
  std::string bytes;
  append_command(bytes, "SUBSCRIBE", "x");
  auto events = s.feed(bytes);
  REQUIRE(kinds(events) == std::vector{kind::failed});
  CHECK(events[0].err.code == errc::unexpected_command);
}

TEST_CASE("large input buffers are compacted, not kept", "[zmtp]") {
  auto s = handshaken(socket_type::xsub, "XPUB");
  std::string frame;
  append_frame_header(frame, false, false, 1000);
  frame += std::string(1000, 'z');
  size_t messages = 0;
  // 5 MB through the session in uneven chunks: messages come out, memory stays bounded.
  std::string chunked;
  for (int i = 0; i < 5000; ++i)
    chunked += frame;
  for (size_t i = 0; i < chunked.size(); i += 4093)
    messages += s.feed(std::string_view{chunked}.substr(i, 4093)).size();
  CHECK(messages == 5000);
}

TEST_CASE("peer_closed and timed_out say where the connection ended", "[zmtp]") {
  session s{null_config(socket_type::xpub, true)};
  s.feed(greeting_of_peer().substr(0, 10));
  CHECK_THAT(s.peer_closed().reason, Catch::Contains("10 of 64"));
  CHECK(s.failure().code == errc::peer_closed);
  auto r = handshaken(socket_type::xsub, "XPUB");
  r.feed(hex("01 01 61"));
  CHECK_THAT(r.peer_closed().reason, Catch::Contains("1 frames received"));
  auto t = handshaken(socket_type::xsub, "XPUB");
  CHECK(t.timed_out(1500).reason == "no traffic from the peer for 1500 ms");
  CHECK(t.failed());
  string_sink sink;
  CHECK(!t.write_message(zeek_event, 4, sink));
}
