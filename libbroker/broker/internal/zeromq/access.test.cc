// Access control on ZeroMQ connections (doc/security.md, "ZeroMQ"): CURVE clients admitted
// by the identity their key names and limited by its rules, with real libzmq sockets over
// TCP on 127.0.0.1. Every wait is bounded. Built with libzmq only (BROKER_HAVE_LIBZMQ).

#include <catch2/catch.hpp>

#ifndef BROKER_HAVE_LIBZMQ

TEST_CASE("zeromq access control with libzmq nodes", "[zeromq][security]") {
  WARN("skipped: libzmq was not found at configure time");
  SUCCEED();
}

#else

#include "broker/internal/zeromq/zeromq.test.hh"

#include <cstdio>
#include <fstream>

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::zeromq::test;

namespace {

/// A rules file with two identities by CURVE key, and the runtime that loaded it.
struct rules {
  std::string path;
  std::vector<std::string> lines;
  std::shared_ptr<logger> log;
  std::shared_ptr<security::runtime> rt;

  explicit rules(const std::string& text) {
    char name[] = "/tmp/broker-zeromq-access-test-XXXXXX";
    auto fd = mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream{path, std::ios::binary} << text;
    log = std::make_shared<logger>(log_level::info, log_format::text, "test",
                                   [this](std::string_view line) {
                                     std::lock_guard<std::mutex> g{mtx};
                                     lines.emplace_back(line);
                                   });
    rt = std::make_shared<security::runtime>(path, log);
    REQUIRE_FALSE(rt->load());
  }

  ~rules() { std::remove(path.c_str()); }

  std::mutex mtx;

  uint64_t sum(uint64_t security::audit_row::*field, const std::string& identity) const {
    uint64_t n = 0;
    for (auto& row : rt->audit().rows())
      if (row.identity == identity && row.rule.empty())
        n += row.*field;
    return n;
  }

  uint64_t auth_failures() const {
    uint64_t n = 0;
    for (auto& row : rt->audit().rows())
      n += row.authentication_failures;
    return n;
  }
};

bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < wait_ms / 10; ++i) {
    if (pred())
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

} // namespace

TEST_CASE("zeromq: a CURVE key names an identity whose rules limit publishing and "
          "subscribing",
          "[zeromq][security][interop]") {
  auto server_keys = zmtp::generate_keypair();
  auto worker = zmtp::generate_keypair();
  auto logger_node = zmtp::generate_keypair();
  rules r{"identity.worker.curve-keys = [\"" + zmtp::to_z85(worker.public_key) + "\"]\n"
          "identity.worker.publish = [\"zeek.logs.\"]\n"
          "identity.worker.subscribe = [\"zeek.cluster.\"]\n"
          "identity.logger.curve-keys = [\"" + zmtp::to_z85(logger_node.public_key) + "\"]\n"
          "identity.logger.publish = [\"\"]\n"
          "identity.logger.subscribe = [\"\"]\n"};
  zeromq_settings zs;
  zs.server_secret_key = zmtp::to_z85(server_keys.secret_key);
  fixture f{zs, r.rt};
  auto* wpub = f.xpub(&worker, &server_keys.public_key);
  auto* wsub = f.xsub(&worker, &server_keys.public_key);
  auto* lpub = f.xpub(&logger_node, &server_keys.public_key);
  auto* lsub = f.xsub(&logger_node, &server_keys.public_key);
  REQUIRE(wait_connections(*f.srv, 4));
  // The worker may subscribe to zeek.cluster. but not to zeek.logs.: only the first
  // reaches the publishers.
  send_str(wsub, "\x01zeek.logs.");
  send_str(wsub, "\x01zeek.cluster.");
  CHECK(recv_one(lpub) == "\x01zeek.cluster.");
  CHECK(recv_one(wpub) == "\x01zeek.cluster.");
  CHECK(r.sum(&security::audit_row::refused_subscriptions, "worker") == 1);
  // The logger subscribes to everything it is sent.
  send_str(lsub, "\x01zeek.");
  CHECK(recv_one(lpub) == "\x01zeek.");
  CHECK(recv_one(wpub) == "\x01zeek.");
  // The worker's event on a topic it may not publish on is neither forwarded nor counted
  // as forwarded; one it may publish arrives (the logger gets it after the refused one,
  // so the refused one was never sent).
  publish(wpub, {"zeek.cluster.x", "w", "broker-bin-v1", "refused"});
  publish(wpub, {"zeek.cluster.x", "w", "broker-bin-v1", "refused"});
  publish(wpub, {"zeek.logs.conn", "w", "broker-bin-v1", "allowed"});
  CHECK(recv_parts(lsub)
        == std::vector<std::string>{"zeek.logs.conn", "w", "broker-bin-v1", "allowed"});
  CHECK(eventually(
    [&] { return r.sum(&security::audit_row::refused_publishes, "worker") == 2; }));
  // The logger may publish anything; the worker receives only what it was granted
  // (zeek.cluster.), never zeek.logs. events.
  publish(lpub, {"zeek.logs.dns", "l", "broker-bin-v1", "not for the worker"});
  publish(lpub, {"zeek.cluster.y", "l", "broker-bin-v1", "for the worker"});
  CHECK(recv_parts(wsub)
        == std::vector<std::string>{"zeek.cluster.y", "l", "broker-bin-v1", "for the worker"});
  CHECK(r.sum(&security::audit_row::refused_publishes, "logger") == 0);
}

TEST_CASE("zeromq: with rules, a CURVE key of no identity is refused unless it is the "
          "configured shared key",
          "[zeromq][security][interop]") {
  auto server_keys = zmtp::generate_keypair();
  auto shared = zmtp::generate_keypair();
  auto stranger = zmtp::generate_keypair();
  auto worker = zmtp::generate_keypair();
  rules r{"identity.worker.curve-keys = [\"" + zmtp::to_z85(worker.public_key) + "\"]\n"
          "identity.worker.publish = [\"\"]\n"
          "identity.worker.subscribe = [\"\"]\n"
          "identity.anonymous.subscribe = [\"public.\"]\n"};
  zeromq_settings zs;
  zs.server_secret_key = zmtp::to_z85(server_keys.secret_key);
  zs.client_public_key = zmtp::to_z85(shared.public_key);
  fixture f{zs, r.rt};
  // A stranger's key is refused (an authentication failure, counted).
  f.xsub(&stranger, &server_keys.public_key);
  CHECK(eventually([&] { return r.auth_failures() == 1; }));
  CHECK(eventually([&] { return f.srv->counters().failed == 1; }));
  // The shared key gets in as the anonymous identity (limited to public.); the worker's key
  // as the worker.
  auto* asub = f.xsub(&shared, &server_keys.public_key);
  auto* wpub = f.xpub(&worker, &server_keys.public_key);
  REQUIRE(wait_connections(*f.srv, 2));
  send_str(asub, "\x01secret.");
  send_str(asub, "\x01public.");
  CHECK(recv_one(wpub) == "\x01public.");
  CHECK(r.sum(&security::audit_row::refused_subscriptions, "anonymous") == 1);
  publish(wpub, {"secret.x", "w", "broker-bin-v1", "p"});
  publish(wpub, {"public.x", "w", "broker-bin-v1", "p"});
  CHECK(recv_parts(asub) == std::vector<std::string>{"public.x", "w", "broker-bin-v1", "p"});
  CHECK(r.auth_failures() == 1);
}

TEST_CASE("zeromq: with rules and NULL, connections are the anonymous identity",
          "[zeromq][security][interop]") {
  rules r{"identity.anonymous.publish = [\"public.\"]\n"
          "identity.anonymous.subscribe = [\"\"]\n"};
  fixture f{{}, r.rt};
  auto* pub = f.xpub();
  auto* sub = f.xsub();
  REQUIRE(wait_connections(*f.srv, 2));
  send_str(sub, "\x01");
  CHECK(recv_one(pub) == "\x01");
  publish(pub, {"private.x", "n", "broker-bin-v1", "p"});
  publish(pub, {"public.x", "n", "broker-bin-v1", "p"});
  CHECK(recv_parts(sub) == std::vector<std::string>{"public.x", "n", "broker-bin-v1", "p"});
  CHECK(r.sum(&security::audit_row::refused_publishes, "anonymous") == 1);
}

#endif
