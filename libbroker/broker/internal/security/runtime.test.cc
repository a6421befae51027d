#include "broker/internal/security/runtime.hh"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace broker::internal;
using namespace broker::internal::security;

namespace {

struct fixture {
  std::string path;
  std::vector<std::string> lines;
  std::shared_ptr<logger> log;

  fixture() {
    char name[] = "/tmp/broker-runtime-test-XXXXXX";
    auto fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    log = std::make_shared<logger>(log_level::info, log_format::text, "test",
                                   [this](std::string_view line) { lines.emplace_back(line); });
  }

  ~fixture() { std::remove(path.c_str()); }

  void write(const std::string& text) { std::ofstream{path, std::ios::binary} << text; }

  bool logged(const std::string& part) const {
    for (auto& l : lines)
      if (l.find(part) != std::string::npos)
        return true;
    return false;
  }
};

bool may_publish(const runtime& rt, std::string_view topic) {
  guard g{rt.policy(), credential::anonymous()};
  return g.check_publish(topic).allowed;
}

} // namespace

TEST_CASE("a runtime without a rules file allows everything", "[security][runtime]") {
  fixture f;
  runtime rt{"", f.log};
  CHECK_FALSE(rt.load());
  CHECK(may_publish(rt, "/a"));
  CHECK_FALSE(rt.reload());
  CHECK(f.logged("nothing to reload"));
}

TEST_CASE("a runtime loads, reloads, and keeps its rules when a reload fails",
          "[security][runtime]") {
  fixture f;
  f.write("identity.anonymous.publish = [\"/a/\"]\nidentity.anonymous.publish = []\n");
  runtime rt{f.path, f.log};
  REQUIRE(rt.load()); // Field set twice.
  // Nothing valid was ever loaded: everything is refused.
  CHECK_FALSE(may_publish(rt, "/a/x"));
  f.write("identity.anonymous.publish = [\"/a/\", \"/a/\"]\n");
  REQUIRE_FALSE(rt.reload());
  CHECK(may_publish(rt, "/a/x"));
  CHECK_FALSE(may_publish(rt, "/b"));
  CHECK(f.logged("is listed twice")); // The note, as a warning.
  CHECK(f.logged("rules from " + f.path + ": 1 identities, 1 rules"));
  f.write("identity.anonymous.publish = [\"/b/\"\n");
  auto err = rt.reload();
  REQUIRE(err);
  CHECK(err.message().find(f.path + ":") == 0);
  CHECK(f.logged("reload failed, the previous rules stay in force"));
  CHECK(may_publish(rt, "/a/x"));
  f.write("identity.anonymous.publish = [\"/b/\"]\n");
  REQUIRE_FALSE(rt.reload());
  CHECK_FALSE(may_publish(rt, "/a/x"));
  CHECK(may_publish(rt, "/b/x"));
}

TEST_CASE("a rules file without identities is loaded with a warning", "[security][runtime]") {
  fixture f;
  f.write("# nothing yet\n");
  runtime rt{f.path, f.log};
  REQUIRE_FALSE(rt.load());
  CHECK(may_publish(rt, "/a"));
  CHECK(f.logged("defines no identity"));
}

TEST_CASE("authentication failures are counted and logged", "[security][runtime]") {
  fixture f;
  runtime rt{"", f.log};
  rt.authentication_failed(mechanism::token, auth_status::unknown, "10.0.0.7:51234");
  rt.authentication_failed(mechanism::token, auth_status::unknown, "10.0.0.7:51235");
  rt.authentication_failed(mechanism::certificate, auth_status::ambiguous, "10.0.0.8:1");
  CHECK(f.logged("authentication failed (token) from 10.0.0.7:51234: the token belongs "
                 "to no identity"));
  CHECK(f.logged("belong to more than one identity"));
  uint64_t tokens = 0;
  for (auto& row : rt.audit().rows())
    if (row.identity.empty() && row.rule == "token")
      tokens = row.authentication_failures;
  CHECK(tokens == 2);
}

TEST_CASE("admit authenticates, counts, logs and throttles", "[security][runtime]") {
  fixture f;
  f.write("identity.app.tokens = [\"" + hash_token("good") + "\"]\n"
          "identity.app.publish = [\"/app/\"]\n");
  runtime rt{f.path, f.log};
  REQUIRE_FALSE(rt.load());
  SECTION("a known token gets its identity, no credential the anonymous one") {
    auto ok = rt.admit(credential::from_token("good"), "10.0.0.1", 1);
    REQUIRE(ok.admitted);
    CHECK(ok.admitted->identity() == "app");
    auto anon = rt.admit(credential::anonymous(), "10.0.0.1", 2);
    REQUIRE(anon.admitted);
    CHECK(anon.admitted->identity() == "anonymous");
  }
  SECTION("a wrong token is refused with a reason that does not show it") {
    auto bad = rt.admit(credential::from_token("guess-1"), "10.0.0.2", 3);
    CHECK_FALSE(bad.admitted);
    CHECK_FALSE(bad.throttled);
    CHECK(bad.status == auth_status::unknown);
    CHECK(bad.reason == "authentication failed: the token belongs to no identity");
    CHECK(f.logged("authentication failed (token) from 10.0.0.2:3"));
    CHECK_FALSE(f.logged("guess-1"));
  }
  SECTION("an unknown certificate is named") {
    auto bad = rt.admit(credential::from_certificate({"cn:eve", "dns:eve.example"}), "::1", 4);
    CHECK_FALSE(bad.admitted);
    CHECK(bad.reason
          == "authentication failed: the certificate (cn:eve, dns:eve.example) belongs to no "
             "identity");
    CHECK(f.logged("from [::1]:4"));
  }
  SECTION("after 10 failures an address is refused unchecked, others are not") {
    for (int i = 0; i < 10; ++i)
      CHECK_FALSE(rt.admit(credential::from_token("guess"), "10.0.0.3", 5).throttled);
    auto locked = rt.admit(credential::from_token("good"), "10.0.0.3", 6);
    CHECK_FALSE(locked.admitted);
    CHECK(locked.throttled);
    CHECK(locked.retry_after >= 1);
    CHECK(locked.retry_after <= 6);
    CHECK(locked.reason.find("too many failed authentications from 10.0.0.3") == 0);
    // Anonymous connections have nothing to guess; other addresses are not affected.
    CHECK(rt.admit(credential::anonymous(), "10.0.0.3", 7).admitted);
    CHECK(rt.admit(credential::from_token("good"), "10.0.0.4", 8).admitted);
    uint64_t failures = 0;
    uint64_t throttled = 0;
    for (auto& row : rt.audit().rows())
      if (row.identity.empty() && row.rule == "token") {
        failures = row.authentication_failures;
        throttled = row.authentication_throttled;
      }
    CHECK(failures == 10);
    CHECK(throttled == 1);
  }
}

TEST_CASE("watchers run after successful reloads only", "[security][runtime]") {
  fixture f;
  f.write("identity.a.publish = [\"/a\"]\n");
  runtime rt{f.path, f.log};
  REQUIRE_FALSE(rt.load());
  int calls = 0;
  auto token = rt.watch([&calls] { ++calls; });
  REQUIRE_FALSE(rt.reload());
  CHECK(calls == 1);
  f.write("identity.a.publsh = [\"/a\"]\n");
  CHECK(rt.reload());
  CHECK(calls == 1);
  rt.unwatch(token);
  f.write("identity.a.publish = [\"/b\"]\n");
  REQUIRE_FALSE(rt.reload());
  CHECK(calls == 1);
}

TEST_CASE("a ZeroMQ transport looks up and admits CURVE keys", "[security][runtime]") {
  // Z85 of 32 bytes: the example key of ZeroMQ's RFC 26 and one of zeros.
  const std::string worker_key = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
  const std::string other_key(40, '0');
  fixture f;
  SECTION("without rules there is nothing to look up, and every key is admitted") {
    runtime rt{"", f.log};
    REQUIRE_FALSE(rt.load());
    CHECK(rt.identity_of_curve_key(worker_key).empty());
    CHECK(rt.admit_curve_key(worker_key, "10.0.0.1", 1).admitted);
  }
  f.write("identity.worker.curve-keys = [\"" + worker_key + "\"]\n"
          "identity.worker.publish = [\"zeek/\"]\n");
  runtime rt{f.path, f.log};
  REQUIRE_FALSE(rt.load());
  SECTION("a configured key names its identity; others name none") {
    CHECK(rt.identity_of_curve_key(worker_key) == "worker");
    CHECK(rt.identity_of_curve_key(other_key).empty());
    CHECK(rt.identity_of_curve_key("").empty());
    CHECK(rt.identity_of_curve_key(worker_key.substr(0, 39)).empty());
    for (auto& row : rt.audit().rows()) // A lookup counts nothing.
      CHECK(row.authentication_failures == 0);
  }
  SECTION("admit_curve_key gives the identity's guard, or a counted refusal") {
    auto ok = rt.admit_curve_key(worker_key, "10.0.0.1", 1);
    REQUIRE(ok.admitted);
    CHECK(ok.admitted->identity() == "worker");
    CHECK(ok.admitted->check_publish("zeek/logs/conn").allowed);
    CHECK_FALSE(ok.admitted->check_publish("other").allowed);
    auto unknown = rt.admit_curve_key(other_key, "10.0.0.2", 2);
    CHECK_FALSE(unknown.admitted);
    CHECK(unknown.status == auth_status::unknown);
    CHECK(unknown.reason == "authentication failed: the CURVE key " + other_key
                              + " belongs to no identity");
    auto bad = rt.admit_curve_key(std::string{"\x01\x02secret"}, "10.0.0.3", 3);
    CHECK_FALSE(bad.admitted);
    CHECK(bad.status == auth_status::unusable);
    CHECK(bad.reason
          == "authentication failed: not a CURVE public key (expected 40 characters of Z85, "
             "got 8 bytes)");
    CHECK(f.logged("authentication failed (curve-key) from 10.0.0.3:3"));
    CHECK_FALSE(f.logged("secret"));
    uint64_t failures = 0;
    for (auto& row : rt.audit().rows())
      if (row.identity.empty() && row.rule == "curve-key")
        failures = row.authentication_failures;
    CHECK(failures == 2);
  }
  SECTION("a reload that drops the key drops the identity") {
    f.write("identity.worker.publish = [\"zeek/\"]\n");
    REQUIRE_FALSE(rt.reload());
    CHECK(rt.identity_of_curve_key(worker_key).empty());
    CHECK_FALSE(rt.admit_curve_key(worker_key, "10.0.0.4", 4).admitted);
  }
}
