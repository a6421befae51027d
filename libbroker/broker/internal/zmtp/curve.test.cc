#include "broker/internal/zmtp/curve.hh"

#include "broker/internal/zmtp/session.hh"
#include "broker/internal/zmtp/zmtp.test.hh"

#include <catch2/catch.hpp>

#include <string>

// CURVE: keys and their Z85 text, the handshake between two sessions, and what tampering,
// replays and wrong keys do (doc/protocol/zeromq.md §5).

using namespace broker::internal::zmtp;
using namespace broker::internal::zmtp::test;
using namespace std::literals;

namespace {

using kind = event::kind;

// The example key pairs of libzmq's zmq_curve(7) manual page.
constexpr auto client_public_z85 = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
constexpr auto client_secret_z85 = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
constexpr auto server_public_z85 = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
constexpr auto server_secret_z85 = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";

keypair pair_of(const char* public_z85, const char* secret_z85) {
  return keypair{*key_from_z85(public_z85), *key_from_z85(secret_z85)};
}

session_config curve_server_config(socket_type type = socket_type::xpub) {
  session_config cfg;
  cfg.type = type;
  cfg.server = true;
  cfg.mech = mechanism::curve;
  cfg.curve_keys = pair_of(server_public_z85, server_secret_z85);
  return cfg;
}

session_config curve_client_config(socket_type type = socket_type::xsub) {
  session_config cfg;
  cfg.type = type;
  cfg.server = false;
  cfg.mech = mechanism::curve;
  cfg.curve_keys = pair_of(client_public_z85, client_secret_z85);
  cfg.curve_server_key = *key_from_z85(server_public_z85);
  return cfg;
}

// Splits a byte stream of command frames into frame bodies (handshake inspection).
std::vector<std::string> command_bodies(std::string_view bytes) {
  std::vector<std::string> out;
  while (!bytes.empty()) {
    frame_header h;
    error err;
    REQUIRE(parse_frame_header(bytes, h, err) == parse_status::ok);
    out.emplace_back(bytes.substr(h.header_size, h.size));
    bytes.remove_prefix(h.header_size + h.size);
  }
  return out;
}

} // namespace

TEST_CASE("the zmq_curve(7) example keys decode and their public keys derive", "[zmtp]") {
  auto client = pair_of(client_public_z85, client_secret_z85);
  auto server = pair_of(server_public_z85, server_secret_z85);
  CHECK(public_key_of(client.secret_key) == client.public_key);
  CHECK(public_key_of(server.secret_key) == server.public_key);
  CHECK(to_z85(client.public_key) == client_public_z85);
  // Zeek's documented example pair (Cluster::Backend::ZeroMQ::generate_keypair()).
  auto zeek = pair_of("l2A9cf[>&X7u=.GZFdHI=nz6QT6{$u^weYPEWJb/",
                      "Z0eCkbrKkQBkO90Qb[j5mngd[0%Cl*bo}0<D+&vp");
  CHECK(public_key_of(zeek.secret_key) == zeek.public_key);
  CHECK(!key_from_z85("short"));
  CHECK(!key_from_z85(std::string(40, ' ')));
  auto fresh = generate_keypair();
  CHECK(public_key_of(fresh.secret_key) == fresh.public_key);
  CHECK(fresh.public_key != generate_keypair().public_key);
}

TEST_CASE("a CURVE handshake completes and carries the client's key", "[zmtp]") {
  std::vector<key> asked;
  auto cfg = curve_server_config();
  cfg.authorize = [&](const key& k) {
    asked.push_back(k);
    return true;
  };
  link l{cfg, curve_client_config()};
  // Sizes of the handshake commands (RFC 26): HELLO 200, WELCOME 168, INITIATE 257 +
  // metadata (Socket-Type=XSUB: 20), READY 30 + metadata (Socket-Type=XPUB: 20).
  auto client_out = l.b.take_output();
  auto server_out = l.a.take_output();
  CHECK(server_out.substr(12, 5) == "CURVE");
  CHECK(server_out[32] == 1);
  CHECK(client_out[32] == 0);
  l.a.feed(client_out, l.a_events);
  l.b.feed(server_out, l.b_events);
  auto hello = l.b.take_output();
  CHECK(command_bodies(hello).at(0).size() == 200);
  l.a.feed(hello, l.a_events);
  auto welcome = l.a.take_output();
  CHECK(command_bodies(welcome).at(0).size() == 168);
  l.b.feed(welcome, l.b_events);
  auto initiate = l.b.take_output();
  CHECK(command_bodies(initiate).at(0).size() == 257 + 20);
  l.a.feed(initiate, l.a_events);
  auto ready = l.a.take_output();
  CHECK(command_bodies(ready).at(0).size() == 30 + 20);
  l.b.feed(ready, l.b_events);
  CHECK(kinds(l.a_events) == std::vector{kind::ready});
  CHECK(kinds(l.b_events) == std::vector{kind::ready});
  REQUIRE(asked.size() == 1);
  CHECK(to_z85(asked[0]) == client_public_z85);
  CHECK(l.a.peer().has_client_key);
  CHECK(l.a.peer().type == socket_type::xsub);
  CHECK(l.b.peer().type == socket_type::xpub);
}

TEST_CASE("CURVE traffic: events, subscriptions and heartbeats are sealed", "[zmtp]") {
  link l{curve_server_config(), curve_client_config()};
  l.pump();
  REQUIRE(l.a.ready());
  REQUIRE(l.b.ready());
  // A pre-encoded (plain) event must not be written as it is under CURVE.
  CHECK_FALSE(l.a.writes_plain());
  CHECK_FALSE(l.b.writes_plain());
  // A 4-frame event, sealed per connection: nothing of it appears in clear.
  const std::string_view frames[] = {"zeek/event/x", "node-a", "broker-bin-v1", "payload!"};
  string_sink sink;
  REQUIRE(l.a.write_message(frames, 4, sink));
  CHECK(sink.out.find("zeek/event") == std::string::npos);
  CHECK(sink.out.size() == 4 * (2 + message_overhead) + 12 + 6 + 13 + 8);
  auto events = l.b.feed(sink.out);
  REQUIRE(kinds(events) == std::vector{kind::message});
  for (size_t i = 0; i < 4; ++i)
    CHECK(events[0].msg.frame(i) == frames[i]);
  // Subscriptions from the XSUB client, both forms.
  REQUIRE(l.b.subscribe("zeek/"));
  auto sub = l.b.take_output();
  CHECK(sub.find("SUBSCRIBE") == std::string::npos);
  events = l.a.feed(sub);
  REQUIRE(kinds(events) == std::vector{kind::subscribe});
  CHECK(events[0].data == "zeek/");
  // PING from the server, PONG from the client.
  REQUIRE(l.a.ping(100, "hb"));
  l.b.feed(l.a.take_output());
  events = l.a.feed(l.b.take_output());
  REQUIRE(kinds(events) == std::vector{kind::pong});
  CHECK(events[0].data == "hb");
  CHECK(l.b.peer_ttl() == 100);
}

TEST_CASE("CURVE control output and messages keep nonce order", "[zmtp]") {
  link l{curve_server_config(), curve_client_config()};
  l.pump();
  // The client queues a subscription, then writes a message: the subscription's nonce is
  // lower, so write_message() must put it first.
  REQUIRE(l.b.subscribe("a"));
  const std::string_view frames[] = {"x"};
  string_sink sink;
  REQUIRE(l.b.write_message(frames, 1, sink));
  CHECK(!l.b.has_output());
  auto events = l.a.feed(sink.out);
  CHECK(kinds(events) == std::vector{kind::subscribe, kind::message});
}

TEST_CASE("a client with the wrong server key is refused on both sides", "[zmtp]") {
  auto client_cfg = curve_client_config();
  client_cfg.curve_server_key = generate_keypair().public_key;
  link l{curve_server_config(), client_cfg};
  l.pump();
  REQUIRE(kinds(l.a_events) == std::vector{kind::failed});
  CHECK(l.a_events[0].err.code == errc::crypto_failure);
  CHECK_THAT(l.a_events[0].err.reason, Catch::Contains("another server public key"));
  // The server closes without a word (as libzmq does); the client learns it from the close.
  CHECK(l.b_events.empty());
  CHECK(l.b.peer_closed().code == errc::peer_closed);
  CHECK_THAT(l.b.failure().reason, Catch::Contains("after our HELLO"));
}

TEST_CASE("a server that refuses the client key sends ERROR 400", "[zmtp]") {
  auto cfg = curve_server_config();
  cfg.authorize = [](const key&) { return false; };
  link l{cfg, curve_client_config()};
  l.pump();
  REQUIRE(kinds(l.a_events) == std::vector{kind::failed});
  CHECK(l.a_events[0].err.code == errc::access_denied);
  CHECK_THAT(l.a_events[0].err.reason, Catch::Contains(client_public_z85));
  REQUIRE(kinds(l.b_events) == std::vector{kind::failed});
  CHECK(l.b_events[0].err.code == errc::peer_error);
  CHECK_THAT(l.b_events[0].err.reason, Catch::Contains("'400'"));
}

TEST_CASE("a tampered handshake command fails the handshake", "[zmtp]") {
  // Flip one byte in each box of each handshake command, at several places.
  for (int which = 0; which < 3; ++which) {
    for (size_t offset : {30, 100, 150, 190}) {
      link l{curve_server_config(), curve_client_config()};
      l.b.feed(l.a.take_output(), l.b_events);
      l.a.feed(l.b.take_output(), l.a_events); // the client's greeting and HELLO
      auto welcome = l.a.take_output();
      if (which == 0) {
        // Tamper with HELLO: replay it modified into a fresh server.
        link m{curve_server_config(), curve_client_config()};
        m.b.feed(m.a.take_output());
        auto out = m.b.take_output();
        // Past the padding (which is not authenticated, as in libzmq): C', nonce, box.
        out[64 + 2 + std::min<size_t>(offset + 60, 199)] ^= 0x20;
        auto events = m.a.feed(out);
        REQUIRE(kinds(events) == std::vector{kind::failed});
        continue;
      }
      if (which == 1) {
        welcome[2 + std::min<size_t>(offset, 167)] ^= 0x20;
        l.b.feed(welcome, l.b_events);
        REQUIRE(kinds(l.b_events) == std::vector{kind::failed});
        continue;
      }
      l.b.feed(welcome, l.b_events);
      auto initiate = l.b.take_output();
      initiate[3 + offset] ^= 0x20;
      l.a.feed(initiate, l.a_events);
      REQUIRE(kinds(l.a_events) == std::vector{kind::failed});
      CHECK(l.a_events[0].err.code != errc::none);
    }
  }
}

TEST_CASE("replayed, forged and plaintext frames after a CURVE handshake fail", "[zmtp]") {
  link l{curve_server_config(), curve_client_config()};
  l.pump();
  const std::string_view frames[] = {"one"};
  string_sink first;
  REQUIRE(l.a.write_message(frames, 1, first));
  CHECK(kinds(l.b.feed(first.out)) == std::vector{kind::message});
  SECTION("a replay") {
    auto events = l.b.feed(first.out);
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::bad_nonce);
  }
  SECTION("a flipped ciphertext bit") {
    string_sink next;
    REQUIRE(l.a.write_message(frames, 1, next));
    next.out.back() ^= 1;
    auto events = l.b.feed(next.out);
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::crypto_failure);
  }
  SECTION("a plaintext frame") {
    auto events = l.b.feed(hex("00 03 6f 6e 65"));
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::unexpected_command);
  }
  SECTION("a short MESSAGE") {
    std::string bytes;
    append_command(bytes, "MESSAGE", "12345678");
    auto events = l.b.feed(bytes);
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::malformed_command);
  }
}

TEST_CASE("CURVE handshake commands with wrong sizes or order fail", "[zmtp]") {
  session server{curve_server_config()};
  auto client_greeting = make_greeting(mechanism::curve, false);
  SECTION("a short HELLO") {
    std::string bytes = client_greeting;
    append_command(bytes, "HELLO", std::string(100, '\0'));
    auto events = server.feed(bytes);
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK_THAT(events[0].err.reason, Catch::Contains("not 200"));
  }
  SECTION("INITIATE before HELLO") {
    std::string bytes = client_greeting;
    append_command(bytes, "INITIATE", std::string(300, '\0'));
    auto events = server.feed(bytes);
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::unexpected_command);
  }
  SECTION("the as-server flag is not trusted: libzmq 4.3 servers send 0") {
    CHECK(server.feed(make_greeting(mechanism::curve, true)).empty());
    std::string bytes;
    append_command(bytes, "WELCOME", std::string(160, '\0'));
    auto events = server.feed(bytes);
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK_THAT(events[0].err.reason, Catch::Contains("expected HELLO"));
  }
  SECTION("READY before WELCOME at a client") {
    session client{curve_client_config()};
    std::string bytes = make_greeting(mechanism::curve, true);
    append_command(bytes, "READY", std::string(40, '\0'));
    auto events = client.feed(bytes);
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::unexpected_command);
    CHECK_THAT(events[0].err.reason, Catch::Contains("expected WELCOME"));
  }
  SECTION("a data frame during the CURVE handshake") {
    std::string bytes = client_greeting;
    append_frame_header(bytes, false, false, 3);
    bytes += "abc";
    auto events = server.feed(bytes);
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::malformed_frame);
  }
  SECTION("a server key that is no key (all zeros) fails the client at once") {
    auto cfg = curve_client_config();
    cfg.curve_server_key = key{};
    session client{cfg};
    auto events = client.feed(make_greeting(mechanism::curve, true));
    REQUIRE(kinds(events) == std::vector{kind::failed});
    CHECK(events[0].err.code == errc::crypto_failure);
  }
}
