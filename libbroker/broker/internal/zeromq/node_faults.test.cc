// Node mode's connections against forwarders that are not there, go away, or misbehave
// (node_client.hh, uplink.hh): reconnects with backoff and one log line per outage, a bad
// greeting, an oversized frame, a truncated one, CURVE with a wrong server key. A
// node_client without a core, libzmq's proxy or raw sockets as the forwarder, over TCP on
// 127.0.0.1; every wait is bounded. Built with libzmq only.

#include <catch2/catch.hpp>

#ifndef BROKER_HAVE_LIBZMQ

TEST_CASE("zeromq node mode's reconnects and bad forwarders", "[zeromq][interop]") {
  WARN("skipped: libzmq was not found at configure time");
  SUCCEED();
}

#else

#include "broker/internal/config/logger.hh"
#include "broker/internal/zeromq/node_client.hh"
#include "broker/internal/zeromq/zeromq.test.hh"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::zeromq::test;

namespace {

/// Enough for a reconnection to count as lasting, and then some.
constexpr int reconnect_ms_bound = static_cast<int>(zeromq::reconnect_max_ms) + wait_ms;

/// A node_client without a core on its own I/O runtime; log lines are collected.
struct client_fixture {
  configuration cfg;
  std::mutex mtx;
  std::vector<std::string> lines;
  std::shared_ptr<logger> log = std::make_shared<logger>(
    log_level::info, log_format::text, "test", [this](std::string_view line) {
      std::lock_guard<std::mutex> guard{mtx};
      lines.emplace_back(line);
    });
  io_runtime io{cfg, log};
  std::shared_ptr<zeromq::server> nc;

  explicit client_fixture(zeromq_settings zs) {
    if (zs.node_id.empty())
      zs.node_id = "client-test";
    auto res = zeromq::node_client::start(io, zs);
    REQUIRE(res);
    nc = *res;
  }

  ~client_fixture() {
    nc->stop();
    io.stop();
  }

  size_t count_lines(std::string_view what) {
    std::lock_guard<std::mutex> guard{mtx};
    return std::count_if(lines.begin(), lines.end(), [&](auto& l) {
      return l.find(what) != std::string::npos;
    });
  }

  zeromq::link_status link(std::string_view side) {
    for (auto& l : nc->links())
      if (l.side == side)
        return l;
    FAIL("no " << side << " link");
    return {};
  }
};

zeromq_settings settings_for(uint16_t xsub_port, uint16_t xpub_port) {
  zeromq_settings zs;
  zs.connect_xpub = "tcp://127.0.0.1:" + std::to_string(xsub_port);
  zs.connect_xsub = "tcp://127.0.0.1:" + std::to_string(xpub_port);
  return zs;
}

/// A TCP socket listening on an ephemeral port of 127.0.0.1; `addr` receives its address.
int listen_loopback(int backlog, sockaddr_in& addr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  addr = sockaddr_in{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(fd, backlog) == 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return fd;
}

/// A listening TCP socket on 127.0.0.1 whose connections `serve` handles, one at a time,
/// in a thread (until stopped).
struct raw_listener {
  int fd = -1;
  uint16_t port = 0;
  std::atomic<bool> done{false};
  std::atomic<int> accepted{0};
  std::thread thread;

  explicit raw_listener(std::function<void(int)> serve) {
    sockaddr_in addr;
    fd = listen_loopback(16, addr);
    port = ntohs(addr.sin_port);
    thread = std::thread{[this, serve = std::move(serve)] {
      while (!done) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0)
          continue;
        int c = ::accept(fd, nullptr, nullptr);
        if (c < 0)
          continue;
        ++accepted;
        serve(c);
        ::close(c);
      }
    }};
  }

  ~raw_listener() {
    done = true;
    thread.join();
    ::close(fd);
  }
};

/// Reads what arrives within `ms` or until the peer closes (then `eof` is set).
std::string read_for(int fd, int ms, bool* eof = nullptr) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{ms};
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10) <= 0)
      continue;
    char buf[4096];
    auto n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) {
      if (eof != nullptr)
        *eof = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0)
      return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

/// Speaks ZMTP as the forwarder's XSUB (NULL) until the handshake is done, then sends
/// `then` and waits until our side closes.
void handshake_then(int fd, std::string_view then) {
  zmtp::session_config cfg;
  cfg.type = zmtp::socket_type::xsub;
  cfg.server = true;
  zmtp::session s{cfg};
  zmtp::string_sink out;
  s.flush(out);
  write_all(fd, out.out);
  auto deadline = std::chrono::steady_clock::now() + 3s;
  bool eof = false;
  while (!s.ready() && !s.failed() && !eof && std::chrono::steady_clock::now() < deadline) {
    auto in = read_for(fd, 50, &eof);
    if (in.empty())
      continue;
    s.feed(in);
    zmtp::string_sink more;
    s.flush(more);
    write_all(fd, more.out);
  }
  if (!s.ready())
    return;
  write_all(fd, then);
  read_for(fd, 1000);
}

} // namespace

TEST_CASE("node mode: reconnects with backoff until the forwarder is there, logs once",
          "[zeromq][interop]") {
  auto xs = fixture::free_port();
  auto xp = fixture::free_port();
  client_fixture c{settings_for(xs, xp)};
  // Nothing listens: attempts fail, counted, one line per socket.
  REQUIRE(wait_until([&] { return c.link("xpub").connect_failures >= 3; }));
  CHECK(c.link("xpub").state != "connected");
  CHECK(c.link("xpub").endpoint == "tcp://127.0.0.1:" + std::to_string(xs));
  CHECK(!c.link("xpub").last_error.empty());
  CHECK(c.count_lines("xpub connection to tcp://127.0.0.1:" + std::to_string(xs)
                      + ": cannot connect")
        == 1);
  CHECK(c.nc->counters().connections == 0);
  CHECK(c.nc->mode() == "node");
  // The forwarder comes: both sockets connect (within the 2 s backoff bound).
  libzmq_forwarder fwd{xs, xp};
  REQUIRE(wait_until([&] { return c.nc->counters().connections == 2; }));
  CHECK(c.link("xsub").connects == 1);
  CHECK(c.link("xpub").state == "connected");
  CHECK(c.nc->counters().reconnects == 0);
  // It goes away and comes back: each socket connects again, once logged.
  fwd.stop();
  REQUIRE(wait_until([&] { return c.nc->counters().connections == 0; }));
  CHECK(c.link("xsub").state == "reconnecting");
  std::this_thread::sleep_for(300ms);
  fwd.start(xs, xp);
  REQUIRE(wait_until([&] { return c.nc->counters().connections == 2; }));
  CHECK(c.nc->counters().reconnects == 2);
  CHECK(c.link("xpub").connects == 2);
  // Logged once the connection lasted (reconnect_max_ms).
  CHECK(wait_until(
    [&] {
      return c.count_lines("xsub connection to tcp://127.0.0.1:" + std::to_string(xp)
                           + ": connected again")
             == 1;
    },
    reconnect_ms_bound));
  CHECK(c.nc->counters().failed == 0);
}

namespace {

/// A listening socket whose accept queue is full (backlog 0, filled by connections nobody
/// accepts): the kernel drops further SYNs, so a connect to it hangs until it times out.
struct full_listener {
  int fd = -1;
  uint16_t port = 0;
  std::vector<int> fillers;

  full_listener() {
    sockaddr_in addr;
    fd = listen_loopback(0, addr);
    port = ntohs(addr.sin_port);
    for (int i = 0; i < 3; ++i) {
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)); // EINPROGRESS
      fillers.push_back(c);
    }
    std::this_thread::sleep_for(100ms);
  }

  ~full_listener() {
    for (auto c : fillers)
      ::close(c);
    ::close(fd);
  }
};

} // namespace

TEST_CASE("node mode: a connect that hangs fails after connect-timeout and is retried",
          "[zeromq][interop]") {
  full_listener hang;
  auto zs = settings_for(hang.port, fixture::free_port());
  zs.connect_timeout_ms = 200;
  client_fixture c{zs};
  // Each attempt ends after 200 ms (not the OS's 2 minutes), counted as a failure.
  REQUIRE(wait_until([&] { return c.link("xpub").connect_failures >= 2; }));
  auto l = c.link("xpub");
  CHECK(l.connects == 0);
  CHECK(l.last_error == "no connection within 200 ms (broker.zeromq.connect-timeout)");
  CHECK(c.count_lines("xpub connection to tcp://127.0.0.1:" + std::to_string(hang.port)
                      + ": cannot connect: no connection within 200 ms")
        == 1);
}

TEST_CASE("node mode: a forwarder that sends garbage is closed, counted and retried",
          "[zeromq][interop]") {
  SECTION("a bad greeting") {
    raw_listener bad{[](int fd) {
      write_all(fd, "HTTP/1.1 400 Bad Request\r\n\r\n");
      read_for(fd, 500);
    }};
    client_fixture c{settings_for(bad.port, bad.port)};
    REQUIRE(wait_until([&] { return bad.accepted >= 4; }));
    REQUIRE(wait_until([&] { return c.nc->counters().failed >= 2; }));
    CHECK(c.nc->counters().connections == 0);
    CHECK(c.link("xpub").connects == 0);
    CHECK(c.link("xpub").failed >= 1);
    CHECK(!c.link("xpub").last_error.empty());
    // One line per socket for the whole outage, not one per attempt.
    CHECK(c.count_lines("xpub connection to") == 1);
  }
  SECTION("an oversized frame after the handshake") {
    // A long message frame (flags 0x02) of 2^40 bytes: over the 64 MiB bound.
    std::string huge{"\x02\x00\x00\x01\x00\x00\x00\x00\x00", 9};
    raw_listener bad{[&huge](int fd) { handshake_then(fd, huge); }};
    client_fixture c{settings_for(bad.port, fixture::free_port())};
    REQUIRE(wait_until([&] { return c.link("xpub").failed >= 2; }));
    auto l = c.link("xpub");
    CHECK(l.connects >= 2); // Handshakes succeeded, then the frame failed each one.
    CHECK(c.nc->counters().reconnects >= 1);
    CHECK(l.last_error.find("xpub connection to") != std::string::npos);
    // Connected, closed; the reconnections that fail again are not logged.
    CHECK(c.count_lines("xpub connection to") == 2);
  }
  SECTION("a message that is no subscription on our XPUB, then a truncated frame") {
    // "\x07xy": neither 0x01 (subscribe) nor 0x00 (cancel); then 2 of 5 bytes, and EOF.
    raw_listener bad{[](int fd) {
      handshake_then(fd, std::string{"\x00\x03\x07xy\x00\x05" "ab", 9});
    }};
    client_fixture c{settings_for(bad.port, fixture::free_port())};
    REQUIRE(wait_until([&] { return c.link("xpub").connects >= 2; }));
    REQUIRE(wait_until([&] { return c.link("xpub").state != "connected"; }));
    CHECK(c.nc->counters().connections == 0);
  }
}

TEST_CASE("node mode: a forwarder that stops answering heartbeats is closed and retried",
          "[zeromq][interop]") {
  // It completes the handshake and then reads without answering a PING.
  raw_listener silent{[](int fd) { handshake_then(fd, ""); }};
  auto zs = settings_for(silent.port, fixture::free_port());
  zs.heartbeat_interval_ms = 100;
  client_fixture c{zs};
  REQUIRE(wait_until([&] { return c.link("xpub").failed >= 1; }));
  CHECK(c.link("xpub").connects >= 1);
  CHECK(c.link("xpub").last_error.find("xpub connection to") != std::string::npos);
  REQUIRE(wait_until([&] { return c.link("xpub").connects >= 2; }, reconnect_ms_bound));
}

TEST_CASE("node mode: CURVE as a client of a CURVE forwarder", "[zeromq][interop]") {
  auto server = zmtp::generate_keypair();
  auto client = zmtp::generate_keypair();
  libzmq_forwarder fwd{0, 0, &server};
  auto zs = settings_for(fwd.xsub_port, fwd.xpub_port);
  zs.client_secret_key = zmtp::to_z85(client.secret_key);
  SECTION("the right server key: both sockets connect") {
    zs.server_public_key = zmtp::to_z85(server.public_key);
    client_fixture c{zs};
    REQUIRE(wait_until([&] { return c.nc->counters().connections == 2; }));
    CHECK(c.nc->counters().failed == 0);
  }
  SECTION("a wrong server key: the handshake fails, counted, retried") {
    zs.server_public_key = zmtp::to_z85(client.public_key);
    client_fixture c{zs};
    REQUIRE(wait_until([&] { return c.link("xsub").failed >= 2; }));
    CHECK(c.nc->counters().connections == 0);
    CHECK(c.link("xsub").connects == 0);
  }
}

#endif
