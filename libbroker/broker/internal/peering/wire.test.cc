#include "broker/internal/peering/wire.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/bin.test.hh"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <string_view>
#include <vector>

using namespace broker;
using namespace broker::internal;
using namespace std::literals;

using bin::test::from_hex;
using bin::test::normalized_hex;
using bin::test::to_hex;

namespace {

// Used during static initialization, so no Catch macros: a bad literal throws.
endpoint_id id(std::string_view text) {
  return endpoint_id::parse(text).value();
}

// The ids of doc/protocol/peering.md §12; section numbers in this file are that page's.
const endpoint_id id_b = id("925c9110-5b87-57d9-9d80-b65568e87a44");
const endpoint_id id_p0 = id("00000000-0000-4000-8000-000000000000");
const endpoint_id id_pf = id("ffffffff-ffff-4fff-bfff-ffffffffffff");
const endpoint_id id_b2 = id("0f5c9110-5b87-57d9-9d80-b65568e87a44");
const endpoint_id nil_id;

// The payload of a hex frame: everything after the 4-byte length.
std::string payload_of(std::string_view frame_hex) {
  auto frame = from_hex(frame_hex);
  REQUIRE(frame.size() >= wire::length_prefix_size);
  return frame.substr(wire::length_prefix_size);
}

std::string node_frame(const endpoint_id& sender, const endpoint_id& receiver,
                       wire::message_type type, uint16_t ttl, std::string_view topic,
                       std::string_view payload) {
  std::string out;
  auto err = wire::append_node_message(out, sender, receiver, type, ttl, topic, payload);
  REQUIRE_FALSE(err);
  return out;
}

struct handshake_vector {
  const char* name;
  wire::handshake_message msg;
  const char* hex;
};

// The handshake frames of §12 and a few more of the same kinds.
std::vector<handshake_vector> handshake_vectors() {
  return {
    {"probe", wire::probe_msg{}, "00000005 07 5a45454b"},
    {"hello(P0, 1, 99)", wire::hello_msg{id_p0, 1, 99},
     "00000017 06 5a45454b 00000000000040008000000000000000 01 63"},
    {"hello(P0, 1, 1)", wire::hello_msg{id_p0},
     "00000017 06 5a45454b 00000000000040008000000000000000 01 01"},
    {"hello(B, 1, 1)", wire::hello_msg{id_b},
     "00000017 06 5a45454b 925c91105b8757d99d80b65568e87a44 01 01"},
    {"version_select(P0, 1)", wire::version_select_msg{id_p0},
     "00000016 08 5a45454b 00000000000040008000000000000000 01"},
    {"version_select(B, 1)", wire::version_select_msg{id_b},
     "00000016 08 5a45454b 925c91105b8757d99d80b65568e87a44 01"},
    {"originator_syn([/foo/bar])", wire::originator_syn_msg{{"/foo/bar"}},
     "0000000b 0a 01 08 2f666f6f2f626172"},
    {"originator_syn([/test])", wire::originator_syn_msg{{"/test"}},
     "00000008 0a 01 05 2f74657374"},
    {"responder_syn_ack([/test])", wire::responder_syn_ack_msg{{"/test"}},
     "00000008 0b 01 05 2f74657374"},
    {"responder_syn_ack([/foo/bar])", wire::responder_syn_ack_msg{{"/foo/bar"}},
     "0000000b 0b 01 08 2f666f6f2f626172"},
    {"originator_syn([])", wire::originator_syn_msg{}, "00000002 0a 00"},
    {"originator_ack", wire::originator_ack_msg{}, "00000001 0c"},
    {"drop_conn(B, 39, redundant connection)",
     wire::drop_conn_msg{id_b, ec::redundant_connection, "redundant connection"},
     "0000002b 09 5a45454b 925c91105b8757d99d80b65568e87a44 27 14 "
     "726564756e64616e7420636f6e6e656374696f6e"},
    {"drop_conn(B, 2, unsupported versions offered)",
     wire::drop_conn_msg{id_b, ec::peer_incompatible, "unsupported versions offered"},
     "00000033 09 5a45454b 925c91105b8757d99d80b65568e87a44 02 1c "
     "756e737570706f727465642076657273696f6e73206f666665726564"},
    {"drop_conn(B, 38, wrong magic number)",
     wire::drop_conn_msg{id_b, ec::wrong_magic_number, "wrong magic number"},
     "00000029 09 5a45454b 925c91105b8757d99d80b65568e87a44 26 12 "
     "77726f6e67206d61676963206e756d626572"},
    {"drop_conn(B, 20, invalid message type tag)",
     wire::drop_conn_msg{id_b, ec::invalid_message, "invalid message type tag"},
     "0000002f 09 5a45454b 925c91105b8757d99d80b65568e87a44 14 18 "
     "696e76616c6964206d657373616765207479706520746167"},
  };
}

// The answer Broker sends for a rejected handshake payload.
std::string answer_hex(std::string_view payload) {
  auto decoded = wire::decode_handshake(payload);
  REQUIRE_FALSE(decoded);
  auto& err = decoded.error_value();
  return to_hex(wire::make_frame(wire::drop_conn_msg{id_b, err.code(), err.message()}));
}

void check_rejected(std::string_view payload, ec code, std::string_view text) {
  INFO("payload: " << to_hex(payload));
  auto decoded = wire::decode_handshake(payload);
  REQUIRE_FALSE(decoded);
  CHECK(decoded.error_value().code() == code);
  CHECK(decoded.error_value().message() == text);
}

std::vector<std::string> drain(wire::frame_reader& reader) {
  std::vector<std::string> frames;
  for (;;) {
    auto res = reader.next();
    if (res.kind != wire::frame_reader::status::frame)
      return frames;
    frames.emplace_back(res.payload);
  }
}

} // namespace

// -- phase 1/2 vectors ------------------------------------------------------------------------

TEST_CASE("every handshake vector of spec 11.1 encodes to its frame and decodes back",
          "[wire]") {
  for (auto& vec : handshake_vectors()) {
    INFO(vec.name);
    auto frame = wire::make_frame(vec.msg);
    CHECK(to_hex(frame) == normalized_hex(vec.hex));
    auto decoded = wire::decode_handshake(payload_of(vec.hex));
    REQUIRE(decoded);
    CHECK(decoded->index() == vec.msg.index());
    CHECK(to_hex(wire::make_frame(*decoded)) == normalized_hex(vec.hex));
  }
}

TEST_CASE("decoded handshake messages carry the fields of the spec vectors", "[wire]") {
  auto hello = wire::decode_handshake(
    payload_of("00000017 06 5a45454b 00000000000040008000000000000000 01 63"));
  REQUIRE(hello);
  auto& h = std::get<wire::hello_msg>(*hello);
  CHECK(h.sender == id_p0);
  CHECK(h.min_version == 1);
  CHECK(h.max_version == 99);
  auto vs = wire::decode_handshake(
    payload_of("00000016 08 5a45454b 925c91105b8757d99d80b65568e87a44 01"));
  REQUIRE(vs);
  CHECK(std::get<wire::version_select_msg>(*vs).sender == id_b);
  auto syn = wire::decode_handshake(payload_of("0000000b 0a 01 08 2f666f6f2f626172"));
  REQUIRE(syn);
  CHECK(std::get<wire::originator_syn_msg>(*syn).filter == filter_type{"/foo/bar"});
  auto drop = wire::decode_handshake(
    payload_of("0000002b 09 5a45454b 925c91105b8757d99d80b65568e87a44 27 14 "
               "726564756e64616e7420636f6e6e656374696f6e"));
  REQUIRE(drop);
  auto& d = std::get<wire::drop_conn_msg>(*drop);
  CHECK(d.sender == id_b);
  CHECK(d.code == ec::redundant_connection);
  CHECK(d.description == "redundant connection");
}

TEST_CASE("Broker's answers to bad first frames match the observed drop_conn frames", "[wire]") {
  SECTION("a hello with magic 11223344 gets drop_conn 38") {
    auto bad = from_hex("06 11223344 00000000000040008000000000000000 01 01");
    CHECK(answer_hex(bad)
          == normalized_hex("00000029 09 5a45454b 925c91105b8757d99d80b65568e87a44 26 12 "
                            "77726f6e67206d61676963206e756d626572"));
  }
  SECTION("a phase-3 tag as first frame gets drop_conn 20") {
    CHECK(answer_hex(payload_of("00000003 01 7878"))
          == normalized_hex("0000002f 09 5a45454b 925c91105b8757d99d80b65568e87a44 14 18 "
                            "696e76616c6964206d657373616765207479706520746167"));
  }
  SECTION("hello(PF, 200, 201) of T3 gets drop_conn 2") {
    CHECK(answer_hex(payload_of("00000017065a45454bffffffffffff4fffbfffffffffffffffc8c9"))
          == normalized_hex("00000033 09 5a45454b 925c91105b8757d99d80b65568e87a44 02 1c "
                            "756e737570706f727465642076657273696f6e73206f666665726564"));
  }
}

TEST_CASE("handshake frame sizes agree with the btest baselines", "[wire]") {
  auto body_size = [](const wire::handshake_message& msg) {
    return wire::make_frame(msg).size() - wire::length_prefix_size - 1;
  };
  auto length = [](const wire::handshake_message& msg) {
    return wire::make_frame(msg).size() - wire::length_prefix_size;
  };
  // Received messages are printed as length - 1.
  CHECK(body_size(wire::probe_msg{}) == 4);
  CHECK(body_size(wire::hello_msg{id_b}) == 22);
  CHECK(body_size(wire::version_select_msg{id_b}) == 21);
  CHECK(body_size(wire::originator_syn_msg{{"/test"}}) == 7);
  CHECK(body_size(wire::originator_ack_msg{}) == 0);
  CHECK(body_size(wire::drop_conn_msg{id_b, ec::redundant_connection, "redundant connection"})
        == 42);
  CHECK(body_size(wire::drop_conn_msg{id_b, ec::peer_incompatible,
                                      "unsupported versions offered"})
        == 50);
  // Sent messages are printed as length.
  CHECK(length(wire::hello_msg{id_pf, 1, 99}) == 23);
  CHECK(length(wire::version_select_msg{id_p0}) == 22);
  CHECK(length(wire::originator_syn_msg{{"/foo/bar"}}) == 11);
  CHECK(length(wire::responder_syn_ack_msg{{"/foo/bar"}}) == 11);
  CHECK(length(wire::originator_ack_msg{}) == 1);
  // Frame sizes of §3.1. A drop_conn frame is 27 + len bytes for len < 128 (e.g. 0x2b + 4 =
  // 47 for a 20-byte description).
  CHECK(wire::make_frame(wire::hello_msg{id_b}).size() == 27);
  CHECK(wire::make_frame(wire::probe_msg{}).size() == 9);
  CHECK(wire::make_frame(wire::version_select_msg{id_b}).size() == 26);
  CHECK(wire::make_frame(wire::drop_conn_msg{id_b, ec::none, "abc"}).size() == 27 + 3);
}

// -- phase 1/2 validation ---------------------------------------------------------------------

TEST_CASE("a handshake message with a wrong magic number is rejected with code 38", "[wire]") {
  auto magic = "11223344"sv;
  check_rejected(from_hex("06"s + std::string{magic} + "925c91105b8757d99d80b65568e87a44 01 01"),
                 ec::wrong_magic_number, "wrong magic number");
  check_rejected(from_hex("07"s + std::string{magic}), ec::wrong_magic_number,
                 "wrong magic number");
  check_rejected(from_hex("08"s + std::string{magic} + "925c91105b8757d99d80b65568e87a44 01"),
                 ec::wrong_magic_number, "wrong magic number");
  check_rejected(from_hex("09"s + std::string{magic}
                          + "925c91105b8757d99d80b65568e87a44 27 01 78"),
                 ec::wrong_magic_number, "wrong magic number");
}

TEST_CASE("a hello whose version range excludes 1 is rejected with code 2", "[wire]") {
  auto hello = [](uint8_t lo, uint8_t hi) {
    auto payload = from_hex("06 5a45454b ffffffffffff4fffbfffffffffffffff");
    payload += static_cast<char>(lo);
    payload += static_cast<char>(hi);
    return payload;
  };
  check_rejected(hello(200, 201), ec::peer_incompatible, "unsupported versions offered");
  check_rejected(hello(2, 2), ec::peer_incompatible, "unsupported versions offered");
  check_rejected(hello(0, 0), ec::peer_incompatible, "unsupported versions offered");
  check_rejected(hello(2, 1), ec::peer_incompatible, "unsupported versions offered");
  CHECK(wire::decode_handshake(hello(0, 1)));
  CHECK(wire::decode_handshake(hello(1, 255)));
}

TEST_CASE("a version_select for a version other than 1 is rejected with code 2", "[wire]") {
  check_rejected(from_hex("08 5a45454b 925c91105b8757d99d80b65568e87a44 02"),
                 ec::peer_incompatible, "unsupported version selected");
  check_rejected(from_hex("08 5a45454b 925c91105b8757d99d80b65568e87a44 00"),
                 ec::peer_incompatible, "unsupported version selected");
}

TEST_CASE("unknown and phase-3 tags during the handshake are invalid message type tags",
          "[wire]") {
  check_rejected("", ec::invalid_message, "invalid message type tag");
  for (int tag : {0, 1, 2, 3, 4, 5, 13, 0x81, 255}) {
    INFO("tag " << tag);
    auto payload = std::string(1, static_cast<char>(tag)) + from_hex("5a45454b");
    check_rejected(payload, ec::invalid_message, "invalid message type tag");
  }
}

TEST_CASE("every truncation of every handshake message fails to parse with Broker's text",
          "[wire]") {
  struct kind {
    wire::handshake_message msg;
    const char* text;
  };
  std::vector<kind> kinds = {
    {wire::hello_msg{id_b}, "failed to parse hello_msg"},
    {wire::probe_msg{}, "failed to parse probe_msg"},
    {wire::version_select_msg{id_b}, "failed to parse version_select_msg"},
    {wire::drop_conn_msg{id_b, ec::redundant_connection, "redundant connection"},
     "failed to parse drop_conn_msg"},
    {wire::originator_syn_msg{{"/foo/bar", "/test"}}, "failed to parse v1::originator_syn_msg"},
    {wire::responder_syn_ack_msg{{"/foo/bar", "/test"}},
     "failed to parse v1::responder_syn_ack_msg"},
  };
  for (auto& k : kinds) {
    auto payload = wire::make_frame(k.msg).substr(wire::length_prefix_size);
    for (size_t len = 1; len < payload.size(); ++len)
      check_rejected(payload.substr(0, len), ec::invalid_message, k.text);
    CHECK(wire::decode_handshake(payload));
  }
}

TEST_CASE("trailing bytes after a valid handshake body are ignored", "[wire]") {
  for (auto& vec : handshake_vectors()) {
    INFO(vec.name);
    auto decoded = wire::decode_handshake(payload_of(vec.hex) + "\xff\x00\x01"s);
    REQUIRE(decoded);
    CHECK(to_hex(wire::make_frame(*decoded)) == normalized_hex(vec.hex));
  }
}

TEST_CASE("a drop_conn with a code above 40 is answered with code 1 and its description",
          "[wire]") {
  for (int code : {41, 42, 100, 255}) {
    INFO("code " << code);
    auto payload = from_hex("09 5a45454b 925c91105b8757d99d80b65568e87a44");
    payload += static_cast<char>(code);
    payload += from_hex("03 666f6f");
    check_rejected(payload, ec::unspecified, "foo");
  }
  auto known = from_hex("09 5a45454b 925c91105b8757d99d80b65568e87a44 28 03 666f6f");
  auto decoded = wire::decode_handshake(known);
  REQUIRE(decoded);
  CHECK(std::get<wire::drop_conn_msg>(*decoded).code == ec::logic_error);
}

TEST_CASE("encoding a drop_conn with a local error code writes code 1", "[wire]") {
  auto frame = wire::make_frame(wire::drop_conn_msg{id_b, ec::invalid_json, ""});
  CHECK(to_hex(frame)
        == normalized_hex("00000017 09 5a45454b 925c91105b8757d99d80b65568e87a44 01 00"));
  frame = wire::make_frame(wire::drop_conn_msg{id_b, ec::invalid_config, ""});
  CHECK(static_cast<uint8_t>(frame[4 + 1 + 4 + 16]) == 1);
}

TEST_CASE("a drop_conn description of 128 bytes or more uses a multi-byte varbyte", "[wire]") {
  std::string text(300, 'x');
  auto frame = wire::make_frame(wire::drop_conn_msg{id_b, ec::unspecified, text});
  CHECK(frame.size() == 4 + 1 + 4 + 16 + 1 + 2 + 300);
  auto decoded = wire::decode_handshake(std::string_view{frame}.substr(4));
  REQUIRE(decoded);
  CHECK(std::get<wire::drop_conn_msg>(*decoded).description == text);
}

// -- filters ----------------------------------------------------------------------------------

TEST_CASE("filters are encoded sorted and without duplicates", "[wire]") {
  auto encode = [](const filter_type& xs) {
    std::string out;
    wire::append_filter(out, xs);
    return to_hex(out);
  };
  CHECK(encode({}) == "00");
  CHECK(encode({"/test"}) == normalized_hex("01 05 2f74657374"));
  CHECK(encode({"/b", "/a", "/b", "/a"}) == normalized_hex("02 02 2f61 02 2f62"));
  CHECK(encode({"/test", "/zeek/"}) == encode({"/zeek/", "/test"}));
  CHECK(encode({""}) == "0100");
}

TEST_CASE("a routing_update filter decodes only if it is exactly well formed", "[wire]") {
  auto decode = [](std::string_view hex) { return wire::decode_filter(from_hex(hex)); };
  REQUIRE(decode("00"));
  CHECK(decode("00")->empty());
  REQUIRE(decode("02 05 2f74657374 06 2f7a65656b2f"));
  CHECK(*decode("02 05 2f74657374 06 2f7a65656b2f") == filter_type{"/test", "/zeek/"});
  // Entries stay in the order received.
  CHECK(*decode("02 02 2f62 02 2f61") == filter_type{"/b", "/a"});
  auto message = [&](std::string_view hex) {
    auto res = decode(hex);
    REQUIRE_FALSE(res);
    CHECK(res.error_value() == ec::invalid_message);
    return res.error_value().message();
  };
  CHECK(message("") == "truncated filter count");
  CHECK(message("80") == "truncated filter count");
  CHECK(message("05 00") == "filter count exceeds the payload");
  CHECK(message("02 01 61") == "truncated filter entry length");
  CHECK(message("01 05 2f74") == "filter entry runs past the end");
  CHECK(message("01 01 61 ff") == "trailing bytes after filter");
  CHECK(message("00 00") == "trailing bytes after filter");
  CHECK(message("01 ffffffff0f") == "filter entry runs past the end");
}

TEST_CASE("a filter with long entries and many entries round-trips", "[wire]") {
  filter_type xs;
  for (int i = 0; i < 200; ++i)
    xs.emplace_back("/" + std::string(static_cast<size_t>(i), 'a'));
  std::string out;
  wire::append_filter(out, xs);
  auto decoded = wire::decode_filter(out);
  REQUIRE(decoded);
  CHECK(*decoded == xs);
}

TEST_CASE("our pong answers the origin-v1 probe; every other ping is echoed", "[wire]") {
  auto own = endpoint_id::random();
  auto peer = endpoint_id::random();
  for (auto [payload, answer] :
       {std::pair{wire::ext_probe_query, wire::ext_probe_answer},
        std::pair{std::string_view{"hello"}, std::string_view{"hello"}},
        std::pair{wire::ext_probe_answer, wire::ext_probe_answer}}) {
    std::string ping;
    wire::append_ping(ping, peer, own, payload);
    auto ping_msg = wire::decode_node_message(std::string_view{ping}.substr(4));
    REQUIRE(ping_msg);
    std::string pong;
    wire::append_pong(pong, own, *ping_msg);
    auto pong_msg = wire::decode_node_message(std::string_view{pong}.substr(4));
    REQUIRE(pong_msg);
    CHECK(pong_msg->type == wire::message_type::pong);
    CHECK(pong_msg->receiver == peer);
    CHECK(pong_msg->payload == answer);
  }
}

TEST_CASE("an originator_syn with trailing bytes after its filter is accepted", "[wire]") {
  auto decoded = wire::decode_handshake(from_hex("0a 01 05 2f74657374 ff ff"));
  REQUIRE(decoded);
  CHECK(std::get<wire::originator_syn_msg>(*decoded).filter == filter_type{"/test"});
}

// -- phase 3 ----------------------------------------------------------------------------------

TEST_CASE("the data frames of spec 11.3 encode to their bytes and decode back", "[wire]") {
  struct row {
    const char* name;
    endpoint_id sender;
    endpoint_id receiver;
    const char* topic;
    const char* value_hex;
    const char* length_hex;
  };
  const char* event = "0e030200000000000000010200000000000000010e0205076576656e745f310e02"
                      "03000000000000002a050474657374";
  const char* all_types =
    "0e0f038000000000000000037fffffffffffffff02000000000000000002ffffffffffffffff0519"
    "48656c6c6f205c753030336342726f6b65725c75303033652100010104c01e0000000000000a0000"
    "000000e4e1c00b03666f6f0620010db80000000000000000000000000700000000000000000000ff"
    "ffffffff0078081f90010c0205036261720503666f6f0d02050a66697273742d6e616d6505044a6f"
    "686e05096c6173742d6e616d650503446f65";
  std::vector<row> rows = {
    {"hello world", id("5746d8ee-3644-5bd2-9f54-d5a44c26c2a1"),
     id("c0551e8d-392b-509b-a47b-ae46f75befac"), "foobar", "050b68656c6c6f20776f726c64",
     "00000038"},
    {"event on /test", id_b, nil_id, "/test", event, "0000005a"},
    {"c 1 from a WebSocket client", id_b, nil_id, "/test", "020000000000000001", "00000033"},
    {"event on /test/x", id_b, nil_id, "/test/x", event, "0000005c"},
    {"all-types vector", id_b, nil_id, "/test", all_types, "000000dc"},
  };
  for (auto& r : rows) {
    INFO(r.name);
    auto value = from_hex(r.value_hex);
    auto frame = node_frame(r.sender, r.receiver, wire::message_type::data, 16, r.topic, value);
    std::string expected;
    expected += from_hex(r.length_hex);
    expected.append(reinterpret_cast<const char*>(r.sender.bytes().data()), 16);
    expected.append(reinterpret_cast<const char*>(r.receiver.bytes().data()), 16);
    expected += from_hex("01 0010");
    expected += static_cast<char>(0);
    expected += static_cast<char>(std::string_view{r.topic}.size());
    expected += r.topic;
    expected += value;
    CHECK(to_hex(frame) == to_hex(expected));
    auto msg = wire::decode_node_message(std::string_view{frame}.substr(4));
    REQUIRE(msg);
    CHECK(msg->sender == r.sender);
    CHECK(msg->receiver == r.receiver);
    CHECK(msg->type == wire::message_type::data);
    CHECK(msg->ttl == 16);
    CHECK(msg->topic == r.topic);
    CHECK(msg->payload == value);
    CHECK(bin::decode(msg->payload));
  }
}

TEST_CASE("the first data frame of spec 11.3 matches Broker's test bytes literally", "[wire]") {
  auto hex = "00000038 5746d8ee36445bd29f54d5a44c26c2a1 c0551e8d392b509ba47bae46f75befac 01 0010"
             " 0006 666f6f626172 050b68656c6c6f20776f726c64";
  auto payload = payload_of(hex);
  auto msg = wire::decode_node_message(payload);
  REQUIRE(msg);
  auto value = bin::decode(msg->payload);
  REQUIRE(value);
  CHECK(*value == data{"hello world"});
  CHECK(to_hex(node_frame(msg->sender, msg->receiver, msg->type, msg->ttl, msg->topic,
                          msg->payload))
        == normalized_hex(hex));
}

TEST_CASE("routing updates of spec 11.3 and 6.3 encode to their bytes", "[wire]") {
  std::string out;
  wire::append_routing_update(out, id_b, id_p0, {"/test"});
  CHECK(to_hex(out)
        == normalized_hex("0000002f 925c91105b8757d99d80b65568e87a44 "
                          "00000000000040008000000000000000 03 0010 0003 3c243e 01052f74657374"));
  out.clear();
  wire::append_routing_update(out, id_b, id_p0, {"/zeek/", "/test"});
  CHECK(to_hex(out)
        == normalized_hex("00000036 925c91105b8757d99d80b65568e87a44 "
                          "00000000000040008000000000000000 03 0010 0003 3c243e "
                          "02 05 2f74657374 06 2f7a65656b2f"));
  out.clear();
  wire::append_routing_update(out, id_p0, id_b, {"/zzz"});
  auto observed = "0000002e 00000000000040008000000000000000 925c91105b8757d99d80b65568e87a44 "
                  "03 0010 0003 3c243e 01 04 2f7a7a7a";
  CHECK(to_hex(out) == normalized_hex(observed));
  auto msg_bytes = payload_of(observed);
  auto msg = wire::decode_node_message(msg_bytes);
  REQUIRE(msg);
  CHECK(msg->type == wire::message_type::routing_update);
  auto filter = wire::decode_filter(msg->payload);
  REQUIRE(filter);
  CHECK(*filter == filter_type{"/zzz"});
}

TEST_CASE("a ping is answered by a pong with the same payload, ttl 16 and swapped ids",
          "[wire]") {
  auto ping_hex = "0000002b 00000000000040008000000000000000 925c91105b8757d99d80b65568e87a44 "
                  "04 0001 0003 3c243e 666f6f";
  auto pong_hex = "0000002b 925c91105b8757d99d80b65568e87a44 00000000000040008000000000000000 "
                  "05 0010 0003 3c243e 666f6f";
  CHECK(to_hex(node_frame(id_p0, id_b, wire::message_type::ping, 1, "<$>", "foo"))
        == normalized_hex(ping_hex));
  auto ping_bytes = payload_of(ping_hex);
  auto ping = wire::decode_node_message(ping_bytes);
  REQUIRE(ping);
  CHECK(ping->type == wire::message_type::ping);
  CHECK(ping->ttl == 1);
  std::string out;
  wire::append_pong(out, id_b, *ping);
  CHECK(to_hex(out) == normalized_hex(pong_hex));
  // The btest baseline: a 43-byte ping, and a pong with 6 bytes of topic plus payload.
  CHECK(from_hex(ping_hex).size() - 4 == 43);
  auto pong_bytes = payload_of(pong_hex);
  auto pong = wire::decode_node_message(pong_bytes);
  REQUIRE(pong);
  CHECK(pong->topic.size() + pong->payload.size() == 6);
}

TEST_CASE("BYE pings carry 'BYE' and a little-endian id", "[wire]") {
  std::string out;
  wire::append_ping(out, id_b, id_p0, wire::make_bye_payload(1));
  CHECK(to_hex(out)
        == normalized_hex("00000033 925c91105b8757d99d80b65568e87a44 "
                          "00000000000040008000000000000000 04 0010 0003 3c243e "
                          "425945 0100000000000000"));
  // The token observed in T5.
  CHECK(to_hex(wire::make_bye_payload(0x1000000000000001))
        == normalized_hex("425945 0100000000000010"));
  CHECK(wire::is_bye(wire::make_bye_payload(7)));
  CHECK(wire::is_bye(from_hex("425945 0700000000000000")));
  CHECK_FALSE(wire::is_bye("BYE"));
  CHECK_FALSE(wire::is_bye("foo"));
  CHECK_FALSE(wire::is_bye(""));
  CHECK_FALSE(wire::is_bye(from_hex("425945 070000000000000000")));
  CHECK_FALSE(wire::is_bye(from_hex("425946 0700000000000000")));
}

TEST_CASE("node messages shorter than 37 bytes are too short", "[wire]") {
  auto full = node_frame(id_b, id_p0, wire::message_type::ping, 16, "", "").substr(4);
  REQUIRE(full.size() == wire::header_size);
  for (size_t len = 0; len < wire::header_size; ++len) {
    auto res = wire::decode_node_message(std::string_view{full}.substr(0, len));
    REQUIRE_FALSE(res);
    CHECK(res.error_value() == ec::invalid_message);
    CHECK(res.error_value().message() == "message too short");
  }
  auto empty = wire::decode_node_message(full);
  REQUIRE(empty);
  CHECK(empty->topic.empty());
  CHECK(empty->payload.empty());
}

TEST_CASE("a topic length beyond the frame is an invalid topic size", "[wire]") {
  auto payload = node_frame(id_b, id_p0, wire::message_type::data, 16, "/test", "").substr(4);
  CHECK(wire::decode_node_message(payload));
  payload[36] = 6; // topic_len 6 with 5 bytes present
  auto res = wire::decode_node_message(payload);
  REQUIRE_FALSE(res);
  CHECK(res.error_value().message() == "invalid topic size");
  payload[35] = '\xff';
  CHECK_FALSE(wire::decode_node_message(payload));
}

TEST_CASE("node message types outside 1-5 and 0x81 are rejected per frame", "[wire]") {
  auto payload = node_frame(id_b, id_p0, wire::message_type::data, 16, "/t", "x").substr(4);
  for (int type = 0; type < 256; ++type) {
    payload[32] = static_cast<char>(type);
    auto res = wire::decode_node_message(payload);
    bool known = (type >= 1 && type <= 5) || type == 0x81;
    INFO("type " << type);
    CHECK(static_cast<bool>(res) == known);
    if (!known)
      CHECK(res.error_value().message() == "invalid message type " + std::to_string(type));
  }
}

TEST_CASE("T6: malformed phase-3 frames are per-frame errors and the stream continues",
          "[wire]") {
  std::string stream;
  stream += from_hex("0000000a 00000000000000000000");
  stream += node_frame(id_p0, id_b, static_cast<wire::message_type>(9), 16, "/test", "x");
  stream += node_frame(id_p0, nil_id, wire::message_type::data, 16, "/test", from_hex("0001"));
  stream += from_hex("00000000");
  stream += node_frame(id_p0, id_b, wire::message_type::ping, 1, "<$>", "foo");
  wire::frame_reader reader;
  reader.enter_operation();
  reader.feed(stream);
  auto frames = drain(reader);
  REQUIRE(frames.size() == 4); // the empty frame is skipped
  auto short_frame = wire::decode_node_message(frames[0]);
  REQUIRE_FALSE(short_frame);
  CHECK(short_frame.error_value().message() == "message too short");
  auto type9 = wire::decode_node_message(frames[1]);
  REQUIRE_FALSE(type9);
  CHECK(type9.error_value().message() == "invalid message type 9");
  // The header is fine; the value codec rejects the trailing byte.
  auto data_frame = wire::decode_node_message(frames[2]);
  REQUIRE(data_frame);
  CHECK(data_frame->payload == from_hex("0001"));
  CHECK_FALSE(bin::decode(data_frame->payload));
  auto ping = wire::decode_node_message(frames[3]);
  REQUIRE(ping);
  CHECK(ping->type == wire::message_type::ping);
  CHECK(reader.next().kind == wire::frame_reader::status::need_more);
}

TEST_CASE("a relayed frame keeps receiver, type, topic and payload bytes verbatim", "[wire]") {
  auto original = from_hex("0000005a 5746d8ee36445bd29f54d5a44c26c2a1 00000000000000000000000000000000"
                           " 01 0001 0005 2f74657374"
                           " 0e030200000000000000010200000000000000010e0205076576656e745f310e02"
                           "03000000000000002a050474657374");
  auto msg = wire::decode_node_message(std::string_view{original}.substr(4));
  REQUIRE(msg);
  std::string out;
  wire::append_relayed(out, *msg, id_b);
  auto expected = original;
  expected.replace(4, 16, reinterpret_cast<const char*>(id_b.bytes().data()), 16);
  expected[4 + 33] = 0;
  expected[4 + 34] = 16;
  CHECK(to_hex(out) == to_hex(expected));
  wire::append_relayed(out, *msg, id_b, 3);
  CHECK(out.size() == 2 * original.size());
  CHECK(static_cast<uint8_t>(out[original.size() + 4 + 34]) == 3);
}

TEST_CASE("a topic longer than 65535 bytes cannot be framed", "[wire]") {
  std::string out = "keep";
  auto err = wire::append_node_message(out, id_b, nil_id, wire::message_type::data, 16,
                                       std::string(65536, 'a'), "x");
  CHECK(err == ec::invalid_topic);
  CHECK(out == "keep");
  CHECK_FALSE(wire::append_node_message(out, id_b, nil_id, wire::message_type::data, 16,
                                        std::string(65535, 'a'), "x"));
  auto msg = wire::decode_node_message(std::string_view{out}.substr(4 + 4));
  REQUIRE(msg);
  CHECK(msg->topic.size() == 65535);
  CHECK(msg->payload == "x");
}

// -- extension origin-v1 ----------------------------------------------------------------------

TEST_CASE("an extended data frame carries origin, sequence and hops before the value",
          "[wire]") {
  std::string out;
  auto value = from_hex("020000000000000001");
  wire::extended_data ext{id_pf, 0x0102030405060708, 3, value};
  REQUIRE_FALSE(wire::append_extended_data(out, id_b, nil_id, 16, "/test", ext));
  auto expected = "0000004c 925c91105b8757d99d80b65568e87a44 00000000000000000000000000000000"
                  " 81 0010 0005 2f74657374"
                  " ffffffffffff4fffbfffffffffffffff 0102030405060708 03"
                  " 020000000000000001";
  CHECK(to_hex(out) == normalized_hex(expected));
  auto msg = wire::decode_node_message(std::string_view{out}.substr(4));
  REQUIRE(msg);
  CHECK(msg->type == wire::message_type::data_ext);
  auto decoded = wire::decode_extended_data(msg->payload);
  REQUIRE(decoded);
  CHECK(decoded->origin == id_pf);
  CHECK(decoded->sequence == 0x0102030405060708);
  CHECK(decoded->hops == 3);
  CHECK(decoded->value == from_hex("020000000000000001"));
}

TEST_CASE("an extended data frame becomes a plain data frame for Broker without re-encoding",
          "[wire]") {
  std::string ext_frame;
  auto value = from_hex("020000000000000001");
  wire::extended_data ext{id_pf, 9, 1, value};
  REQUIRE_FALSE(wire::append_extended_data(ext_frame, id_pf, nil_id, 16, "/test", ext));
  auto msg = wire::decode_node_message(std::string_view{ext_frame}.substr(4));
  REQUIRE(msg);
  auto decoded = wire::decode_extended_data(msg->payload);
  REQUIRE(decoded);
  std::string plain;
  REQUIRE_FALSE(wire::append_node_message(plain, id_b, nil_id, wire::message_type::data, 16,
                                          msg->topic, decoded->value));
  // §12: Broker's data frame for c 1 on /test.
  CHECK(to_hex(plain)
        == normalized_hex("00000033 925c91105b8757d99d80b65568e87a44 "
                          "00000000000000000000000000000000 01 0010 0005 2f74657374 "
                          "020000000000000001"));
  // Relaying to another extension peer bumps the hop count only.
  std::string next;
  auto bumped = *decoded;
  ++bumped.hops;
  REQUIRE_FALSE(wire::append_extended_data(next, id_b, nil_id, 16, msg->topic, bumped));
  CHECK(next.size() == ext_frame.size());
  CHECK(next.substr(4 + 16) != ext_frame.substr(4 + 16));
  CHECK(next.substr(4 + 16, 21 + 5 + 24) == ext_frame.substr(4 + 16, 21 + 5 + 24));
}

TEST_CASE("an extended data payload shorter than its header is rejected", "[wire]") {
  for (size_t len = 0; len < wire::extension_header_size; ++len) {
    auto res = wire::decode_extended_data(std::string(len, 'x'));
    REQUIRE_FALSE(res);
    CHECK(res.error_value().message() == "extension header too short");
  }
  auto empty_value = wire::decode_extended_data(std::string(wire::extension_header_size, 'x'));
  REQUIRE(empty_value);
  CHECK(empty_value->value.empty());
}

// -- frame_reader -----------------------------------------------------------------------------

TEST_CASE("frame headers are 4-byte big-endian lengths", "[wire]") {
  std::string out;
  wire::append_frame_header(out, 0);
  wire::append_frame_header(out, 0x0102a3f4);
  CHECK(to_hex(out) == "000000000102a3f4");
}

TEST_CASE("feeding a stream byte by byte yields the same frames as all at once", "[wire]") {
  // T1 as P0 sends it, then phase-3 frames.
  auto stream = from_hex("00000017065a45454b000000000000400080000000000000000163"
                         "00000016085a45454b0000000000004000800000000000000001"
                         "0000000b0a01082f666f6f2f626172"
                         "000000010c"
                         "0000002b00000000000040008000000000000000925c91105b8757d99d80b65568e87a44"
                         "0400010003 3c243e 666f6f"
                         "00000000"
                         "0000002b00000000000040008000000000000000925c91105b8757d99d80b65568e87a44"
                         "0400010003 3c243e 626172");
  auto read_all = [&](size_t chunk) {
    wire::frame_reader reader;
    std::vector<std::string> frames;
    for (size_t pos = 0; pos < stream.size(); pos += chunk) {
      reader.feed(std::string_view{stream}.substr(pos, chunk));
      for (auto res = reader.next(); res.kind == wire::frame_reader::status::frame;
           res = reader.next()) {
        frames.emplace_back(res.payload);
        if (res.payload == "\x0c") // originator_ack: the handshake is over
          reader.enter_operation();
      }
    }
    CHECK(reader.buffered() == 0);
    return frames;
  };
  auto whole = read_all(stream.size());
  REQUIRE(whole.size() == 6);
  CHECK(whole[3] == "\x0c");
  CHECK(read_all(1) == whole);
  CHECK(read_all(3) == whole);
  CHECK(read_all(7) == whole);
}

TEST_CASE("randomly chunked feeding reassembles every frame", "[wire]") {
  std::mt19937 rng{4711};
  std::vector<std::string> sent;
  std::string stream;
  for (int i = 0; i < 500; ++i) {
    auto len = std::uniform_int_distribution<size_t>{1, 3000}(rng);
    std::string payload(len, static_cast<char>('a' + i % 26));
    wire::append_frame_header(stream, static_cast<uint32_t>(len));
    stream += payload;
    sent.push_back(std::move(payload));
  }
  wire::frame_reader reader;
  reader.enter_operation();
  std::vector<std::string> received;
  for (size_t pos = 0; pos < stream.size();) {
    auto chunk = std::uniform_int_distribution<size_t>{1, 9000}(rng);
    reader.feed(std::string_view{stream}.substr(pos, chunk));
    pos += chunk;
    for (auto& frame : drain(reader))
      received.push_back(std::move(frame));
  }
  CHECK(received == sent);
  CHECK(reader.buffered() == 0);
}

TEST_CASE("frames taken from the caller's bytes match the fed frames, chunk by chunk",
          "[wire]") {
  // What connection.cc does: the bytes stay in the caller's buffer; a partial frame is
  // offered again, with more bytes behind it.
  std::mt19937 rng{815};
  std::vector<std::string> sent;
  std::string stream;
  for (int i = 0; i < 300; ++i) {
    auto len = std::uniform_int_distribution<size_t>{1, 2000}(rng);
    std::string payload(len, static_cast<char>('a' + i % 26));
    wire::append_frame_header(stream, static_cast<uint32_t>(len));
    stream += payload;
    sent.push_back(std::move(payload));
    if (i % 7 == 0)
      wire::append_frame_header(stream, 0); // Skipped in phase 3.
  }
  wire::frame_reader reader;
  reader.enter_operation();
  std::vector<std::string> received;
  size_t start = 0; // Where the caller's unused bytes begin.
  for (size_t end = 0; end < stream.size();) {
    end = std::min(stream.size(), end + std::uniform_int_distribution<size_t>{1, 5000}(rng));
    auto bytes = std::string_view{stream}.substr(start, end - start);
    size_t pos = 0;
    for (;;) {
      size_t used = 0;
      auto res = reader.next(bytes.substr(pos), used);
      pos += used;
      if (res.kind != wire::frame_reader::status::frame)
        break;
      received.emplace_back(res.payload);
    }
    start += pos;
  }
  CHECK(received == sent);
  CHECK(start == stream.size());
  CHECK(reader.buffered() == 0); // Nothing was copied into the reader.
}

TEST_CASE("a framing failure in the caller's bytes keeps them for the diagnosis", "[wire]") {
  wire::frame_reader reader;
  // A handshake frame, then an empty one (an error during the handshake) and more bytes.
  auto bytes = from_hex("000000010c 00000000 414243");
  size_t used = 0;
  auto first = reader.next(bytes, used);
  REQUIRE(first.kind == wire::frame_reader::status::frame);
  CHECK(used == 5);
  auto rest = std::string_view{bytes}.substr(used);
  auto second = reader.next(rest, used);
  REQUIRE(second.kind == wire::frame_reader::status::failed);
  CHECK(used == 0);
  CHECK(reader.unread() == rest);
  // Sticky, and the kept bytes stay those of the first failure.
  auto third = reader.next(std::string_view{"xyz"}, used);
  CHECK(third.kind == wire::frame_reader::status::failed);
  CHECK(reader.unread() == rest);
  // A TLS ClientHello where the first handshake frame should be: too large, named.
  wire::frame_reader tls_reader;
  auto hello = from_hex("16030100f8010000f40303");
  auto res = tls_reader.next(hello, used);
  REQUIRE(res.kind == wire::frame_reader::status::failed);
  CHECK(wire::recognize_foreign(tls_reader.unread()) == wire::foreign_protocol::tls);
  // A truncated length prefix needs more and uses nothing.
  wire::frame_reader short_reader;
  CHECK(short_reader.next(std::string_view{"\0\0", 2}, used).kind
        == wire::frame_reader::status::need_more);
  CHECK(used == 0);
}

TEST_CASE("frames following the last handshake frame in one chunk reach phase 3", "[wire]") {
  wire::frame_reader reader;
  std::string chunk = from_hex("000000010c 00000000");
  chunk += node_frame(id_p0, id_b, wire::message_type::ping, 1, "<$>", "foo");
  reader.feed(chunk);
  auto first = reader.next();
  REQUIRE(first.kind == wire::frame_reader::status::frame);
  CHECK(first.payload == "\x0c");
  reader.enter_operation();
  CHECK(reader.current_phase() == wire::frame_reader::phase::operation);
  auto second = reader.next();
  REQUIRE(second.kind == wire::frame_reader::status::frame);
  auto ping = wire::decode_node_message(second.payload);
  REQUIRE(ping);
  CHECK(ping->payload == "foo");
}

TEST_CASE("an empty frame during the handshake is a framing error", "[wire]") {
  wire::frame_reader reader;
  reader.feed(from_hex("00000000 00000005075a45454b"));
  auto res = reader.next();
  CHECK(res.kind == wire::frame_reader::status::failed);
  CHECK(res.err == ec::invalid_message);
  CHECK(res.err.message() == "empty frame during the handshake");
  // Sticky: the following valid frame is never returned.
  CHECK(reader.next().kind == wire::frame_reader::status::failed);
}

TEST_CASE("a handshake frame above 64 KiB fails as soon as its length arrives", "[wire]") {
  wire::frame_reader reader;
  std::string header;
  wire::append_frame_header(header, wire::max_handshake_frame_size + 1);
  reader.feed(header);
  auto res = reader.next();
  CHECK(res.kind == wire::frame_reader::status::failed);
  CHECK(res.err.message() == "frame of 65537 bytes exceeds the limit of 65536");
  wire::frame_reader ok;
  header.clear();
  wire::append_frame_header(header, wire::max_handshake_frame_size);
  ok.feed(header);
  CHECK(ok.next().kind == wire::frame_reader::status::need_more);
}

TEST_CASE("a phase-3 frame above the configured limit fails the reader", "[wire]") {
  SECTION("the default limit is 64 MiB") {
    wire::frame_reader reader;
    reader.enter_operation();
    std::string header;
    wire::append_frame_header(header, wire::default_max_frame_size);
    reader.feed(header);
    CHECK(reader.next().kind == wire::frame_reader::status::need_more);
    wire::frame_reader over;
    over.enter_operation();
    header.clear();
    wire::append_frame_header(header, wire::default_max_frame_size + 1);
    over.feed(header);
    CHECK(over.next().kind == wire::frame_reader::status::failed);
  }
  SECTION("a custom limit applies only in phase 3") {
    wire::frame_reader reader{100};
    std::string stream;
    wire::append_frame_header(stream, 150);
    stream += std::string(150, 'x');
    wire::append_frame_header(stream, 150);
    stream += std::string(150, 'y');
    reader.feed(stream);
    auto first = reader.next();
    REQUIRE(first.kind == wire::frame_reader::status::frame);
    CHECK(first.payload.size() == 150);
    reader.enter_operation();
    auto second = reader.next();
    CHECK(second.kind == wire::frame_reader::status::failed);
    CHECK(second.err.message() == "frame of 150 bytes exceeds the limit of 100");
  }
}

TEST_CASE("empty phase-3 frames are skipped silently", "[wire]") {
  wire::frame_reader reader;
  reader.enter_operation();
  reader.feed(from_hex("00000000 00000000 00000001 41 00000000"));
  auto res = reader.next();
  REQUIRE(res.kind == wire::frame_reader::status::frame);
  CHECK(res.payload == "A");
  CHECK(reader.next().kind == wire::frame_reader::status::need_more);
  CHECK(reader.buffered() == 0);
}

// -- robustness -------------------------------------------------------------------------------

TEST_CASE("random bytes never crash the peering decoders", "[wire]") {
  std::mt19937 rng{20261121};
  auto byte = std::uniform_int_distribution<int>{0, 255};
  auto size = std::uniform_int_distribution<size_t>{0, 80};
  size_t accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string input(size(rng), '\0');
    for (auto& c : input)
      c = static_cast<char>(byte(rng));
    // Bias toward plausible prefixes so the decoders get past their first checks.
    if (!input.empty() && i % 3 == 0)
      input[0] = static_cast<char>(6 + i % 7);
    if (input.size() >= 5 && i % 6 == 0)
      input.replace(1, 4, from_hex("5a45454b"));
    if (auto msg = wire::decode_handshake(input)) {
      ++accepted;
      auto again = wire::decode_handshake(wire::make_frame(*msg).substr(4));
      CHECK(again);
    }
    if (auto msg = wire::decode_node_message(input)) {
      CHECK(msg->topic.size() + msg->payload.size() + wire::header_size == input.size());
      if (msg->type == wire::message_type::routing_update)
        static_cast<void>(wire::decode_filter(msg->payload));
      static_cast<void>(wire::decode_extended_data(msg->payload));
    }
    if (auto filter = wire::decode_filter(input)) {
      std::string out;
      wire::append_filter(out, *filter);
      CHECK(wire::decode_filter(out));
    }
    wire::frame_reader reader{1024};
    if (i % 2)
      reader.enter_operation();
    for (size_t pos = 0; pos < input.size(); pos += 5) {
      reader.feed(std::string_view{input}.substr(pos, 5));
      static_cast<void>(drain(reader));
    }
  }
  CHECK(accepted > 0);
}

// -- foreign protocols ------------------------------------------------------------------------

TEST_CASE("the first bytes of TLS and HTTP are recognised where framing fails", "[wire]") {
  using wire::foreign_protocol;
  // A TLS 1.2 ClientHello as OpenSSL sends it: its length prefix reads as 369295616.
  auto client_hello = from_hex("16030100f4010000f00303");
  CHECK(wire::recognize_foreign(client_hello) == foreign_protocol::tls);
  CHECK(wire::recognize_foreign(from_hex("15030300020246")) == foreign_protocol::tls);
  CHECK(wire::recognize_foreign("HTTP/1.1 400 Bad Request\r\n")
        == foreign_protocol::http_response);
  CHECK(wire::recognize_foreign("GET /v1/messages/json HTTP/1.1\r\n")
        == foreign_protocol::http_request);
  CHECK(wire::recognize_foreign("POST /x HTTP/1.1") == foreign_protocol::http_request);
  // Our own protocol, truncated input and other bytes are not recognised as foreign.
  CHECK(wire::recognize_foreign(from_hex("00000017065a45454b")) == foreign_protocol::unknown);
  CHECK(wire::recognize_foreign("") == foreign_protocol::unknown);
  CHECK(wire::recognize_foreign(from_hex("16")) == foreign_protocol::unknown);
  CHECK(wire::recognize_foreign("GET") == foreign_protocol::unknown);
  CHECK(wire::recognize_foreign("HTTP") == foreign_protocol::unknown);
  CHECK(wire::recognize_foreign(from_hex("ffffffff")) == foreign_protocol::unknown);
  // The reader keeps the bytes that failed to frame, and knows no frame came before them.
  wire::frame_reader reader;
  reader.feed(client_hello);
  CHECK(reader.next().kind == wire::frame_reader::status::failed);
  CHECK(reader.at_start());
  CHECK(wire::recognize_foreign(reader.unread()) == foreign_protocol::tls);
  wire::frame_reader later;
  later.feed(from_hex("00000005075a45454b") + "GET / HTTP/1.1");
  CHECK(later.next().kind == wire::frame_reader::status::frame);
  CHECK_FALSE(later.at_start());
}

TEST_CASE("first_line quotes printable text up to the line end", "[wire]") {
  CHECK(wire::first_line("HTTP/1.1 400 Bad Request\r\nServer: x") == "HTTP/1.1 400 Bad Request");
  CHECK(wire::first_line(std::string{"GET \x01\xff x\n"}) == "GET ?? x");
  CHECK(wire::first_line(std::string(100, 'a')).size() == 60);
  CHECK(wire::first_line("").empty());
}
