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
  CHECK(f.logged("authentication failed (token) from 10.0.0.7:51234: the credential belongs "
                 "to no identity"));
  CHECK(f.logged("belong to more than one identity"));
  uint64_t tokens = 0;
  for (auto& row : rt.audit().rows())
    if (row.identity.empty() && row.rule == "token")
      tokens = row.authentication_failures;
  CHECK(tokens == 2);
}
