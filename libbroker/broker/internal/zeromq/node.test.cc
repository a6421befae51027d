// Node mode against real forwarders (node_client.hh): libzmq's zmq_proxy_steerable between
// an XSUB and an XPUB with XPUB_VERBOSER, as Zeek's manager runs it, with emulated Zeek
// nodes (libzmq XPUB/XSUB as Zeek sets them up); and hostile "forwarders" (raw sockets) for
// bad input. Over TCP on 127.0.0.1; every wait is bounded. Built with libzmq only.

#include <catch2/catch.hpp>

#ifndef BROKER_HAVE_LIBZMQ

TEST_CASE("zeromq node mode with a libzmq forwarder", "[zeromq][interop]") {
  WARN("skipped: libzmq was not found at configure time");
  SUCCEED();
}

#else

#include "broker/endpoint.hh"
#include "broker/internal/codec/bin.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/zeromq/node_client.hh"
#include "broker/internal/zeromq/zeromq.test.hh"

#include <atomic>
#include <functional>
#include <mutex>

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::zeromq::test;

namespace {

/// Zeek's forwarder: libzmq's proxy in a thread on the given ports (0: any). `keys`: CURVE
/// server (no ZAP handler: any client key).
struct libzmq_forwarder {
  void* ctx = zmq_ctx_new();
  void* control = nullptr;
  std::thread thread;
  uint16_t xsub_port = 0;
  uint16_t xpub_port = 0;

  explicit libzmq_forwarder(uint16_t xs = 0, uint16_t xp = 0,
                            const zmtp::keypair* keys = nullptr) {
    start(xs, xp, keys);
  }

  ~libzmq_forwarder() {
    stop();
    zmq_ctx_term(ctx);
  }

  static uint16_t bind(void* s, uint16_t port) {
    auto ep = "tcp://127.0.0.1:" + (port == 0 ? std::string{"*"} : std::to_string(port));
    for (int i = 0; zmq_bind(s, ep.c_str()) != 0; ++i) {
      REQUIRE(i < 100); // The port of a forwarder closed a moment ago may still be held.
      std::this_thread::sleep_for(50ms);
    }
    char buf[256];
    size_t len = sizeof(buf);
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, buf, &len);
    std::string last{buf};
    return static_cast<uint16_t>(std::stoi(last.substr(last.rfind(':') + 1)));
  }

  void start(uint16_t xs = 0, uint16_t xp = 0, const zmtp::keypair* keys = nullptr) {
    auto* xsub = zmq_socket(ctx, ZMQ_XSUB);
    auto* xpub = zmq_socket(ctx, ZMQ_XPUB);
    int one = 1;
    int zero = 0;
    zmq_setsockopt(xpub, ZMQ_XPUB_VERBOSER, &one, sizeof(one));
    zmq_setsockopt(xpub, ZMQ_XPUB_NODROP, &one, sizeof(one));
    for (auto* s : {xsub, xpub}) {
      zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
      if (keys != nullptr) {
        zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof(one));
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, keys->secret_key.data(), 32);
      }
    }
    xsub_port = bind(xsub, xs);
    xpub_port = bind(xpub, xp);
    auto name = "inproc://fwd-" + std::to_string(reinterpret_cast<uintptr_t>(this)) + "-"
                + std::to_string(++generation_);
    control = zmq_socket(ctx, ZMQ_PAIR);
    zmq_bind(control, name.c_str());
    auto* peer = zmq_socket(ctx, ZMQ_PAIR);
    zmq_connect(peer, name.c_str());
    thread = std::thread{[xsub, xpub, peer] {
      zmq_proxy_steerable(xsub, xpub, nullptr, peer);
      zmq_close(xsub);
      zmq_close(xpub);
      zmq_close(peer);
    }};
  }

  /// Closes both sockets: every connection drops.
  void stop() {
    if (control == nullptr)
      return;
    zmq_send(control, "TERMINATE", 9, 0);
    thread.join();
    zmq_close(control);
    control = nullptr;
  }

  std::string xsub_endpoint() const { return "tcp://127.0.0.1:" + std::to_string(xsub_port); }
  std::string xpub_endpoint() const { return "tcp://127.0.0.1:" + std::to_string(xpub_port); }

private:
  int generation_ = 0;
};

/// An emulated Zeek node: XPUB (VERBOSE, as Zeek) to the forwarder's XSUB, XSUB to its XPUB.
struct zeek_node {
  void* pub;
  void* sub;

  zeek_node(void* ctx, const libzmq_forwarder& fwd, const zmtp::keypair* client = nullptr,
            const zmtp::key* server = nullptr) {
    pub = zmq_socket(ctx, ZMQ_XPUB);
    sub = zmq_socket(ctx, ZMQ_XSUB);
    int one = 1;
    int zero = 0;
    int timeout = 200;
    zmq_setsockopt(pub, ZMQ_XPUB_VERBOSE, &one, sizeof(one));
    for (auto* s : {pub, sub}) {
      zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
      zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout, sizeof(timeout));
      if (client != nullptr) {
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server->data(), 32);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, client->public_key.data(), 32);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, client->secret_key.data(), 32);
      }
    }
    REQUIRE(zmq_connect(pub, fwd.xsub_endpoint().c_str()) == 0);
    REQUIRE(zmq_connect(sub, fwd.xpub_endpoint().c_str()) == 0);
  }

  ~zeek_node() {
    zmq_close(pub);
    zmq_close(sub);
  }

  /// Reads subscription notices from the XPUB until `wanted` arrives (bounded).
  bool wait_subscription(const std::string& wanted) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{wait_ms};
    std::string seen;
    while (std::chrono::steady_clock::now() < deadline) {
      auto parts = recv_parts(pub);
      if (parts.size() == 1 && parts[0] == wanted)
        return true;
      for (auto& p : parts)
        seen += (p.empty() ? std::string{"<empty>"} : std::to_string(int(p[0])) + p.substr(1)) + " ";
    }
    UNSCOPED_INFO("notices seen: " << seen);
    return false;
  }

  /// Events from the XSUB until `pred` accepts one (bounded); empty if none did.
  std::vector<std::string> wait_event(const std::function<bool(const std::vector<std::string>&)>& pred) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{wait_ms};
    while (std::chrono::steady_clock::now() < deadline) {
      auto parts = recv_parts(sub);
      if (!parts.empty() && pred(parts))
        return parts;
    }
    return {};
  }
};

/// Waits until `pred` holds (bounded).
bool eventually(const std::function<bool()>& pred, int ms = wait_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{ms};
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::string topic_of(const std::vector<std::string>& ev) {
  return ev.empty() ? std::string{} : ev[0];
}

/// An endpoint in node mode at `fwd` (`client`: CURVE with the forwarder's `server` key).
std::unique_ptr<endpoint> node_endpoint(const libzmq_forwarder& fwd,
                                        const zmtp::keypair* client = nullptr,
                                        const zmtp::key* server = nullptr) {
  configuration cfg;
  REQUIRE(!cfg.set("broker.disable-ssl", "true"));
  if (client != nullptr) {
    REQUIRE(!cfg.set("broker.zeromq.curve-client-secret-key", zmtp::to_z85(client->secret_key)));
    REQUIRE(!cfg.set("broker.zeromq.curve-server-public-key", zmtp::to_z85(*server)));
  }
  REQUIRE(!cfg.set("broker.zeromq.connect-xpub", fwd.xsub_endpoint()));
  REQUIRE(!cfg.set("broker.zeromq.connect-xsub", fwd.xpub_endpoint()));
  REQUIRE(!cfg.set("broker.zeromq.node-id", "node-test"));
  REQUIRE(!cfg.set("broker.metrics.endpoint-name", "bridge"));
  auto ep = std::make_unique<endpoint>(std::move(cfg));
  REQUIRE(!ep->startup_error());
  return ep;
}

constexpr std::string_view own_nodeid = "zeek.cluster.nodeid.node-test.";

/// Enough for a reconnection to count as lasting, and then some.
constexpr int reconnect_ms_bound = static_cast<int>(zeromq::reconnect_max_ms) + wait_ms;

/// Publishes probes on `topic` until the node receives one (the bridge's subscription is
/// in the core), then drains the rest.
bool until_bridged(endpoint& ep, zeek_node& z, const std::string& topic) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{wait_ms};
  while (std::chrono::steady_clock::now() < deadline) {
    REQUIRE(!ep.publish(topic + "probe", data{"probe"}));
    auto parts = recv_parts(z.sub);
    if (parts.size() == 4 && parts[0] == topic + "probe") {
      while (!recv_parts(z.sub).empty()) {
      }
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("node mode: broker-node joins libzmq's forwarder as a Zeek node",
          "[zeromq][interop]") {
  libzmq_forwarder fwd;
  void* ctx = zmq_ctx_new();
  {
    zeek_node z{ctx, fwd};
    auto ep = node_endpoint(fwd);
    // Our XSUB subscribes to our nodeid topic, as Zeek's nodes do.
    REQUIRE(z.wait_subscription("\x01" + std::string{own_nodeid}));
    // ZeroMQ -> a local subscriber, subscribed on its behalf, the same bytes.
    auto local = ep->make_subscriber({"z/in/"});
    REQUIRE(z.wait_subscription("\x01z/in/"));
    data value = vector{data{"event"}, data{count{7}}};
    auto payload = *bin::encode(value);
    publish(z.pub, {"z/in/1", "zeek-1", "broker-bin-v1", payload});
    auto msg = local.get(std::chrono::milliseconds{wait_ms});
    REQUIRE(msg);
    CHECK(msg->topic() == "z/in/1");
    REQUIRE(msg->impl().binary_if_known() != nullptr);
    CHECK(*msg->impl().binary_if_known() == payload);
    // The node says hello: our ZeroMQ::hello answers its nodeid subscription.
    publish(z.sub, {"\x01zeek.cluster.nodeid.zeek-1."});
    auto hello = z.wait_event([](auto& ev) { return topic_of(ev) == "zeek.cluster.nodeid.zeek-1."; });
    REQUIRE(hello.size() == 4);
    CHECK(hello[1] == "node-test");
    CHECK(hello[2] == "broker-bin-v1");
    data want = vector{data{count{1}}, data{count{1}},
                       data{vector{data{"Cluster::Backend::ZeroMQ::hello"},
                                   data{vector{data{"bridge"}, data{"node-test"}}}}}};
    CHECK(hello[3] == *bin::encode(want));
    // core -> ZeroMQ, with our node id.
    publish(z.sub, {"\x01z/out/"});
    REQUIRE(until_bridged(*ep, z, "z/out/"));
    REQUIRE(!ep->publish("z/out/x", value));
    auto got = z.wait_event([](auto& ev) { return topic_of(ev) == "z/out/x"; });
    CHECK(got == std::vector<std::string>{"z/out/x", "node-test", "broker-bin-v1", payload});
  }
  zmq_ctx_term(ctx);
}

TEST_CASE("node mode: split horizon, our own events back from the forwarder are dropped",
          "[zeromq][interop]") {
  libzmq_forwarder fwd;
  void* ctx = zmq_ctx_new();
  {
    zeek_node z{ctx, fwd};
    auto ep = node_endpoint(fwd);
    REQUIRE(z.wait_subscription("\x01" + std::string{own_nodeid}));
    // A local subscriber and the Zeek node want the same topic: our XSUB subscribes it, so
    // the forwarder sends our own event back to us.
    auto local = ep->make_subscriber({"both/"});
    REQUIRE(z.wait_subscription(std::string{"\x01"} + "both/"));
    publish(z.sub, {std::string{"\x01"} + "both/"});
    REQUIRE(until_bridged(*ep, z, "both/"));
    while (local.get(std::chrono::milliseconds{300})) {
    } // The probes.
    REQUIRE(!ep->publish("both/1", data{"once"}));
    auto at_zeek = z.wait_event([](auto& ev) { return topic_of(ev) == "both/1"; });
    CHECK(at_zeek.size() == 4);
    auto first = local.get(std::chrono::milliseconds{wait_ms});
    REQUIRE(first);
    CHECK(first->topic() == "both/1");
    CHECK(!local.get(std::chrono::milliseconds{500})); // Not again through the bridge.
    CHECK(z.wait_event([](auto& ev) { return topic_of(ev) == "both/1"; }).empty());
    // A Zeek node's event reaches the local subscriber once and does not go back out.
    publish(z.pub, {"both/2", "zeek-1", "broker-bin-v1", *bin::encode(data{"z"})});
    auto second = local.get(std::chrono::milliseconds{wait_ms});
    REQUIRE(second);
    CHECK(second->topic() == "both/2");
    CHECK(!local.get(std::chrono::milliseconds{300}));
    // The Zeek node got it back once from the forwarder (its own, which Zeek drops),
    // not a second time with our node id.
    auto echoes = 0;
    for (auto ev = recv_parts(z.sub); !ev.empty(); ev = recv_parts(z.sub))
      if (topic_of(ev) == "both/2")
        echoes += ev[1] == "node-test" ? 100 : 1;
    CHECK(echoes == 1);
  }
  zmq_ctx_term(ctx);
}

TEST_CASE("node mode: CURVE both ways through a CURVE forwarder", "[zeromq][interop]") {
  auto server = zmtp::generate_keypair();
  auto client = zmtp::generate_keypair();
  libzmq_forwarder fwd{0, 0, &server};
  void* ctx = zmq_ctx_new();
  {
    zeek_node z{ctx, fwd, &client, &server.public_key};
    auto ep = node_endpoint(fwd, &client, &server.public_key);
    REQUIRE(z.wait_subscription("\x01" + std::string{own_nodeid}));
    auto local = ep->make_subscriber({"c/in/"});
    REQUIRE(z.wait_subscription(std::string{"\x01"} + "c/in/"));
    auto payload = *bin::encode(data{"sealed"});
    // A burst: several sealed messages in one read.
    for (int i = 1; i <= 5; ++i)
      publish(z.pub, {"c/in/" + std::to_string(i), "zeek-1", "broker-bin-v1", payload});
    for (int i = 1; i <= 5; ++i) {
      auto msg = local.get(std::chrono::milliseconds{wait_ms});
      REQUIRE(msg);
      CHECK(msg->topic() == "c/in/" + std::to_string(i));
    }
    publish(z.sub, {std::string{"\x01"} + "c/out/"});
    REQUIRE(until_bridged(*ep, z, "c/out/"));
    REQUIRE(!ep->publish("c/out/x", data{"sealed"}));
    auto got = z.wait_event([](auto& ev) { return topic_of(ev) == "c/out/x"; });
    CHECK(got == std::vector<std::string>{"c/out/x", "node-test", "broker-bin-v1", payload});
  }
  zmq_ctx_term(ctx);
}

TEST_CASE("node mode: the forwarder restarts, broker-node reconnects and subscribes again",
          "[zeromq][interop]") {
  libzmq_forwarder fwd;
  void* ctx = zmq_ctx_new();
  {
    auto z = std::make_unique<zeek_node>(ctx, fwd);
    auto ep = node_endpoint(fwd);
    REQUIRE(z->wait_subscription("\x01" + std::string{own_nodeid}));
    auto local = ep->make_subscriber({"r/"});
    REQUIRE(z->wait_subscription("\x01r/"));
    fwd.stop();
    std::this_thread::sleep_for(200ms);
    fwd.start(fwd.xsub_port, fwd.xpub_port);
    // libzmq's node reconnects by itself; broker-node sends its subscriptions again.
    REQUIRE(z->wait_subscription("\x01" + std::string{own_nodeid}));
    publish(z->pub, {"r/again", "zeek-1", "broker-bin-v1", *bin::encode(data{"again"})});
    auto msg = local.get(std::chrono::milliseconds{wait_ms});
    REQUIRE(msg);
    CHECK(msg->topic() == "r/again");
  }
  zmq_ctx_term(ctx);
}

namespace {

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

/// A listening TCP socket on 127.0.0.1 whose connections `serve` handles, one at a time,
/// in a thread (until stopped).
struct raw_listener {
  int fd = -1;
  uint16_t port = 0;
  std::atomic<bool> done{false};
  std::atomic<int> accepted{0};
  std::thread thread;

  explicit raw_listener(std::function<void(int)> serve) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
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
  REQUIRE(eventually([&] { return c.link("xpub").connect_failures >= 3; }));
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
  REQUIRE(eventually([&] { return c.nc->counters().connections == 2; }));
  CHECK(c.link("xsub").connects == 1);
  CHECK(c.link("xpub").state == "connected");
  CHECK(c.nc->counters().reconnects == 0);
  // It goes away and comes back: each socket connects again, once logged.
  fwd.stop();
  REQUIRE(eventually([&] { return c.nc->counters().connections == 0; }));
  CHECK(c.link("xsub").state == "reconnecting");
  std::this_thread::sleep_for(300ms);
  fwd.start(xs, xp);
  REQUIRE(eventually([&] { return c.nc->counters().connections == 2; }));
  CHECK(c.nc->counters().reconnects == 2);
  CHECK(c.link("xpub").connects == 2);
  // Logged once the connection lasted (reconnect_max_ms).
  CHECK(eventually(
    [&] {
      return c.count_lines("xsub connection to tcp://127.0.0.1:" + std::to_string(xp)
                           + ": connected again")
             == 1;
    },
    reconnect_ms_bound));
  CHECK(c.nc->counters().failed == 0);
}

TEST_CASE("node mode: a forwarder that sends garbage is closed, counted and retried",
          "[zeromq][interop]") {
  SECTION("a bad greeting") {
    raw_listener bad{[](int fd) {
      write_all(fd, "HTTP/1.1 400 Bad Request\r\n\r\n");
      read_for(fd, 500);
    }};
    client_fixture c{settings_for(bad.port, bad.port)};
    REQUIRE(eventually([&] { return bad.accepted >= 4; }));
    REQUIRE(eventually([&] { return c.nc->counters().failed >= 2; }));
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
    REQUIRE(eventually([&] { return c.link("xpub").failed >= 2; }));
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
    REQUIRE(eventually([&] { return c.link("xpub").connects >= 2; }));
    REQUIRE(eventually([&] { return c.link("xpub").state != "connected"; }));
    CHECK(c.nc->counters().connections == 0);
  }
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
    REQUIRE(eventually([&] { return c.nc->counters().connections == 2; }));
    CHECK(c.nc->counters().failed == 0);
  }
  SECTION("a wrong server key: the handshake fails, counted, retried") {
    zs.server_public_key = zmtp::to_z85(client.public_key);
    client_fixture c{zs};
    REQUIRE(eventually([&] { return c.link("xsub").failed >= 2; }));
    CHECK(c.nc->counters().connections == 0);
    CHECK(c.link("xsub").connects == 0);
  }
}

#endif
