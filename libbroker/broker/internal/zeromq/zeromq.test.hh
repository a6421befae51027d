#pragma once

// What the ZeroMQ tests with real libzmq sockets share (server.test.cc, link.test.cc,
// node.test.cc, node_faults.test.cc): a server on its own I/O runtime, nodes' sockets set
// up as Zeek sets them up, Zeek's forwarder (libzmq's proxy). Only with BROKER_HAVE_LIBZMQ.


#include "broker/configuration.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/security/runtime.hh"
#include "broker/internal/zeromq/server.hh"
#include "broker/internal/zmtp/curve.hh"
#include "broker/internal/zmtp/session.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zmq.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>


namespace broker::internal::zeromq::test {

using namespace std::literals;


inline constexpr int wait_ms = 5000;

/// A node's two libzmq sockets, as Zeek sets them up.
struct fixture {
  configuration cfg;
  io_runtime io{cfg};
  std::shared_ptr<zeromq::server> srv;
  void* ctx = zmq_ctx_new();
  std::vector<void*> socks;

  explicit fixture(zeromq_settings zs = {},
                   std::shared_ptr<security::runtime> sec = nullptr) {
    // Port 0 means off in the settings: take free ephemeral ports instead.
    zs.xsub_port = free_port();
    zs.xpub_port = free_port();
    auto res = zeromq::server::start(io, zs, nullptr, 0, std::move(sec));
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

inline void send_str(void* s, const std::string& x, bool more = false) {
  REQUIRE(zmq_send(s, x.data(), x.size(), more ? ZMQ_SNDMORE : 0) == static_cast<int>(x.size()));
}

/// Receives one multipart message (empty on timeout).
inline std::vector<std::string> recv_parts(void* s) {
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

inline std::string recv_one(void* s) {
  auto parts = recv_parts(s);
  return parts.size() == 1 ? parts[0] : "<" + std::to_string(parts.size()) + " parts>";
}

inline void publish(void* s, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i)
    send_str(s, frames[i], i + 1 < frames.size());
}

/// Waits until the server has `n` connections.
inline bool wait_connections(zeromq::server& srv, size_t n) {
  for (int i = 0; i < wait_ms / 10; ++i) {
    if (srv.counters().connections == n)
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}


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

/// Waits until `pred` holds (bounded).
inline bool wait_until(const std::function<bool()>& pred, int ms = wait_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{ms};
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

} // namespace broker::internal::zeromq::test
