// An endpoint destroyed on a thread other than the one that created it (issue 13 lists this
// as a known hang). One thread builds a busy endpoint: a peer it accepted and one it dialed,
// WebSocket clients (one that never reads), subscribers of every policy, a hub, a store
// master, a publisher blocked on a full `block` subscriber and a reader blocked in get().
// That thread ends; another destroys the endpoint; a third drops the objects that outlived
// it. Every step runs under a watchdog: a step that does not finish in time cannot be undone
// in-process (its thread is stuck), so the watchdog names the step on stderr and aborts the
// binary (ctest reports the abort; attach gdb before the bound runs out to see the threads).

#include "broker/endpoint.hh"
#include "broker/endpoint.test.hh"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace broker;
using namespace std::chrono_literals;

namespace {

/// Generous: each step takes well under a second on an idle machine.
constexpr auto step_bound = 30s;

/// Runs `f` on a new thread and waits for it at most step_bound (see the file comment).
template <class F>
void bounded(const char* step, F f) {
  std::packaged_task<void()> task{std::move(f)};
  auto done = task.get_future();
  std::thread runner{std::move(task)};
  if (done.wait_for(step_bound) != std::future_status::ready) {
    std::fprintf(stderr, "endpoint_threads: HANG: '%s' did not finish within %lld s\n", step,
                 static_cast<long long>(step_bound.count()));
    std::fflush(stderr);
    std::abort();
  }
  runner.join();
  done.get(); // Rethrows what the step threw.
}

/// A WebSocket client on a plain socket: upgrade, subscriptions, ack. It reads nothing
/// after the ack, so the node's output queue for it fills while messages flow.
class raw_ws_client {
public:
  raw_ws_client(uint16_t port, const std::string& subscriptions) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0)
      throw std::runtime_error("socket() failed");
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      throw std::runtime_error("connect() failed");
    write_all("GET /v1/messages/json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              "Upgrade: websocket\r\nConnection: Upgrade\r\n"
              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
              "Sec-WebSocket-Version: 13\r\n\r\n");
    read_until("\r\n\r\n", "no upgrade from the WebSocket server");
    write_all(text_frame(subscriptions));
    read_until(R"({"type":"ack")", "no ack from the WebSocket server");
  }

  ~raw_ws_client() {
    if (fd_ >= 0)
      ::close(fd_);
  }

  raw_ws_client(const raw_ws_client&) = delete;
  raw_ws_client& operator=(const raw_ws_client&) = delete;

  void send_text(const std::string& text) { write_all(text_frame(text)); }

private:
  /// A masked text frame (mask key 0, which leaves the payload as it is).
  static std::string text_frame(const std::string& payload) {
    std::string frame;
    frame += static_cast<char>(0x81);
    if (payload.size() < 126) {
      frame += static_cast<char>(0x80 | payload.size());
    } else {
      frame += static_cast<char>(0x80 | 126);
      frame += static_cast<char>((payload.size() >> 8) & 0xFF);
      frame += static_cast<char>(payload.size() & 0xFF);
    }
    frame.append(4, '\0');
    return frame + payload;
  }

  /// Reads until `marker` has arrived (bounded by SO_RCVTIMEO).
  void read_until(std::string_view marker, const char* failure) {
    char buf[4096];
    while (in_.find(marker) == std::string::npos) {
      auto n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0)
        throw std::runtime_error(failure);
      in_.append(buf, static_cast<size_t>(n));
    }
  }

  void write_all(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0)
        throw std::runtime_error("send() to the WebSocket server failed");
      sent += static_cast<size_t>(n);
    }
  }

  int fd_ = -1;
  std::string in_;
};

/// What the creating thread hands over: the endpoint and everything made from it.
struct busy_endpoint {
  std::unique_ptr<endpoint> ep;
  std::vector<std::unique_ptr<raw_ws_client>> clients;
  std::vector<subscriber> subscribers;
  std::unique_ptr<status_subscriber> statuses;
  std::unique_ptr<hub> hb;
  std::unique_ptr<store> master;
  std::unique_ptr<std::thread> blocked_publisher;
  std::atomic<bool> publisher_done{false};
  error publisher_result;
  std::unique_ptr<std::thread> blocked_reader; // In get() on a topic nobody publishes.
  std::atomic<bool> reader_saw_end{false};

  /// After a failed step: end the publisher, so that its thread can be joined.
  ~busy_endpoint() {
    if (ep)
      ep->shutdown();
    for (auto* t : {blocked_publisher.get(), blocked_reader.get()})
      if (t && t->joinable())
        t->join();
  }
};

/// Plain TCP and ws://: the test's WebSocket client speaks no TLS (by default a node
/// speaks Broker's anonymous-ECDH TLS), and all endpoints must agree.
configuration plain() {
  configuration cfg;
  if (auto err = cfg.set("broker.disable-ssl", "true"))
    throw std::runtime_error(err.message());
  return cfg;
}

/// Builds `b` (on the calling thread) with peerings to `accepting` and `dialing`.
void build(busy_endpoint& b, endpoint& accepting, endpoint& dialing) {
  b.ep = std::make_unique<endpoint>(plain());
  auto& ep = *b.ep;
  // One peering we dial (re-dialed if lost) and one we accept.
  auto far_port = accepting.listen("127.0.0.1", 0);
  REQUIRE(far_port);
  REQUIRE(ep.peer("127.0.0.1", *far_port, 1s));
  auto our_port = ep.listen("127.0.0.1", 0);
  REQUIRE(our_port);
  REQUIRE(dialing.peer("127.0.0.1", *our_port, 0s));
  REQUIRE(test::eventually([&] { return ep.peers().size() == 2; }));
  REQUIRE(ep.metrics_listen("127.0.0.1", 0));
  auto ws_port = ep.web_socket_listen("127.0.0.1", 0);
  REQUIRE(ws_port);
  b.clients.push_back(std::make_unique<raw_ws_client>(*ws_port, R"(["/t"])"));
  b.clients.push_back(std::make_unique<raw_ws_client>(*ws_port, R"(["/other"])"));
  auto& publishing_client = *b.clients.back();
  b.clients.push_back(std::make_unique<raw_ws_client>(*ws_port, "[]"));
  for (int i = 0; i < 50; ++i)
    publishing_client.send_text(R"({"type":"data-message","topic":"/t/ws","@data-type":)"
                                R"("count","data":)"
                                + std::to_string(i) + "}");
  b.subscribers.push_back(ep.make_subscriber({"/t"}, queue_options{4, overflow_policy::block}));
  b.subscribers.push_back(
    ep.make_subscriber({"/t"}, queue_options{4, overflow_policy::drop_oldest}));
  b.subscribers.push_back(
    ep.make_subscriber({"/t"}, queue_options{4, overflow_policy::disconnect}));
  b.statuses = std::make_unique<status_subscriber>(ep.make_status_subscriber(true));
  b.hb = std::make_unique<hub>(ep.make_hub({"/t"}));
  auto master = ep.attach_master("threads");
  REQUIRE(master);
  b.master = std::make_unique<store>(std::move(*master));
  b.master->put(data{"k"}, data{1});
  // Publishes until the endpoint is gone; the block subscriber above, which nobody reads,
  // stops it within a few messages.
  auto pub = ep.make_publisher("/t/pub", 2);
  REQUIRE(pub);
  b.blocked_publisher = std::make_unique<std::thread>([&b, p = std::move(*pub)]() mutable {
    for (int i = 0;; ++i) {
      if (auto err = p.publish(data{i})) {
        b.publisher_result = std::move(err);
        break;
      }
    }
    b.publisher_done = true;
  });
  REQUIRE(test::eventually([&] { return ep.metrics().suspended_sources >= 1; }));
  b.blocked_reader = std::make_unique<std::thread>(
    [&b, quiet = ep.make_subscriber({"/quiet"})]() mutable {
      b.reader_saw_end = !quiet.get();
    });
}

} // namespace

TEST_CASE("an endpoint built on one thread is destroyed on another without hanging",
          "[endpoint][threads]") {
  endpoint accepting{plain()};
  endpoint dialing{plain()};
  for (int round = 1; round <= 3; ++round) {
    INFO("round " << round);
    busy_endpoint b;
    bounded("build the endpoint on thread A", [&] { build(b, accepting, dialing); });
    // Thread A has ended (and run its thread-local destructors) before B destroys.
    bounded("destroy the endpoint on thread B", [&] { b.ep.reset(); });
    bounded("end the publisher blocked in publish()", [&] { b.blocked_publisher->join(); });
    CHECK(b.publisher_done.load());
    CHECK(b.publisher_result == ec::shutting_down);
    bounded("end the reader blocked in get()", [&] { b.blocked_reader->join(); });
    CHECK(b.reader_saw_end.load());
    bounded("drop what outlived the endpoint on thread C", [&] {
      b.subscribers.clear();
      b.statuses.reset();
      b.hb.reset();
      b.master.reset();
      b.clients.clear();
    });
    // The peers noticed: they are free for the next round.
    REQUIRE(test::eventually([&] { return accepting.peers().empty(); }));
    REQUIRE(test::eventually([&] { return dialing.peers().empty(); }));
  }
}

TEST_CASE("two peered endpoints are destroyed at once on two threads", "[endpoint][threads]") {
  for (int round = 1; round <= 5; ++round) {
    INFO("round " << round);
    std::unique_ptr<endpoint> a, b;
    std::unique_ptr<subscriber> sa, sb;
    bounded("build two peered endpoints on thread A", [&] {
      a = std::make_unique<endpoint>();
      b = std::make_unique<endpoint>();
      sa = std::make_unique<subscriber>(a->make_subscriber({"/x"}));
      sb = std::make_unique<subscriber>(b->make_subscriber({"/x"}));
      test::connect(*a, *b);
      REQUIRE(test::eventually([&] { return !a->peer_subscriptions().empty(); }));
      for (int i = 0; i < 100; ++i) {
        a->publish("/x", data{i});
        b->publish("/x", data{i});
      }
    });
    // Each destructor says BYE to a peer that is shutting down at the same moment.
    bounded("destroy both endpoints on threads B and C", [&] {
      std::thread tb{[&] { a.reset(); }};
      std::thread tc{[&] { b.reset(); }};
      tb.join();
      tc.join();
    });
    sa.reset();
    sb.reset();
  }
}
