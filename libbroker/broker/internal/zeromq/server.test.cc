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

#include "broker/internal/zeromq/zeromq.test.hh"

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::zeromq::test;

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
  // The link closes its socket before the server forgets it and counts the failure (one
  // step, under the server's lock): wait for that step, not for the socket.
  CHECK(wait_connections(*f.srv, 0));
  CHECK(f.srv->counters().failed == 1);
}

#endif
