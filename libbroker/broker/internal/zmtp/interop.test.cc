// Interop of zmtp::session with real libzmq sockets (Debian bookworm: libzmq 4.3.4) over TCP
// on 127.0.0.1: our session drives a plain blocking socket, libzmq runs its own I/O thread.
// Every wait is bounded (5 s). Built only when CMake found libzmq (BROKER_HAVE_LIBZMQ); the
// library itself never links libzmq.

#include <catch2/catch.hpp>

#ifndef BROKER_HAVE_LIBZMQ

TEST_CASE("libzmq interop", "[zmtp][interop]") {
  WARN("skipped: libzmq was not found at configure time (scripts/install-deps installs "
       "libzmq3-dev)");
  SUCCEED();
}

#else

#include "broker/internal/zmtp/session.hh"
#include "broker/internal/zmtp/zmtp.test.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zmq.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace broker::internal::zmtp;
using namespace broker::internal::zmtp::test;
using namespace std::literals;

namespace {

using kind = event::kind;
using clock_type = std::chrono::steady_clock;

constexpr int wait_ms = 5000;

// -- plain TCP --------------------------------------------------------------------------------

int tcp_listen(uint16_t& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  port = ntohs(addr.sin_port);
  return fd;
}

int tcp_accept(int listener) {
  pollfd p{listener, POLLIN, 0};
  REQUIRE(::poll(&p, 1, wait_ms) == 1);
  int fd = ::accept(listener, nullptr, nullptr);
  REQUIRE(fd >= 0);
  return fd;
}

int tcp_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

void send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0)
      return; // The peer is gone; the read side reports it.
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// One TCP connection driven by a session.
struct conn {
  int fd;
  session s;
  std::vector<event> events;
  std::string raw; // everything the peer sent
  bool closed = false;

  conn(int fd, session_config cfg) : fd(fd), s(std::move(cfg)) {}
  ~conn() { ::close(fd); }

  void flush() {
    if (s.has_output())
      send_all(fd, s.take_output());
  }

  // Reads and answers until `done` holds, the peer closes, or `ms` pass; returns `done()`.
  bool run_until(const std::function<bool()>& done, int ms = wait_ms) {
    auto deadline = clock_type::now() + std::chrono::milliseconds(ms);
    for (;;) {
      flush();
      if (done())
        return true;
      if (closed || clock_type::now() >= deadline)
        return false;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0)
        continue;
      char buf[65536];
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) {
        closed = true;
        s.peer_closed();
        continue;
      }
      raw.append(buf, static_cast<size_t>(n));
      s.feed({buf, static_cast<size_t>(n)}, events);
    }
  }

  // Keeps the connection serviced (PINGs answered) for `ms`.
  void run_for(int ms) { run_until([] { return false; }, ms); }

  bool has(kind k, size_t count = 1) const {
    size_t n = 0;
    for (auto& ev : events)
      n += ev.what == k;
    return n >= count;
  }

  const event* first(kind k) const {
    for (auto& ev : events)
      if (ev.what == k)
        return &ev;
    return nullptr;
  }

  void write(const std::vector<std::string_view>& frames) {
    string_sink sink;
    REQUIRE(s.write_message(frames.data(), frames.size(), sink));
    send_all(fd, sink.out);
  }
};

// -- libzmq -----------------------------------------------------------------------------------

struct zmq_context {
  void* ctx = zmq_ctx_new();
  ~zmq_context() { zmq_ctx_term(ctx); }
};

struct zsock {
  void* sock;
  zsock(zmq_context& c, int type) : sock(zmq_socket(c.ctx, type)) {
    REQUIRE(sock != nullptr);
    set(ZMQ_LINGER, 0);
    set(ZMQ_RCVTIMEO, wait_ms);
    set(ZMQ_SNDTIMEO, wait_ms);
  }
  ~zsock() { zmq_close(sock); }

  // Lets the socket process its pending commands (a bound socket attaches a new
  // connection's pipe only when its owner calls into it).
  void poke() {
    int events = 0;
    size_t len = sizeof(events);
    zmq_getsockopt(sock, ZMQ_EVENTS, &events, &len);
  }

  void set(int option, int value) {
    REQUIRE(zmq_setsockopt(sock, option, &value, sizeof(value)) == 0);
  }
  void set(int option, std::string_view value) {
    REQUIRE(zmq_setsockopt(sock, option, value.data(), value.size()) == 0);
  }
  void connect(uint16_t port) {
    REQUIRE(zmq_connect(sock, ("tcp://127.0.0.1:" + std::to_string(port)).c_str()) == 0);
  }
  uint16_t bind() {
    REQUIRE(zmq_bind(sock, "tcp://127.0.0.1:*") == 0);
    char endpoint[256];
    size_t len = sizeof(endpoint);
    REQUIRE(zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, endpoint, &len) == 0);
    return static_cast<uint16_t>(std::stoi(std::strrchr(endpoint, ':') + 1));
  }
  void send(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      REQUIRE(zmq_send(sock, frames[i].data(), frames[i].size(),
                       i + 1 < frames.size() ? ZMQ_SNDMORE : 0)
              == static_cast<int>(frames[i].size()));
  }
  // One multipart message (empty on timeout).
  std::vector<std::string> recv() {
    std::vector<std::string> frames;
    for (;;) {
      zmq_msg_t msg;
      zmq_msg_init(&msg);
      if (zmq_msg_recv(&msg, sock, 0) < 0) {
        zmq_msg_close(&msg);
        return frames;
      }
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
      bool more = zmq_msg_more(&msg);
      zmq_msg_close(&msg);
      if (!more)
        return frames;
    }
  }
};

const std::vector<std::string_view> zeek_event = {"zeek/cluster/nodeid/w1/", "w1-1234",
                                                  "broker-bin-v1", "\x01\x00\xff\x7f"sv};

std::vector<std::string> strings(const std::vector<std::string_view>& views) {
  return {views.begin(), views.end()};
}

session_config config(socket_type type, bool server) {
  return null_config(type, server);
}

} // namespace

// -- NULL: the forwarder's listening sockets ---------------------------------------------------

TEST_CASE("a libzmq XSUB (a Zeek node) connects to our XPUB", "[zmtp][interop]") {
  zmq_context ctx;
  uint16_t port = 0;
  int listener = tcp_listen(port);
  zsock node_xsub{ctx, ZMQ_XSUB};
  // A subscription made before connecting: libzmq replays it when the pipe attaches.
  node_xsub.send({"\x01" "early/"});
  node_xsub.connect(port);
  conn c{tcp_accept(listener), config(socket_type::xpub, true)};
  ::close(listener);
  REQUIRE(c.run_until([&] { return c.has(kind::subscribe); }));
  CHECK(c.s.peer().type == socket_type::xsub);
  CHECK(c.s.peer().minor == 1);
  CHECK(c.first(kind::subscribe)->data == "early/");
  // libzmq 4.3.4 replays cached subscriptions as ZMTP 3.1 SUBSCRIBE commands...
  CHECK(c.raw.find("\x09SUBSCRIBE" "early/") != std::string::npos);
  // ...but passes what its user sends (Zeek: 0x01 + prefix) through in message form.
  c.raw.clear();
  node_xsub.send({"\x01" "zeek/"});
  REQUIRE(c.run_until([&] { return c.has(kind::subscribe, 2); }));
  CHECK(c.events.back().data == "zeek/");
  CHECK(c.raw == hex("00 06 01 7a 65 65 6b 2f"));
  // A 4-frame event to the node, byte-exact.
  c.write(zeek_event);
  CHECK(node_xsub.recv() == strings(zeek_event));
  // A large multipart message (long frames) both ways.
  std::string big(100000, 'b');
  c.write({"zeek/big", big, ""});
  CHECK(node_xsub.recv() == std::vector<std::string>{"zeek/big", big, ""});
  node_xsub.send({"\x00" "zeek/"s});
  REQUIRE(c.run_until([&] { return c.has(kind::unsubscribe); }));
  CHECK(c.first(kind::unsubscribe)->data == "zeek/");
}

TEST_CASE("a libzmq XPUB (a Zeek node) connects to our XSUB", "[zmtp][interop]") {
  zmq_context ctx;
  uint16_t port = 0;
  int listener = tcp_listen(port);
  zsock node_xpub{ctx, ZMQ_XPUB};
  node_xpub.set(ZMQ_XPUB_VERBOSE, 1);
  node_xpub.set(ZMQ_XPUB_NODROP, 1);
  node_xpub.connect(port);
  conn c{tcp_accept(listener), config(socket_type::xsub, true)};
  ::close(listener);
  REQUIRE(c.run_until([&] { return c.s.ready(); }));
  CHECK(c.s.peer().type == socket_type::xpub);
  // Our subscription as a SUBSCRIBE command: the node's XPUB reports it as 0x01 + prefix.
  REQUIRE(c.s.subscribe("zeek/"));
  c.flush();
  CHECK(node_xpub.recv() == std::vector<std::string>{"\x01" "zeek/"});
  // Now the node publishes a matching event (XPUB filters on the sender side).
  node_xpub.send(strings(zeek_event));
  REQUIRE(c.run_until([&] { return c.has(kind::message); }));
  auto& msg = c.first(kind::message)->msg;
  REQUIRE(msg.size() == 4);
  for (size_t i = 0; i < 4; ++i)
    CHECK(msg.frame(i) == zeek_event[i]);
  // The CANCEL command reaches the node as 0x00 + prefix.
  REQUIRE(c.s.unsubscribe("zeek/"));
  c.flush();
  CHECK(node_xpub.recv() == std::vector<std::string>{"\x00" "zeek/"s});
}

TEST_CASE("subscriptions in message form reach a libzmq XPUB too", "[zmtp][interop]") {
  zmq_context ctx;
  uint16_t port = 0;
  int listener = tcp_listen(port);
  zsock node_xpub{ctx, ZMQ_XPUB};
  node_xpub.set(ZMQ_XPUB_VERBOSER, 1);
  node_xpub.connect(port);
  auto cfg = config(socket_type::xsub, true);
  cfg.subscriptions_as_messages = true;
  conn c{tcp_accept(listener), cfg};
  ::close(listener);
  REQUIRE(c.run_until([&] { return c.s.ready(); }));
  REQUIRE(c.s.subscribe("a/"));
  REQUIRE(c.s.subscribe("a/")); // verbose: the duplicate is reported too
  c.flush();
  CHECK(node_xpub.recv() == std::vector<std::string>{"\x01" "a/"});
  CHECK(node_xpub.recv() == std::vector<std::string>{"\x01" "a/"});
}

// -- NULL: joining an existing forwarder (we dial) --------------------------------------------

TEST_CASE("our XSUB and XPUB dial a libzmq forwarder's XPUB and XSUB", "[zmtp][interop]") {
  zmq_context ctx;
  zsock fwd_xpub{ctx, ZMQ_XPUB};
  fwd_xpub.set(ZMQ_XPUB_VERBOSER, 1);
  zsock fwd_xsub{ctx, ZMQ_XSUB};
  auto xpub_port = fwd_xpub.bind();
  auto xsub_port = fwd_xsub.bind();
  // Our XSUB -> their XPUB: our subscriptions arrive at the forwarder.
  conn sub{tcp_connect(xpub_port), config(socket_type::xsub, false)};
  REQUIRE(sub.run_until([&] { return sub.s.ready(); }));
  REQUIRE(sub.s.subscribe("zeek/"));
  sub.flush();
  CHECK(fwd_xpub.recv() == std::vector<std::string>{"\x01" "zeek/"});
  fwd_xpub.send(strings(zeek_event));
  REQUIRE(sub.run_until([&] { return sub.has(kind::message); }));
  CHECK(sub.first(kind::message)->msg.frame(3) == zeek_event[3]);
  // Our XPUB -> their XSUB: the forwarder forwards subscriptions to us, we publish.
  conn pub{tcp_connect(xsub_port), config(socket_type::xpub, false)};
  REQUIRE(pub.run_until([&] { return pub.s.ready(); }));
  // Until the XSUB has attached our pipe, it only caches the subscription; it replays the
  // cache to every pipe it attaches.
  fwd_xsub.send({"\x01" "zeek/cluster/"});
  REQUIRE(pub.run_until([&] {
    fwd_xsub.poke();
    return pub.has(kind::subscribe);
  }));
  CHECK(pub.first(kind::subscribe)->data == "zeek/cluster/");
  pub.write(zeek_event);
  CHECK(fwd_xsub.recv() == strings(zeek_event));
}

TEST_CASE("a libzmq SUB subscribes to our XPUB with SUBSCRIBE commands", "[zmtp][interop]") {
  zmq_context ctx;
  uint16_t port = 0;
  int listener = tcp_listen(port);
  zsock sub{ctx, ZMQ_SUB};
  sub.connect(port);
  conn c{tcp_accept(listener), config(socket_type::xpub, true)};
  ::close(listener);
  REQUIRE(c.run_until([&] { return c.s.ready(); }));
  sub.set(ZMQ_SUBSCRIBE, "t");
  REQUIRE(c.run_until([&] { return c.has(kind::subscribe); }));
  CHECK(c.raw.find("\x09SUBSCRIBEt") != std::string::npos);
  sub.set(ZMQ_UNSUBSCRIBE, "t");
  REQUIRE(c.run_until([&] { return c.has(kind::unsubscribe); }));
  CHECK(c.raw.find("\x06" "CANCELt") != std::string::npos);
}

// -- heartbeats -------------------------------------------------------------------------------

TEST_CASE("libzmq heartbeats: we answer its PINGs and it answers ours", "[zmtp][interop]") {
  zmq_context ctx;
  uint16_t port = 0;
  int listener = tcp_listen(port);
  zsock node_xsub{ctx, ZMQ_XSUB};
  node_xsub.set(ZMQ_HEARTBEAT_IVL, 50);
  node_xsub.set(ZMQ_HEARTBEAT_TIMEOUT, 300);
  node_xsub.set(ZMQ_HEARTBEAT_TTL, 2000);
  node_xsub.connect(port);
  conn c{tcp_accept(listener), config(socket_type::xpub, true)};
  ::close(listener);
  REQUIRE(c.run_until([&] { return c.s.ready(); }));
  // Several PINGs arrive and are answered; libzmq keeps the connection past its timeout.
  c.run_for(800);
  CHECK(!c.closed);
  CHECK(c.s.peer_ttl() == 20);
  CHECK(c.raw.find("\x04PING\x00\x14"s) != std::string::npos);
  // Our PING with a context comes back as PONG with the same context.
  REQUIRE(c.s.ping(0, "ours"));
  REQUIRE(c.run_until([&] { return c.has(kind::pong); }));
  CHECK(c.first(kind::pong)->data == "ours");
  // Still working after all that.
  c.write(zeek_event);
  CHECK(node_xsub.recv() == strings(zeek_event));
}

// -- CURVE ------------------------------------------------------------------------------------

namespace {

bool libzmq_has_curve() {
  return zmq_has("curve") != 0;
}

void set_curve_client(zsock& s, const keypair& client, const key& server) {
  s.set(ZMQ_CURVE_SERVERKEY, to_z85(server));
  s.set(ZMQ_CURVE_PUBLICKEY, to_z85(client.public_key));
  s.set(ZMQ_CURVE_SECRETKEY, to_z85(client.secret_key));
}

session_config curve_config(socket_type type, bool server, const keypair& keys,
                            const key& server_key = {}) {
  auto cfg = null_config(type, server);
  cfg.mech = mechanism::curve;
  cfg.curve_keys = keys;
  cfg.curve_server_key = server_key;
  return cfg;
}

// The first event among `wanted` on a connected monitor PAIR socket, as (event, value).
std::pair<int, int> monitor_event(void* mon, std::initializer_list<int> wanted) {
  for (;;) {
    zmq_msg_t head;
    zmq_msg_init(&head);
    if (zmq_msg_recv(&head, mon, 0) < 0) {
      zmq_msg_close(&head);
      return {0, 0};
    }
    uint16_t ev = 0;
    uint32_t value = 0;
    std::memcpy(&ev, zmq_msg_data(&head), 2);
    std::memcpy(&value, static_cast<char*>(zmq_msg_data(&head)) + 2, 4);
    zmq_msg_close(&head);
    zmq_msg_t addr_part;
    zmq_msg_init(&addr_part);
    zmq_msg_recv(&addr_part, mon, 0);
    zmq_msg_close(&addr_part);
    for (auto w : wanted)
      if (ev == w)
        return {ev, static_cast<int>(value)};
  }
}

} // namespace

TEST_CASE("CURVE: a libzmq XSUB client with the right key talks to our XPUB server",
          "[zmtp][interop]") {
  if (!libzmq_has_curve()) {
    WARN("skipped: this libzmq was built without CURVE");
    return;
  }
  auto server_keys = generate_keypair();
  auto client_keys = generate_keypair();
  zmq_context ctx;
  uint16_t port = 0;
  int listener = tcp_listen(port);
  zsock node_xsub{ctx, ZMQ_XSUB};
  set_curve_client(node_xsub, client_keys, server_keys.public_key);
  node_xsub.connect(port);
  auto cfg = curve_config(socket_type::xpub, true, server_keys);
  std::vector<key> asked;
  cfg.authorize = [&](const key& k) {
    asked.push_back(k);
    return true;
  };
  conn c{tcp_accept(listener), cfg};
  ::close(listener);
  REQUIRE(c.run_until([&] { return c.s.ready(); }));
  REQUIRE(asked.size() == 1);
  CHECK(asked[0] == client_keys.public_key);
  node_xsub.send({"\x01" "zeek/"});
  REQUIRE(c.run_until([&] { return c.has(kind::subscribe); }));
  CHECK(c.first(kind::subscribe)->data == "zeek/");
  c.write(zeek_event);
  CHECK(node_xsub.recv() == strings(zeek_event));
  std::string big(70000, 'c');
  c.write({"zeek/big", big});
  CHECK(node_xsub.recv() == std::vector<std::string>{"zeek/big", big});
  // Sealed PING/PONG both ways.
  REQUIRE(c.s.ping(10, "cz"));
  REQUIRE(c.run_until([&] { return c.has(kind::pong); }));
  CHECK(c.first(kind::pong)->data == "cz");
}

TEST_CASE("CURVE: our XSUB client talks to a libzmq XPUB server", "[zmtp][interop]") {
  if (!libzmq_has_curve()) {
    WARN("skipped: this libzmq was built without CURVE");
    return;
  }
  auto server_keys = generate_keypair();
  auto client_keys = generate_keypair();
  zmq_context ctx;
  zsock fwd_xpub{ctx, ZMQ_XPUB};
  fwd_xpub.set(ZMQ_XPUB_VERBOSER, 1);
  fwd_xpub.set(ZMQ_CURVE_SERVER, 1);
  fwd_xpub.set(ZMQ_CURVE_SECRETKEY, to_z85(server_keys.secret_key));
  fwd_xpub.set(ZMQ_HEARTBEAT_IVL, 50);
  auto port = fwd_xpub.bind();
  conn c{tcp_connect(port),
         curve_config(socket_type::xsub, false, client_keys, server_keys.public_key)};
  REQUIRE(c.run_until([&] { return c.s.ready(); }));
  REQUIRE(c.s.subscribe("zeek/"));
  c.flush();
  CHECK(fwd_xpub.recv() == std::vector<std::string>{"\x01" "zeek/"});
  fwd_xpub.send(strings(zeek_event));
  REQUIRE(c.run_until([&] { return c.has(kind::message); }));
  CHECK(c.first(kind::message)->msg.frame(0) == zeek_event[0]);
  // libzmq's sealed PINGs are answered: the connection outlives several intervals.
  c.run_for(300);
  CHECK(!c.closed);
  CHECK(c.s.ready());
}

TEST_CASE("CURVE: a wrong server key is refused by both sides", "[zmtp][interop]") {
  if (!libzmq_has_curve()) {
    WARN("skipped: this libzmq was built without CURVE");
    return;
  }
  auto server_keys = generate_keypair();
  auto client_keys = generate_keypair();
  auto other = generate_keypair();
  zmq_context ctx;
  SECTION("a libzmq client with another server key: our server fails the HELLO") {
    uint16_t port = 0;
    int listener = tcp_listen(port);
    zsock node_xsub{ctx, ZMQ_XSUB};
    set_curve_client(node_xsub, client_keys, other.public_key);
    node_xsub.connect(port);
    conn c{tcp_accept(listener), curve_config(socket_type::xpub, true, server_keys)};
    ::close(listener);
    CHECK(!c.run_until([&] { return c.s.ready(); }, 1000));
    CHECK(c.s.failure().code == errc::crypto_failure);
    CHECK_THAT(c.s.failure().reason, Catch::Contains("HELLO"));
  }
  SECTION("our client with another server key: the libzmq server closes on us") {
    zsock fwd_xpub{ctx, ZMQ_XPUB};
    fwd_xpub.set(ZMQ_CURVE_SERVER, 1);
    fwd_xpub.set(ZMQ_CURVE_SECRETKEY, to_z85(server_keys.secret_key));
    auto port = fwd_xpub.bind();
    conn c{tcp_connect(port),
           curve_config(socket_type::xsub, false, client_keys, other.public_key)};
    CHECK(!c.run_until([&] { return c.s.ready(); }));
    CHECK(c.closed);
    CHECK(c.s.failure().code == errc::peer_closed);
    CHECK_THAT(c.s.failure().reason, Catch::Contains("after our HELLO"));
  }
}

TEST_CASE("CURVE: a refused client key reaches libzmq as an authentication failure 400",
          "[zmtp][interop]") {
  if (!libzmq_has_curve()) {
    WARN("skipped: this libzmq was built without CURVE");
    return;
  }
  auto server_keys = generate_keypair();
  auto client_keys = generate_keypair();
  zmq_context ctx;
  uint16_t port = 0;
  int listener = tcp_listen(port);
  zsock node_xsub{ctx, ZMQ_XSUB};
  set_curve_client(node_xsub, client_keys, server_keys.public_key);
  REQUIRE(zmq_socket_monitor(node_xsub.sock, "inproc://mon-auth",
                             ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                               | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                               | ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
          == 0);
  // The monitor's PAIR must be connected before the events happen.
  zsock mon{ctx, ZMQ_PAIR};
  REQUIRE(zmq_connect(mon.sock, "inproc://mon-auth") == 0);
  node_xsub.connect(port);
  auto cfg = curve_config(socket_type::xpub, true, server_keys);
  cfg.authorize = [](const key&) { return false; };
  conn c{tcp_accept(listener), cfg};
  ::close(listener);
  c.run_until([&] { return c.s.failed(); });
  c.flush();
  CHECK(c.s.failure().code == errc::access_denied);
  // What Zeek's monitoring_event sees (and treats as fatal): 0x4000 with value 400.
  auto [ev, value] = monitor_event(mon.sock, {ZMQ_EVENT_HANDSHAKE_FAILED_AUTH,
                                              ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL,
                                              ZMQ_EVENT_HANDSHAKE_SUCCEEDED});
  CHECK(ev == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
  CHECK(value == 400);
}

#endif // BROKER_HAVE_LIBZMQ
