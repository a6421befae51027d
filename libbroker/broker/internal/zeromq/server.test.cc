// broker-node's forwarder with real libzmq sockets as Zeek's nodes configure them (XPUB to
// our XSUB port, XSUB to our XPUB port), over TCP on 127.0.0.1. Every wait is bounded.
// Built with libzmq only (BROKER_HAVE_LIBZMQ, as zmtp/interop.test.cc).

#include <catch2/catch.hpp>

#ifndef BROKER_HAVE_LIBZMQ

TEST_CASE("zeromq forwarder with libzmq nodes", "[zeromq][interop]") {
  WARN("skipped: libzmq was not found at configure time");
  SUCCEED();
}

#else

#include "broker/configuration.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/zeromq/server.hh"
#include "broker/internal/zmtp/curve.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zmq.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace broker;
using namespace broker::internal;
using namespace std::literals;

namespace {

constexpr int wait_ms = 5000;

/// A node's two libzmq sockets, as Zeek sets them up.
struct fixture {
  configuration cfg;
  io_runtime io{cfg};
  std::shared_ptr<zeromq::server> srv;
  void* ctx = zmq_ctx_new();
  std::vector<void*> socks;

  explicit fixture(zeromq_settings zs = {}) {
    // Port 0 means off in the settings: take free ephemeral ports instead.
    zs.xsub_port = free_port();
    zs.xpub_port = free_port();
    auto res = zeromq::server::start(io, zs);
    REQUIRE(res);
    srv = *res;
  }

  ~fixture() {
    for (auto* s : socks)
      zmq_close(s);
    zmq_ctx_term(ctx);
    srv->stop();
    io.stop();
  }

  static uint16_t free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
  }

  void* socket(int type, uint16_t port, const zmtp::keypair* client = nullptr,
               const zmtp::key* server = nullptr) {
    auto* s = zmq_socket(ctx, type);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    int timeout = wait_ms;
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
    zmq_setsockopt(s, ZMQ_SNDTIMEO, &timeout, sizeof(timeout));
    if (type == ZMQ_XPUB) {
      int one = 1;
      zmq_setsockopt(s, ZMQ_XPUB_VERBOSER, &one, sizeof(one));
    }
    if (client != nullptr) {
      zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server->data(), 32);
      zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, client->public_key.data(), 32);
      zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, client->secret_key.data(), 32);
    }
    auto ep = "tcp://127.0.0.1:" + std::to_string(port);
    REQUIRE(zmq_connect(s, ep.c_str()) == 0);
    socks.push_back(s);
    return s;
  }

  /// A node's XPUB (publishes, sees subscriptions).
  void* xpub(const zmtp::keypair* c = nullptr, const zmtp::key* k = nullptr) {
    return socket(ZMQ_XPUB, srv->xsub_port(), c, k);
  }

  /// A node's XSUB (subscribes, receives events).
  void* xsub(const zmtp::keypair* c = nullptr, const zmtp::key* k = nullptr) {
    return socket(ZMQ_XSUB, srv->xpub_port(), c, k);
  }
};

void send_str(void* s, const std::string& x, bool more = false) {
  REQUIRE(zmq_send(s, x.data(), x.size(), more ? ZMQ_SNDMORE : 0) == static_cast<int>(x.size()));
}

/// Receives one multipart message (empty on timeout).
std::vector<std::string> recv_parts(void* s) {
  std::vector<std::string> parts;
  for (;;) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, s, 0) < 0) {
      zmq_msg_close(&msg);
      return {};
    }
    parts.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    bool more = zmq_msg_more(&msg);
    zmq_msg_close(&msg);
    if (!more)
      return parts;
  }
}

std::string recv_one(void* s) {
  auto parts = recv_parts(s);
  return parts.size() == 1 ? parts[0] : "<" + std::to_string(parts.size()) + " parts>";
}

void publish(void* s, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i)
    send_str(s, frames[i], i + 1 < frames.size());
}

/// Waits until the server has `n` connections.
bool wait_connections(zeromq::server& srv, size_t n) {
  for (int i = 0; i < wait_ms / 10; ++i) {
    if (srv.counters().connections == n)
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

} // namespace

TEST_CASE("libzmq nodes: subscriptions pass VERBOSER-style, events are forwarded byte-exact",
          "[zeromq][interop]") {
  fixture f;
  auto* pub = f.xpub();
  auto* sub = f.xsub();
  REQUIRE(wait_connections(*f.srv, 2));
  // The node's XSUB subscribes: the publishing node's XPUB sees it (0x01 + prefix).
  send_str(sub, "\x01zeek/cluster/nodeid/w1/");
  CHECK(recv_one(pub) == "\x01zeek/cluster/nodeid/w1/");
  // A duplicate is passed on too.
  send_str(sub, "\x01zeek/cluster/nodeid/w1/");
  CHECK(recv_one(pub) == "\x01zeek/cluster/nodeid/w1/");
  // Events: one that matches nothing, then one that matches; only the second arrives,
  // with all four frames as sent (a payload with zero bytes and high bytes).
  std::string payload{"\x00\x01\xff\x80 bin", 8};
  publish(pub, {"zeek/other", "w2-1", "broker-bin-v1", "x"});
  publish(pub, {"zeek/cluster/nodeid/w1/", "w2-1", "broker-bin-v1", payload});
  auto got = recv_parts(sub);
  CHECK(got == std::vector<std::string>{"zeek/cluster/nodeid/w1/", "w2-1", "broker-bin-v1",
                                        payload});
  // A large event (several reads, long frames).
  std::string big(300000, 'b');
  publish(pub, {"zeek/cluster/nodeid/w1/big", "w2-1", "broker-bin-v1", big});
  got = recv_parts(sub);
  REQUIRE(got.size() == 4);
  CHECK(got[3] == big);
  // libzmq's XPUB filters at the sender: "zeek/other" never left the node.
  auto c = f.srv->counters();
  CHECK(c.frontend_messages_received == 2);
  CHECK(c.backend_messages_sent == 2);
  CHECK(c.backend_messages_received == 2);
}

TEST_CASE("libzmq nodes: a late publisher gets the subscriptions, a leaving subscriber "
          "unsubscribes",
          "[zeromq][interop]") {
  fixture f;
  auto* sub = f.xsub();
  REQUIRE(wait_connections(*f.srv, 1));
  send_str(sub, "\x01" "a/");
  send_str(sub, "\x01" "b/");
  for (int i = 0; i < 500 && f.srv->counters().backend_messages_received < 2; ++i)
    std::this_thread::sleep_for(10ms);
  auto* pub = f.xpub();
  std::vector<std::string> seen{recv_one(pub), recv_one(pub)};
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::string>{"\x01" "a/", "\x01" "b/"});
  // The subscribing node goes away: its prefixes are unsubscribed.
  zmq_close(sub);
  f.socks.erase(std::find(f.socks.begin(), f.socks.end(), sub));
  seen = {recv_one(pub), recv_one(pub)};
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::string>{std::string{"\x00" "a/", 3}, std::string{"\x00" "b/", 3}});
}

TEST_CASE("libzmq nodes: CURVE is required once the server has a secret key",
          "[zeromq][interop]") {
  auto server_keys = zmtp::generate_keypair();
  auto client_keys = zmtp::generate_keypair();
  zeromq_settings zs;
  zs.server_secret_key = zmtp::to_z85(server_keys.secret_key);
  fixture f{zs};
  auto* pub = f.xpub(&client_keys, &server_keys.public_key);
  auto* sub = f.xsub(&client_keys, &server_keys.public_key);
  REQUIRE(wait_connections(*f.srv, 2));
  send_str(sub, "\x01t");
  CHECK(recv_one(pub) == "\x01t");
  publish(pub, {"t1", "n", "broker-bin-v1", "p"});
  CHECK(recv_parts(sub) == std::vector<std::string>{"t1", "n", "broker-bin-v1", "p"});
  // A node without CURVE is refused (and counted).
  auto before = f.srv->counters().failed;
  f.xsub();
  bool refused = false;
  for (int i = 0; i < 500 && !refused; ++i) {
    refused = f.srv->counters().failed > before;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(refused);
}

TEST_CASE("a subscriber that stops reading loses the oldest events, counted; the others "
          "get every one",
          "[zeromq][interop]") {
  zeromq_settings zs;
  zs.buffer_size = 8;
  fixture f{zs};
  auto* pub = f.xpub();
  auto* fast = f.xsub();
  auto* slow = f.xsub();
  int small = 4096;
  zmq_setsockopt(slow, ZMQ_RCVBUF, &small, sizeof(small));
  int hwm = 1;
  zmq_setsockopt(slow, ZMQ_RCVHWM, &hwm, sizeof(hwm));
  REQUIRE(wait_connections(*f.srv, 3));
  send_str(fast, "\x01" "s/");
  send_str(slow, "\x01" "s/");
  CHECK(recv_one(pub) == "\x01" "s/");
  CHECK(recv_one(pub) == "\x01" "s/");
  constexpr int n = 400;
  std::string payload(128 * 1024, 'p');
  int received = 0;
  for (int i = 0; i < n; ++i) {
    publish(pub, {"s/" + std::to_string(i), "w1", "broker-bin-v1", payload});
    // The fast node keeps up: it reads each event before the next is published.
    auto got = recv_parts(fast);
    if (got.size() == 4 && got[0] == "s/" + std::to_string(i))
      ++received;
  }
  CHECK(received == n);
  auto c = f.srv->counters();
  CHECK(c.dropped > 0);
  uint64_t link_drops = 0;
  for (auto& l : f.srv->links())
    link_drops += l.dropped;
  CHECK(link_drops == c.dropped); // Every drop is attributed to a connection.
}

TEST_CASE("a connection that sends no ZMTP greeting is closed and counted",
          "[zeromq][interop]") {
  fixture f;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(f.srv->xsub_port());
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, junk.data(), junk.size(), 0) == static_cast<ssize_t>(junk.size()));
  // The server closes: reading ends with 0 after whatever greeting bytes it sent.
  pollfd p{fd, POLLIN, 0};
  char buf[256];
  bool closed = false;
  for (int i = 0; i < 50 && !closed; ++i) {
    if (::poll(&p, 1, 100) == 1) {
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      closed = n <= 0;
    }
  }
  ::close(fd);
  CHECK(closed);
  CHECK(f.srv->counters().failed == 1);
  CHECK(wait_connections(*f.srv, 0));
}

#endif
