// One ZeroMQ connection's queue and liveness with real libzmq sockets: a stalled
// subscriber's drops (counted, attributed, nobody else slowed), heartbeats. Every wait is
// bounded. Built with libzmq only (BROKER_HAVE_LIBZMQ).

#include <catch2/catch.hpp>

#ifndef BROKER_HAVE_LIBZMQ

TEST_CASE("zeromq links with libzmq nodes", "[zeromq][interop]") {
  WARN("skipped: libzmq was not found at configure time");
  SUCCEED();
}

#else

#include "broker/internal/zeromq/zeromq.test.hh"

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::zeromq::test;

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

TEST_CASE("heartbeats: a node that answers stays, one that falls silent is closed",
          "[zeromq][interop]") {
  zeromq_settings zs;
  zs.heartbeat_interval_ms = 50;
  fixture f{zs};
  auto* live = f.xsub(); // libzmq answers every PING with a PONG.
  REQUIRE(wait_connections(*f.srv, 1));
  // A ZMTP 3.1 peer that completes the handshake, then neither reads nor writes.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(f.srv->xpub_port());
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  zmtp::session_config sc;
  sc.type = zmtp::socket_type::xsub;
  sc.server = false;
  zmtp::session s{sc};
  zmtp::string_sink out;
  std::vector<zmtp::event> events;
  auto start = std::chrono::steady_clock::now();
  while (!s.ready() && std::chrono::steady_clock::now() - start < 5s) {
    s.flush(out);
    if (!out.out.empty()) {
      REQUIRE(::send(fd, out.out.data(), out.out.size(), 0)
              == static_cast<ssize_t>(out.out.size()));
      out.out.clear();
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) == 1) {
      char buf[512];
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      REQUIRE(n > 0);
      s.feed(std::string_view{buf, static_cast<size_t>(n)}, events);
    }
  }
  REQUIRE(s.ready());
  s.flush(out);
  if (!out.out.empty())
    ::send(fd, out.out.data(), out.out.size(), 0);
  REQUIRE(wait_connections(*f.srv, 2));
  // Silent for three intervals: closed, counted; the answering node stays.
  bool closed = false;
  for (int i = 0; i < 300 && !closed; ++i) {
    closed = f.srv->counters().failed == 1;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(closed);
  CHECK(f.srv->counters().connections == 1);
  ::close(fd);
  (void) live;
}

#endif
