#include "broker/internal/peering/handshake.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/bin.test.hh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

using namespace broker;
using namespace broker::internal;
using namespace std::literals;

using bin::test::from_hex;
using bin::test::normalized_hex;
using bin::test::to_hex;

using decision = handshake::decision;
using hs_state = handshake::state;
using hs_status = handshake::status;

namespace {

// Used during static initialization, so no Catch macros: a bad literal throws.
endpoint_id id(std::string_view text) {
  return endpoint_id::parse(text).value();
}

// The ids of doc/protocol/peering.md §12 (B < PF, P0 < B, B2 < PF); section numbers in this
// file are that page's.
const endpoint_id id_b = id("925c9110-5b87-57d9-9d80-b65568e87a44");
const endpoint_id id_p0 = id("00000000-0000-4000-8000-000000000000");
const endpoint_id id_pf = id("ffffffff-ffff-4fff-bfff-ffffffffffff");
const endpoint_id id_b2 = id("0f5c9110-5b87-57d9-9d80-b65568e87a44");

// §12 handshake frames used by several tests.
constexpr auto probe_hex = "00000005075a45454b";
constexpr auto hello_b_hex = "00000017065a45454b925c91105b8757d99d80b65568e87a440101";
constexpr auto vs_b_hex = "00000016085a45454b925c91105b8757d99d80b65568e87a4401";
constexpr auto syn_test_hex = "000000080a01052f74657374";
constexpr auto syn_ack_test_hex = "000000080b01052f74657374";
constexpr auto syn_foo_hex = "0000000b0a01082f666f6f2f626172";
constexpr auto syn_ack_foo_hex = "0000000b0b01082f666f6f2f626172";
constexpr auto ack_hex = "000000010c";
constexpr auto drop_39_hex = "0000002b095a45454b925c91105b8757d99d80b65568e87a44271472656475"
                             "6e64616e7420636f6e6e656374696f6e";

std::string payload_of(std::string_view frame_hex) {
  return from_hex(frame_hex).substr(wire::length_prefix_size);
}

std::string payload_of(const wire::handshake_message& msg) {
  return wire::make_frame(msg).substr(wire::length_prefix_size);
}

std::string drop_conn_hex(const endpoint_id& sender, ec code, std::string_view text) {
  return to_hex(wire::make_frame(wire::drop_conn_msg{sender, code, std::string{text}}));
}

/// An owner that answers every proceed check with a fixed decision and records the calls.
struct scripted_owner {
  explicit scripted_owner(decision d = decision::proceed) : answer(d) {}

  decision answer;
  std::vector<std::pair<endpoint_id, bool>> calls;

  handshake::proceed_fn callback() {
    return [this](const endpoint_id& remote, bool as_originator) {
      calls.emplace_back(remote, as_originator);
      return answer;
    };
  }
};

/// Plays our side of a transcript: start(), then the peer's bytes in chunks of `chunk` bytes
/// through a frame reader into the handshake and, after it completes, into phase 3, where
/// every ping gets its pong. Returns everything our side sent, as hex.
std::string play(handshake& hs, const endpoint_id& own, std::string_view incoming_hex,
                 size_t chunk = 0) {
  auto incoming = from_hex(incoming_hex);
  if (chunk == 0)
    chunk = incoming.size();
  std::string sent = hs.start();
  wire::frame_reader reader;
  for (size_t pos = 0; pos < incoming.size(); pos += chunk) {
    reader.feed(std::string_view{incoming}.substr(pos, chunk));
    for (auto res = reader.next(); res.kind == wire::frame_reader::status::frame;
         res = reader.next()) {
      if (reader.current_phase() == wire::frame_reader::phase::operation) {
        auto msg = wire::decode_node_message(res.payload);
        if (msg && msg->type == wire::message_type::ping)
          wire::append_pong(sent, own, *msg);
        continue;
      }
      auto out = hs.feed(res.payload);
      sent += out.output;
      if (out.kind == hs_status::done)
        reader.enter_operation();
      if (out.kind == hs_status::failed)
        return to_hex(sent);
    }
  }
  return to_hex(sent);
}

/// A machine of ours (id B, filter ["/test"]) driven into `target`. Remote P0 makes us the
/// responder, remote PF the originator.
std::unique_ptr<handshake> machine_in(hs_state target, scripted_owner& owner) {
  auto role = target == hs_state::await_hello_or_version_select ? handshake::role::dialer
                                                                : handshake::role::acceptor;
  auto hs = std::make_unique<handshake>(id_b, filter_type{"/test"}, role, owner.callback());
  hs->start();
  auto feed = [&](const wire::handshake_message& msg) {
    auto out = hs->feed(payload_of(msg));
    REQUIRE(out.kind == hs_status::in_progress);
  };
  switch (target) {
    case hs_state::await_version_select:
      feed(wire::hello_msg{id_p0});
      break;
    case hs_state::await_orig_syn:
      feed(wire::hello_msg{id_p0});
      feed(wire::version_select_msg{id_p0});
      break;
    case hs_state::await_orig_ack:
      feed(wire::hello_msg{id_p0});
      feed(wire::version_select_msg{id_p0});
      feed(wire::originator_syn_msg{{"/a"}});
      break;
    case hs_state::await_resp_syn_ack:
      feed(wire::hello_msg{id_pf});
      break;
    default:
      break;
  }
  REQUIRE(hs->current_state() == target);
  return hs;
}

const hs_state handshake_states[] = {
  hs_state::await_hello_or_version_select, hs_state::await_hello,
  hs_state::await_version_select,          hs_state::await_orig_syn,
  hs_state::await_resp_syn_ack,            hs_state::await_orig_ack,
};

const hs_state phase1_states[] = {
  hs_state::await_hello_or_version_select,
  hs_state::await_hello,
  hs_state::await_version_select,
};

} // namespace

// -- transcripts (§12) ------------------------------------------------------------------------

TEST_CASE("T1: Broker as acceptor answers a smaller id's hello with hello and responds",
          "[handshake]") {
  auto from_p0 = "00000017065a45454b000000000000400080000000000000000163"
                 "00000016085a45454b0000000000004000800000000000000001"
                 "0000000b0a01082f666f6f2f626172"
                 "000000010c"
                 "0000002b00000000000040008000000000000000925c91105b8757d99d80b65568e87a44"
                 "0400010003 3c243e 666f6f";
  auto to_p0 = "00000005075a45454b"
               "00000017065a45454b925c91105b8757d99d80b65568e87a440101"
               "000000080b01052f74657374"
               "0000002b925c91105b8757d99d80b65568e87a4400000000000040008000000000000000"
               "0500100003 3c243e 666f6f";
  for (size_t chunk : {size_t{0}, size_t{1}, size_t{5}}) {
    INFO("chunk " << chunk);
    scripted_owner owner;
    handshake hs{id_b, {"/test"}, handshake::role::acceptor, owner.callback()};
    CHECK(play(hs, id_b, from_p0, chunk) == normalized_hex(to_p0));
    CHECK(hs.current_state() == hs_state::done);
    CHECK_FALSE(hs.is_originator());
    REQUIRE(owner.calls.size() == 1);
    CHECK(owner.calls[0] == std::pair{id_p0, false});
  }
}

TEST_CASE("T1 step by step: the responder learns the originator's id and filter",
          "[handshake]") {
  scripted_owner owner;
  handshake hs{id_b, {"/test"}, handshake::role::acceptor, owner.callback()};
  CHECK(hs.state_name() == "init");
  CHECK(to_hex(hs.start()) == probe_hex);
  CHECK(hs.state_name() == "await_hello");
  auto out = hs.feed(payload_of("00000017065a45454b000000000000400080000000000000000163"));
  CHECK(out.kind == hs_status::in_progress);
  CHECK(to_hex(out.output) == hello_b_hex);
  CHECK(hs.state_name() == "await_version_select");
  CHECK(owner.calls.empty());
  out = hs.feed(payload_of("00000016085a45454b0000000000004000800000000000000001"));
  CHECK(out.kind == hs_status::in_progress);
  CHECK(out.output.empty());
  CHECK(hs.state_name() == "await_orig_syn");
  CHECK(hs.remote_id() == id_p0);
  out = hs.feed(payload_of(syn_foo_hex));
  CHECK(to_hex(out.output) == syn_ack_test_hex);
  CHECK(hs.state_name() == "await_orig_ack");
  out = hs.feed(payload_of(ack_hex));
  CHECK(out.kind == hs_status::done);
  CHECK(out.output.empty());
  CHECK(out.remote == id_p0);
  CHECK(out.remote_filter == filter_type{"/foo/bar"});
  CHECK_FALSE(out.originator);
  CHECK(hs.state_name() == "done");
}

TEST_CASE("T1 from the dialer's side: our originator answers Broker's hello with "
          "version_select and originator_syn",
          "[handshake]") {
  auto from_b = "00000005075a45454b"
                "00000017065a45454b925c91105b8757d99d80b65568e87a440101"
                "000000080b01052f74657374";
  // T1's P0 lines, except that we offer versions 1..1 where the btest offers 1..99.
  auto to_b = "00000017065a45454b000000000000400080000000000000000101"
              "00000016085a45454b0000000000004000800000000000000001"
              "0000000b0a01082f666f6f2f626172"
              "000000010c";
  scripted_owner owner;
  handshake hs{id_p0, {"/foo/bar"}, handshake::role::dialer, owner.callback()};
  CHECK(play(hs, id_p0, from_b) == normalized_hex(to_b));
  CHECK(hs.current_state() == hs_state::done);
  CHECK(hs.is_originator());
  REQUIRE(owner.calls.size() == 1);
  CHECK(owner.calls[0] == std::pair{id_b, true});
}

TEST_CASE("T2: an acceptor with the smaller id answers hello with version_select and "
          "originator_syn",
          "[handshake]") {
  auto from_pf = "00000017065a45454bffffffffffff4fffbfffffffffffffff0163"
                 "0000000b0b01082f666f6f2f626172"
                 "0000002bffffffffffff4fffbfffffffffffffff925c91105b8757d99d80b65568e87a44"
                 "0400010003 3c243e 666f6f";
  auto to_pf = "00000005075a45454b"
               "00000016085a45454b925c91105b8757d99d80b65568e87a4401"
               "000000080a01052f74657374"
               "000000010c"
               "0000002b925c91105b8757d99d80b65568e87a44ffffffffffff4fffbfffffffffffffff"
               "0500100003 3c243e 666f6f";
  scripted_owner owner;
  handshake hs{id_b, {"/test"}, handshake::role::acceptor, owner.callback()};
  CHECK(play(hs, id_b, from_pf) == normalized_hex(to_pf));
  CHECK(hs.is_originator());
  REQUIRE(owner.calls.size() == 1);
  CHECK(owner.calls[0] == std::pair{id_pf, true});
}

TEST_CASE("T2 from the dialer's side: a dialer that receives version_select becomes responder",
          "[handshake]") {
  auto from_b = "00000005075a45454b"
                "00000016085a45454b925c91105b8757d99d80b65568e87a4401"
                "000000080a01052f74657374"
                "000000010c";
  auto to_b = "00000017065a45454bffffffffffff4fffbfffffffffffffff0101"
              "0000000b0b01082f666f6f2f626172";
  scripted_owner owner;
  handshake hs{id_pf, {"/foo/bar"}, handshake::role::dialer, owner.callback()};
  CHECK(play(hs, id_pf, from_b) == normalized_hex(to_b));
  CHECK(hs.current_state() == hs_state::done);
  REQUIRE(owner.calls.size() == 1);
  CHECK(owner.calls[0] == std::pair{id_b, false});
}

TEST_CASE("T3: hello(200, 201) is answered with drop_conn 2 and ends the handshake",
          "[handshake]") {
  scripted_owner owner;
  handshake hs{id_b, {"/test"}, handshake::role::acceptor, owner.callback()};
  hs.start();
  auto out = hs.feed(payload_of("00000017065a45454bffffffffffff4fffbfffffffffffffffc8c9"));
  CHECK(out.kind == hs_status::failed);
  CHECK(to_hex(out.output)
        == normalized_hex("00000033 09 5a45454b 925c91105b8757d99d80b65568e87a44 02 1c "
                          "756e737570706f727465642076657273696f6e73206f666665726564"));
  CHECK(out.err == ec::peer_incompatible);
  CHECK(out.err.message() == "unsupported versions offered");
  CHECK_FALSE(out.redundant);
  CHECK(hs.current_state() == hs_state::failed);
  CHECK(owner.calls.empty());
}

TEST_CASE("T4: a second handshake with the same peer pauses and gets drop_conn 39 once the "
          "first completes",
          "[handshake]") {
  // Broker's bookkeeping for this test: one status per remote and the list of handshakes.
  std::map<endpoint_id, bool> connected; // false = connecting
  std::vector<const handshake*> in_flight;
  auto decide = [&](const endpoint_id& remote, bool) {
    auto i = connected.find(remote);
    if (i == connected.end()) {
      connected.emplace(remote, false);
      return decision::proceed;
    }
    if (i->second)
      return decision::redundant;
    for (auto* other : in_flight)
      if (other->remote_id() == remote && other->current_state() != hs_state::paused)
        return decision::pause;
    return decision::no_pending_handshake;
  };
  handshake conn1{id_b, {"/test"}, handshake::role::acceptor, decide};
  handshake conn2{id_b, {"/test"}, handshake::role::acceptor, decide};
  in_flight = {&conn1, &conn2};
  auto hello_pf = payload_of("00000017065a45454bffffffffffff4fffbfffffffffffffff0163");
  CHECK(to_hex(conn1.start()) == probe_hex);
  CHECK(to_hex(conn1.feed(hello_pf).output) == normalized_hex(vs_b_hex + "000000080a01052f74657374"s));
  CHECK(to_hex(conn2.start()) == probe_hex);
  auto paused = conn2.feed(hello_pf);
  CHECK(paused.kind == hs_status::paused);
  CHECK(paused.output.empty());
  CHECK(conn2.current_state() == hs_state::paused);
  CHECK(conn2.remote_id() == id_pf);
  auto done = conn1.feed(payload_of(syn_ack_foo_hex));
  REQUIRE(done.kind == hs_status::done);
  CHECK(to_hex(done.output) == ack_hex);
  connected[id_pf] = true;
  auto dropped = conn2.drop_paused();
  CHECK(dropped.kind == hs_status::failed);
  CHECK(to_hex(dropped.output) == drop_39_hex);
  CHECK(dropped.redundant);
  CHECK(dropped.err == ec::redundant_connection);
  CHECK(conn2.current_state() == hs_state::failed);
}

TEST_CASE("T5: a dialer with the smaller id becomes originator after probe and hello",
          "[handshake]") {
  auto from_pf = "00000005075a45454b"
                 "00000017065a45454bffffffffffff4fffbfffffffffffffff0101"
                 "000000080b01052f74657374"
                 "00000031ffffffffffff4fffbfffffffffffffff00000000000000000000000000000000"
                 "0100100006 2f7465737432 050473746f70";
  auto to_pf = "00000017065a45454b0f5c91105b8757d99d80b65568e87a440101"
               "00000016085a45454b0f5c91105b8757d99d80b65568e87a4401"
               "000000090a01062f7465737432"
               "000000010c";
  scripted_owner owner;
  handshake hs{id_b2, {"/test2"}, handshake::role::dialer, owner.callback()};
  CHECK(play(hs, id_b2, from_pf) == normalized_hex(to_pf));
  CHECK(hs.current_state() == hs_state::done);
  CHECK(owner.calls == std::vector{std::pair{id_pf, true}});
  // Unpeering: B2's BYE ping, and PF's pong echoing it.
  std::string bye;
  wire::append_ping(bye, id_b2, id_pf, wire::make_bye_payload(0x1000000000000001));
  CHECK(to_hex(bye)
        == normalized_hex("00000033 0f5c91105b8757d99d80b65568e87a44 "
                          "ffffffffffff4fffbfffffffffffffff 04 0010 0003 3c243e "
                          "425945 0100000000000010"));
  auto pong_bytes = payload_of("00000033 ffffffffffff4fffbfffffffffffffff "
                               "0f5c91105b8757d99d80b65568e87a44 05 0010 0003 3c243e "
                               "425945 0100000000000010");
  auto pong = wire::decode_node_message(pong_bytes);
  REQUIRE(pong);
  CHECK(wire::is_bye(pong->payload));
  CHECK(pong->payload == wire::make_bye_payload(0x1000000000000001));
}

TEST_CASE("T5 from the acceptor's side: the larger id answers hello with hello and responds",
          "[handshake]") {
  auto from_b2 = "00000017065a45454b0f5c91105b8757d99d80b65568e87a440101"
                 "00000016085a45454b0f5c91105b8757d99d80b65568e87a4401"
                 "000000090a01062f7465737432"
                 "000000010c"
                 "000000330f5c91105b8757d99d80b65568e87a44ffffffffffff4fffbfffffffffffffff"
                 "0400100003 3c243e 425945 0100000000000010";
  // PF's lines of T5 without the application's data frame.
  auto to_b2 = "00000005075a45454b"
               "00000017065a45454bffffffffffff4fffbfffffffffffffff0101"
               "000000080b01052f74657374"
               "00000033ffffffffffff4fffbfffffffffffffff0f5c91105b8757d99d80b65568e87a44"
               "0500100003 3c243e 425945 0100000000000010";
  scripted_owner owner;
  handshake hs{id_pf, {"/test"}, handshake::role::acceptor, owner.callback()};
  CHECK(play(hs, id_pf, from_b2, 3) == normalized_hex(to_b2));
  CHECK(owner.calls == std::vector{std::pair{id_b2, false}});
}

// -- the proceed check (§3.6) ----------------------------------------------------------------

TEST_CASE("the originator maps each proceed decision to Broker's frames", "[handshake]") {
  auto hello_pf = payload_of(wire::hello_msg{id_pf});
  auto run = [&](decision d) {
    scripted_owner owner{d};
    auto hs = handshake{id_b, {"/test"}, handshake::role::acceptor, owner.callback()};
    hs.start();
    auto out = hs.feed(hello_pf);
    CHECK(owner.calls == std::vector{std::pair{id_pf, true}});
    return std::pair{std::move(out), hs.current_state()};
  };
  SECTION("proceed sends version_select and originator_syn") {
    auto [out, st] = run(decision::proceed);
    CHECK(out.kind == hs_status::in_progress);
    CHECK(to_hex(out.output) == normalized_hex(vs_b_hex + std::string{syn_test_hex}));
    CHECK(st == hs_state::await_resp_syn_ack);
  }
  SECTION("pause sends nothing") {
    auto [out, st] = run(decision::pause);
    CHECK(out.kind == hs_status::paused);
    CHECK(out.output.empty());
    CHECK(st == hs_state::paused);
  }
  SECTION("redundant sends drop_conn 39 and closes quietly") {
    auto [out, st] = run(decision::redundant);
    CHECK(out.kind == hs_status::failed);
    CHECK(to_hex(out.output) == drop_39_hex);
    CHECK(out.redundant);
    CHECK(out.err == ec::redundant_connection);
    CHECK(st == hs_state::failed);
  }
  SECTION("no pending handshake sends drop_conn 40") {
    auto [out, st] = run(decision::no_pending_handshake);
    CHECK(out.kind == hs_status::failed);
    CHECK(to_hex(out.output)
          == drop_conn_hex(id_b, ec::logic_error,
                           "detected redundant connection but find_pending_handshake failed"));
    CHECK_FALSE(out.redundant);
  }
  SECTION("shutting down sends drop_conn 28") {
    auto [out, st] = run(decision::shutting_down);
    CHECK(out.kind == hs_status::failed);
    CHECK(to_hex(out.output) == drop_conn_hex(id_b, ec::shutting_down, "shutting down"));
    CHECK(out.err == ec::shutting_down);
    CHECK_FALSE(out.redundant);
  }
}

TEST_CASE("the responder rejects every redundant handshake with drop_conn 40", "[handshake]") {
  for (auto d : {decision::pause, decision::no_pending_handshake, decision::redundant}) {
    INFO("decision " << static_cast<int>(d));
    scripted_owner owner{d};
    handshake hs{id_b, {"/test"}, handshake::role::acceptor, owner.callback()};
    hs.start();
    REQUIRE(hs.feed(payload_of(wire::hello_msg{id_p0})).kind == hs_status::in_progress);
    auto out = hs.feed(payload_of(wire::version_select_msg{id_p0}));
    CHECK(owner.calls == std::vector{std::pair{id_p0, false}});
    CHECK(out.kind == hs_status::failed);
    CHECK(to_hex(out.output)
          == drop_conn_hex(id_b, ec::logic_error,
                           "detected redundant connection at the responder"));
    CHECK(out.err == ec::logic_error);
    CHECK_FALSE(out.redundant);
  }
  scripted_owner owner{decision::shutting_down};
  handshake hs{id_b, {"/test"}, handshake::role::dialer, owner.callback()};
  hs.start();
  auto out = hs.feed(payload_of(wire::version_select_msg{id_p0}));
  CHECK(to_hex(out.output) == drop_conn_hex(id_b, ec::shutting_down, "shutting down"));
}

// -- drop_conn and decode failures ------------------------------------------------------------

TEST_CASE("a received drop_conn ends a phase-1 handshake with its code and no answer",
          "[handshake]") {
  for (auto st : phase1_states) {
    INFO("state " << to_string(st));
    scripted_owner owner;
    // Code 39 is flagged as redundant.
    auto hs = machine_in(st, owner);
    auto out = hs->feed(payload_of(
      wire::drop_conn_msg{id_pf, ec::redundant_connection, "redundant connection"}));
    CHECK(out.kind == hs_status::failed);
    CHECK(out.output.empty());
    CHECK(out.redundant);
    CHECK(out.err == ec::redundant_connection);
    CHECK(out.err.message() == "redundant connection");
    CHECK(out.remote == id_pf);
    CHECK(hs->current_state() == hs_state::failed);
    // Other codes are plain failures.
    hs = machine_in(st, owner);
    out = hs->feed(payload_of(wire::drop_conn_msg{id_pf, ec::shutting_down, "bye"}));
    CHECK(out.kind == hs_status::failed);
    CHECK(out.output.empty());
    CHECK_FALSE(out.redundant);
    CHECK(out.err == ec::shutting_down);
    CHECK(out.err.message() == "bye");
    // Code 0 still reads as an error.
    hs = machine_in(st, owner);
    out = hs->feed(payload_of(wire::drop_conn_msg{id_pf, ec::none, ""}));
    CHECK(out.kind == hs_status::failed);
    CHECK(out.err == ec::unspecified);
  }
}

TEST_CASE("a drop_conn with an unknown code is answered with drop_conn 1 echoing its text",
          "[handshake]") {
  scripted_owner owner;
  auto hs = machine_in(hs_state::await_hello, owner);
  auto payload = from_hex("09 5a45454b ffffffffffff4fffbfffffffffffffff 29 03 666f6f");
  auto out = hs->feed(payload);
  CHECK(out.kind == hs_status::failed);
  CHECK(to_hex(out.output) == drop_conn_hex(id_b, ec::unspecified, "foo"));
  CHECK(out.err == ec::unspecified);
  CHECK(out.err.message() == "foo");
  CHECK_FALSE(out.redundant);
}

TEST_CASE("a frame that fails to decode is answered with drop_conn in every state",
          "[handshake]") {
  for (auto st : handshake_states) {
    INFO("state " << to_string(st));
    scripted_owner owner;
    auto hs = machine_in(st, owner);
    auto out = hs->feed(from_hex("07 11223344"));
    CHECK(out.kind == hs_status::failed);
    CHECK(to_hex(out.output)
          == normalized_hex("00000029 09 5a45454b 925c91105b8757d99d80b65568e87a44 26 12 "
                            "77726f6e67206d61676963206e756d626572"));
    auto again = machine_in(st, owner);
    out = again->feed(from_hex("01 7878"));
    CHECK(to_hex(out.output)
          == normalized_hex("0000002f 09 5a45454b 925c91105b8757d99d80b65568e87a44 14 18 "
                            "696e76616c6964206d657373616765207479706520746167"));
  }
}

TEST_CASE("every truncated handshake message is answered with drop_conn 20 naming it",
          "[handshake]") {
  std::vector<std::pair<wire::handshake_message, std::string>> kinds = {
    {wire::hello_msg{id_pf}, "failed to parse hello_msg"},
    {wire::probe_msg{}, "failed to parse probe_msg"},
    {wire::version_select_msg{id_pf}, "failed to parse version_select_msg"},
    {wire::drop_conn_msg{id_pf, ec::unspecified, "some text"}, "failed to parse drop_conn_msg"},
    {wire::originator_syn_msg{{"/a", "/b"}}, "failed to parse v1::originator_syn_msg"},
    {wire::responder_syn_ack_msg{{"/a", "/b"}}, "failed to parse v1::responder_syn_ack_msg"},
  };
  for (auto& [msg, text] : kinds) {
    auto payload = payload_of(msg);
    for (size_t len = 1; len < payload.size(); ++len) {
      INFO(text << ", " << len << " bytes");
      scripted_owner owner;
      auto hs = machine_in(hs_state::await_hello, owner);
      auto out = hs->feed(payload.substr(0, len));
      CHECK(out.kind == hs_status::failed);
      CHECK(to_hex(out.output) == drop_conn_hex(id_b, ec::invalid_message, text));
    }
  }
}

// -- the state table (§3.4) ------------------------------------------------------------------

TEST_CASE("each state accepts exactly the messages of Broker's table and aborts silently "
          "on the others",
          "[handshake]") {
  struct candidate {
    const char* name;
    wire::handshake_message msg;
  };
  const candidate candidates[] = {
    {"probe", wire::probe_msg{}},
    {"hello", wire::hello_msg{id_p0}},
    {"version_select", wire::version_select_msg{id_p0}},
    {"drop_conn", wire::drop_conn_msg{id_p0, ec::unspecified, "x"}},
    {"originator_syn", wire::originator_syn_msg{{"/a"}}},
    {"responder_syn_ack", wire::responder_syn_ack_msg{{"/a"}}},
    {"originator_ack", wire::originator_ack_msg{}},
  };
  const std::map<hs_state, std::vector<std::string>> accepts = {
    {hs_state::await_hello_or_version_select, {"probe", "hello", "version_select", "drop_conn"}},
    {hs_state::await_hello, {"probe", "hello", "drop_conn"}},
    {hs_state::await_version_select, {"probe", "version_select", "drop_conn"}},
    {hs_state::await_orig_syn, {"originator_syn"}},
    {hs_state::await_resp_syn_ack, {"responder_syn_ack"}},
    {hs_state::await_orig_ack, {"originator_ack"}},
  };
  for (auto& [st, accepted] : accepts) {
    for (auto& c : candidates) {
      INFO(c.name << " in state " << to_string(st));
      scripted_owner owner;
      auto hs = machine_in(st, owner);
      auto out = hs->feed(payload_of(c.msg));
      bool listed = std::find(accepted.begin(), accepted.end(), c.name) != accepted.end();
      if (listed) {
        CHECK(out.err != ec::unexpected_handshake_message);
        if (std::string_view{c.name} == "probe") {
          CHECK(out.kind == hs_status::in_progress);
          CHECK(out.output.empty());
          CHECK(hs->current_state() == st);
        }
      } else {
        CHECK(out.kind == hs_status::failed);
        CHECK(out.output.empty());
        CHECK(out.err == ec::unexpected_handshake_message);
        CHECK(out.err.message()
              == "unexpected "s + c.name + " in state " + std::string{to_string(st)});
        CHECK(hs->current_state() == hs_state::failed);
      }
    }
  }
}

TEST_CASE("a dialer that receives a hello from a smaller id sends a second hello",
          "[handshake]") {
  scripted_owner owner;
  handshake hs{id_b, {"/test"}, handshake::role::dialer, owner.callback()};
  CHECK(to_hex(hs.start()) == hello_b_hex);
  auto out = hs.feed(payload_of(wire::hello_msg{id_p0}));
  CHECK(out.kind == hs_status::in_progress);
  CHECK(to_hex(out.output) == hello_b_hex);
  CHECK(hs.current_state() == hs_state::await_version_select);
  CHECK(owner.calls.empty());
}

// -- equal ids, pausing and misuse ------------------------------------------------------------

TEST_CASE("a peer with our own id fails the handshake instead of hanging", "[handshake]") {
  auto expected = drop_conn_hex(id_b, ec::peer_invalid, "remote endpoint id equals our own");
  SECTION("hello at the acceptor") {
    scripted_owner owner;
    auto hs = machine_in(hs_state::await_hello, owner);
    auto out = hs->feed(payload_of(wire::hello_msg{id_b}));
    CHECK(out.kind == hs_status::failed);
    CHECK(out.err == ec::peer_invalid);
    CHECK(to_hex(out.output) == expected);
    CHECK(owner.calls.empty());
  }
  SECTION("hello or version_select at the dialer") {
    for (auto msg : {wire::handshake_message{wire::hello_msg{id_b}},
                     wire::handshake_message{wire::version_select_msg{id_b}}}) {
      scripted_owner owner;
      auto hs = machine_in(hs_state::await_hello_or_version_select, owner);
      auto out = hs->feed(payload_of(msg));
      CHECK(out.kind == hs_status::failed);
      CHECK(to_hex(out.output) == expected);
      CHECK(owner.calls.empty());
    }
  }
  SECTION("two machines with the same id both end") {
    scripted_owner owner;
    handshake dialer{id_b, {}, handshake::role::dialer, owner.callback()};
    handshake acceptor{id_b, {}, handshake::role::acceptor, owner.callback()};
    auto to_acceptor = dialer.start();
    auto to_dialer = acceptor.start();
    auto acc_out = acceptor.feed(std::string_view{to_acceptor}.substr(4));
    CHECK(acc_out.kind == hs_status::failed);
    CHECK(dialer.feed(std::string_view{to_dialer}.substr(4)).kind == hs_status::in_progress);
    auto dial_out = dialer.feed(std::string_view{acc_out.output}.substr(4));
    CHECK(dial_out.kind == hs_status::failed);
    CHECK(dial_out.err == ec::peer_invalid);
    CHECK(owner.calls.empty());
  }
}

TEST_CASE("a paused handshake ignores input until drop_paused", "[handshake]") {
  scripted_owner owner{decision::pause};
  auto hs = machine_in(hs_state::await_hello, owner);
  REQUIRE(hs->feed(payload_of(wire::hello_msg{id_pf})).kind == hs_status::paused);
  for (auto payload : {payload_of(wire::responder_syn_ack_msg{{"/a"}}), "garbage"s, ""s}) {
    auto out = hs->feed(payload);
    CHECK(out.kind == hs_status::paused);
    CHECK(out.output.empty());
    CHECK(hs->current_state() == hs_state::paused);
  }
  auto out = hs->drop_paused();
  CHECK(to_hex(out.output) == drop_39_hex);
  CHECK(out.redundant);
  auto again = hs->drop_paused();
  CHECK(again.kind == hs_status::failed);
  CHECK(again.err == ec::invalid_handshake_state);
  CHECK(again.output.empty());
  CHECK(hs->current_state() == hs_state::failed);
}

TEST_CASE("calls outside the handshake's life change nothing and say so", "[handshake]") {
  scripted_owner owner;
  handshake hs{id_b, {"/test"}, handshake::role::acceptor, owner.callback()};
  auto early = hs.feed(payload_of(wire::probe_msg{}));
  CHECK(early.kind == hs_status::failed);
  CHECK(early.err == ec::invalid_handshake_state);
  CHECK(hs.current_state() == hs_state::init);
  CHECK(hs.drop_paused().err == ec::invalid_handshake_state);
  CHECK_FALSE(hs.start().empty());
  CHECK(hs.start().empty());
  hs.feed(payload_of(wire::hello_msg{id_pf}));
  REQUIRE(hs.feed(payload_of(wire::responder_syn_ack_msg{})).kind == hs_status::done);
  auto late = hs.feed(payload_of(wire::probe_msg{}));
  CHECK(late.kind == hs_status::failed);
  CHECK(late.err == ec::invalid_handshake_state);
  CHECK(late.output.empty());
  CHECK(hs.current_state() == hs_state::done);
}

TEST_CASE("state names are Broker's", "[handshake]") {
  CHECK(to_string(hs_state::await_hello_or_version_select) == "await_hello_or_version_select");
  CHECK(to_string(hs_state::await_hello) == "await_hello");
  CHECK(to_string(hs_state::await_version_select) == "await_version_select");
  CHECK(to_string(hs_state::await_orig_syn) == "await_orig_syn");
  CHECK(to_string(hs_state::await_resp_syn_ack) == "await_resp_syn_ack");
  CHECK(to_string(hs_state::await_orig_ack) == "await_orig_ack");
  CHECK(to_string(hs_state::paused) == "paused");
}

TEST_CASE("the own filter goes out sorted, deduplicated and exactly as given",
          "[handshake]") {
  scripted_owner owner;
  filter_type filter{"/b", "/a", "/b"};
  handshake hs{id_b, filter, handshake::role::acceptor, owner.callback()};
  hs.start();
  auto out = hs.feed(payload_of(wire::hello_msg{id_pf}));
  wire::frame_reader reader;
  reader.feed(out.output);
  REQUIRE(reader.next().kind == wire::frame_reader::status::frame); // version_select
  auto syn = reader.next();
  REQUIRE(syn.kind == wire::frame_reader::status::frame);
  auto msg = wire::decode_handshake(syn.payload);
  REQUIRE(msg);
  auto& sent = std::get<wire::originator_syn_msg>(*msg).filter;
  CHECK(sent == filter_type{"/a", "/b"});
  auto done = hs.feed(payload_of(wire::responder_syn_ack_msg{{"/x"}}));
  REQUIRE(done.kind == hs_status::done);
  CHECK(done.remote_filter == filter_type{"/x"});
}

// -- simultaneous dialing ---------------------------------------------------------------------

namespace {

/// A node's bookkeeping as Broker keeps it (§3.6), reduced to what the handshake needs.
struct sim_node;

/// One side of one simulated connection.
struct sim_end {
  sim_node* node = nullptr;
  sim_end* peer = nullptr;
  std::unique_ptr<handshake> hs;
  std::deque<std::string> inbox; // frames sent by the peer, not yet read
  bool set_status = false;       // our proceed moved the node's status to connecting
  bool closed = false;           // we closed the connection
  bool quiet = false;            // closed as redundant (no error, no retry)
  bool sent_drop_conn = false;

  bool terminal() const {
    auto st = hs->current_state();
    return st == hs_state::done || st == hs_state::failed;
  }
};

struct sim_node {
  explicit sim_node(endpoint_id id) : id(id) {}

  endpoint_id id;
  std::map<endpoint_id, bool> connected; // false = connecting
  std::vector<sim_end*> ends;

  decision decide(sim_end& self, const endpoint_id& remote, bool as_originator) {
    auto i = connected.find(remote);
    if (i == connected.end()) {
      connected.emplace(remote, false);
      self.set_status = true;
      return decision::proceed;
    }
    if (i->second)
      return decision::redundant;
    if (as_originator)
      for (auto* other : ends)
        if (other != &self && !other->terminal()
            && other->hs->current_state() != hs_state::paused
            && other->hs->remote_id() == remote)
          return decision::pause;
    return decision::no_pending_handshake;
  }
};

void send(sim_end& from, const std::string& bytes) {
  wire::frame_reader reader;
  reader.feed(bytes);
  for (auto res = reader.next(); res.kind == wire::frame_reader::status::frame;
       res = reader.next())
    from.peer->inbox.emplace_back(res.payload);
  if (!bytes.empty() && bytes[4] == static_cast<char>(wire::message_type::drop_conn))
    from.sent_drop_conn = true;
}

void handle(sim_end& end, handshake::outcome out);

/// A handshake with `remote` ended on this node: drop the handshakes paused behind it.
void release_paused(sim_node& node, const endpoint_id& remote) {
  for (auto* other : node.ends)
    if (other->hs->current_state() == hs_state::paused && other->hs->remote_id() == remote)
      handle(*other, other->hs->drop_paused());
}

void handle(sim_end& end, handshake::outcome out) {
  send(end, out.output);
  auto& node = *end.node;
  if (out.kind == hs_status::done) {
    node.connected[out.remote] = true;
    release_paused(node, out.remote);
  } else if (out.kind == hs_status::failed) {
    auto remote = end.hs->remote_id();
    if (out.redundant) {
      // A received 39 counts only while another connection to the peer is live (§3.6).
      auto i = node.connected.find(remote);
      end.quiet = !out.output.empty() || i != node.connected.end();
    }
    if (end.set_status)
      node.connected.erase(remote);
    end.closed = true;
    release_paused(node, remote);
  }
}

/// Connects `dialer` on node a to an acceptor on node b.
std::pair<std::unique_ptr<sim_end>, std::unique_ptr<sim_end>> connect(sim_node& a,
                                                                        sim_node& b) {
  auto d = std::make_unique<sim_end>();
  auto c = std::make_unique<sim_end>();
  d->node = &a;
  c->node = &b;
  d->peer = c.get();
  c->peer = d.get();
  auto* dp = d.get();
  auto* cp = c.get();
  d->hs = std::make_unique<handshake>(a.id, filter_type{"/a"}, handshake::role::dialer,
                                      [dp](const endpoint_id& r, bool o) {
                                        return dp->node->decide(*dp, r, o);
                                      });
  c->hs = std::make_unique<handshake>(b.id, filter_type{"/b"}, handshake::role::acceptor,
                                      [cp](const endpoint_id& r, bool o) {
                                        return cp->node->decide(*cp, r, o);
                                      });
  a.ends.push_back(dp);
  b.ends.push_back(cp);
  return {std::move(d), std::move(c)};
}

} // namespace

TEST_CASE("two nodes dialing each other at once end up with exactly one connection",
          "[handshake]") {
  int first_won = 0; // both connections must win in some orders
  for (unsigned seed = 1; seed <= 200; ++seed) {
    INFO("seed " << seed);
    std::mt19937 rng{seed};
    sim_node x{id_b2}; // the smaller id: originator on both connections
    sim_node y{id_pf};
    auto [x1, y1] = connect(x, y); // x dials y
    auto [y2, x2] = connect(y, x); // y dials x
    std::vector<sim_end*> ends = {x1.get(), y1.get(), y2.get(), x2.get()};
    std::shuffle(ends.begin(), ends.end(), rng);
    for (auto* end : ends)
      send(*end, end->hs->start());
    // Deliver one frame at a time to a random end until nothing can happen any more.
    for (;;) {
      std::vector<sim_end*> ready;
      for (auto* end : ends) {
        bool paused = end->hs->current_state() == hs_state::paused;
        if (!end->closed && !paused && !end->terminal() && !end->inbox.empty())
          ready.push_back(end);
      }
      if (ready.empty())
        break;
      auto* end = ready[std::uniform_int_distribution<size_t>{0, ready.size() - 1}(rng)];
      auto frame = std::move(end->inbox.front());
      end->inbox.pop_front();
      handle(*end, end->hs->feed(frame));
    }
    auto both_done = [](sim_end& a, sim_end& b) {
      return a.hs->current_state() == hs_state::done && b.hs->current_state() == hs_state::done;
    };
    auto done1 = both_done(*x1, *y1);
    auto done2 = both_done(*x2, *y2);
    CHECK(done1 != done2);
    first_won += done1 ? 1 : 0;
    auto [x_loser, y_loser] = done1 ? std::tie(x2, y2) : std::tie(x1, y1);
    CHECK(x_loser->hs->current_state() == hs_state::failed);
    CHECK(x_loser->sent_drop_conn);
    CHECK(x_loser->quiet);
    CHECK(y_loser->hs->current_state() == hs_state::failed);
    CHECK_FALSE(y_loser->sent_drop_conn);
    CHECK(y_loser->quiet);
    CHECK(x.connected == std::map<endpoint_id, bool>{{id_pf, true}});
    CHECK(y.connected == std::map<endpoint_id, bool>{{id_b2, true}});
  }
  CHECK(first_won > 0);
  CHECK(first_won < 200);
}

// -- robustness -------------------------------------------------------------------------------

TEST_CASE("random handshake frames never crash the machine and failures end it",
          "[handshake]") {
  std::mt19937 rng{1121};
  auto byte = std::uniform_int_distribution<int>{0, 255};
  const std::string valid[] = {
    payload_of(wire::probe_msg{}),
    payload_of(wire::hello_msg{id_p0}),
    payload_of(wire::hello_msg{id_pf}),
    payload_of(wire::version_select_msg{id_p0}),
    payload_of(wire::version_select_msg{id_pf}),
    payload_of(wire::originator_syn_msg{{"/x"}}),
    payload_of(wire::responder_syn_ack_msg{{"/y"}}),
    payload_of(wire::originator_ack_msg{}),
  };
  for (int round = 0; round < 3000; ++round) {
    scripted_owner owner{static_cast<decision>(round % 5)};
    auto role = round % 2 ? handshake::role::dialer : handshake::role::acceptor;
    handshake hs{id_b, {"/test"}, role, owner.callback()};
    hs.start();
    for (int step = 0; step < 8; ++step) {
      std::string payload;
      if (byte(rng) < 160) {
        payload = valid[static_cast<size_t>(byte(rng)) % std::size(valid)];
        if (byte(rng) < 40 && !payload.empty())
          payload[static_cast<size_t>(byte(rng)) % payload.size()] = static_cast<char>(byte(rng));
      } else {
        payload.resize(static_cast<size_t>(byte(rng) % 40));
        for (auto& c : payload)
          c = static_cast<char>(byte(rng));
      }
      auto before = hs.current_state();
      auto out = hs.feed(payload);
      if (before == hs_state::done || before == hs_state::failed || before == hs_state::paused) {
        CHECK(out.output.empty());
        CHECK(hs.current_state() == before);
        continue;
      }
      if (out.kind == hs_status::failed) {
        CHECK(hs.current_state() == hs_state::failed);
        if (!out.output.empty()) {
          auto answer = wire::decode_handshake(std::string_view{out.output}.substr(4));
          REQUIRE(answer);
          CHECK(std::get<wire::drop_conn_msg>(*answer).code == out.err.code());
        }
      }
    }
  }
}
