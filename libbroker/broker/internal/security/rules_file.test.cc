#include "broker/internal/security/rules_file.hh"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

using namespace broker::internal::security;

namespace {

const std::string dashboard_hash = hash_token("dashboard-token");

const std::string sample = R"(# A Zeek cluster and a dashboard.
anonymous-identity = "guest"

identity.manager {
  certificates = ["cn:manager.zeek.example"]
  publish = ["/zeek/"]
  subscribe = ["/zeek/"]
}
identity.worker {
  certificates = ["dns:worker-1.zeek.example", "dns:worker-2.zeek.example"]
  publish = ["/zeek/"]
  deny-publish = ["/zeek/control/"]
  subscribe = ["/zeek/control/", "/zeek/cluster/"]
}
identity.dashboard.tokens = [")" + dashboard_hash + R"("]
identity.dashboard.subscribe = "/zeek/logs/notice"
identity.guest.subscribe = ["/public/"]
identity.zmq.curve-keys = ["Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"]
identity.zmq.publish = ["/zmq/"]
)";

std::shared_ptr<const rule_set> load_ok(const std::string& text) {
  auto result = load_rules(text, "rules.conf");
  if (!result)
    FAIL(result.error_value().message());
  return *result;
}

std::string load_error(const std::string& text) {
  auto result = load_rules(text, "rules.conf");
  REQUIRE_FALSE(result);
  CHECK(result.error_value().code() == broker::ec::invalid_config);
  return result.error_value().message();
}

struct temp_path {
  std::string path;
  temp_path() {
    char name[] = "/tmp/broker-rules-test-XXXXXX";
    auto fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
  }
  ~temp_path() { std::remove(path.c_str()); }
  void write(const std::string& text) { std::ofstream{path, std::ios::binary} << text; }
};

} // namespace

TEST_CASE("a complete rules file", "[security][rules-file]") {
  auto rs = load_ok(sample);
  CHECK(rs->enforcing());
  CHECK(rs->identity_count() == 5);
  CHECK(rs->name_of(rs->anonymous()) == "guest");
  auto who = [&](const credential& c) { return rs->name_of(rs->authenticate(c).id); };
  CHECK(who(credential::from_certificate({"cn:manager.zeek.example"})) == "manager");
  CHECK(who(credential::from_certificate({"dns:worker-2.zeek.example"})) == "worker");
  CHECK(who(credential::from_token("dashboard-token")) == "dashboard");
  CHECK(who(credential::from_curve_key("Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID")) == "zmq");
  CHECK(who(credential::anonymous()) == "guest");
  auto w = rs->find("worker");
  CHECK(rs->check_publish(w, "/zeek/logs/conn").allowed);
  auto v = rs->check_publish(w, "/zeek/control/stop");
  CHECK_FALSE(v.allowed);
  CHECK(v.by->source == "rules.conf:12:3");
  CHECK(describe(*v.by)
        == "deny publish \"/zeek/control/\" for identity \"worker\" (rules.conf:12:3)");
  // A single string is one prefix.
  CHECK(rs->check_subscribe(rs->find("dashboard"), "/zeek/logs/notice").outcome
        == subscribe_outcome::allowed);
  CHECK(rs->check_subscribe(rs->anonymous(), "/public/x").outcome
        == subscribe_outcome::allowed);
  CHECK(rs->notes().empty());
}

TEST_CASE("a file without identities enforces nothing", "[security][rules-file]") {
  for (auto text : {"", "# only a comment\n", "anonymous-identity = guest\n"}) {
    auto rs = load_ok(text);
    CHECK_FALSE(rs->enforcing());
    CHECK(rs->check_publish(rs->anonymous(), "/a").allowed);
  }
}

TEST_CASE("the JSON form works too", "[security][rules-file]") {
  auto rs = load_ok(R"({"identity": {"w": {"publish": ["/a/"], "deny-publish": [""]}}})");
  CHECK(rs->check_publish(rs->find("w"), "/a/x").allowed);
  CHECK_FALSE(rs->check_publish(rs->find("w"), "/b").allowed);
}

TEST_CASE("an identity with an empty list exists and may do nothing", "[security][rules-file]") {
  auto rs = load_ok("identity.locked.publish = []\n");
  REQUIRE(rs->find("locked") != no_identity);
  CHECK_FALSE(rs->check_publish(rs->find("locked"), "/a").allowed);
}

TEST_CASE("malformed rules files: the error names file:line:column and what is wrong",
          "[security][rules-file]") {
  CHECK(load_error("identity.w.publish = [\"/a\"\n") .find("rules.conf:") == 0);
  CHECK(load_error("\n\n  tokens = []\n")
        == "rules.conf:3:3: unknown key \"tokens\" (expected anonymous-identity or "
           "identity.<name>.<field>)");
  CHECK(load_error("identity.w = 1\n")
        == "rules.conf:1:1: key \"identity.w\" names no field: write "
           "identity.<name>.<field>, e.g. identity.w.publish");
  CHECK(load_error("identity.w.publsh = [\"/a\"]\n")
        == "rules.conf:1:1: identity \"w\": unknown field \"publsh\" (did you mean "
           "\"publish\"?); fields: certificates, tokens, curve-keys, publish, deny-publish, "
           "subscribe, deny-subscribe");
  CHECK(load_error("identity.w.a.publish = []\n").find("unknown field \"a.publish\"")
        != std::string::npos);
  CHECK(load_error("identity.w.publish = []\nidentity { w { publish = [] } }\n")
        == "rules.conf:2:16: identity \"w\": publish is set twice (first at rules.conf:1:1)");
  CHECK(load_error("anonymous-identity = [\"a\"]\n")
        == "rules.conf:1:1: anonymous-identity: expected an identity name, got a list");
  CHECK(load_error("anonymous-identity = \"a b\"\n")
        == "rules.conf:1:1: anonymous-identity: invalid identity name \"a b\" (words of A-Z "
           "a-z 0-9 _ -, at most 64 bytes)");
  CHECK(load_error("anonymous-identity = a\nanonymous-identity = b\n")
        == "rules.conf:2:1: anonymous-identity is set twice (first at rules.conf:1:1)");
  CHECK(load_error("identity." + std::string(65, 'n') + ".publish = []\n")
          .find("invalid identity name")
        != std::string::npos);
  CHECK(load_error("identity.w.certificates = [\"cn:ok\", \"worker\"]\n")
        == "rules.conf:1:1: identity \"w\": certificates[1]: expected cn:, dns:, uri: or "
           "email: followed by the name, got \"worker\"");
  CHECK(load_error("identity.w.curve-keys = [\"short\"]\n")
        == "rules.conf:1:1: identity \"w\": curve-keys[0]: expected a CURVE public key, 40 "
           "characters of Z85, got \"short\"");
  CHECK(load_error("identity.w.publish = [\"<$>/local\"]\n")
        == "rules.conf:1:1: identity \"w\": publish[0]: reserved prefix \"<$>/local\": "
           "nobody may publish on \"<$>\" topics, so no rule can name them");
  CHECK(load_error("identity.w.deny-publish = [\"<$>\"]\n").find("reserved prefix")
        != std::string::npos);
  CHECK(load_error("identity.w.subscribe = [\"" + std::string(4097, 'x') + "\"]\n")
        == "rules.conf:1:1: identity \"w\": subscribe[0]: a prefix longer than 4096 bytes");
  CHECK(load_error("identity.a.tokens = [\"" + dashboard_hash + "\"]\nidentity.b.tokens = [\""
                   + dashboard_hash + "\"]\n")
        == "rules.conf:2:1: token hash: it already belongs to identity \"a\" "
           "(rules.conf:1:1)");
  CHECK(load_error("anonymous-identity = guest\nidentity.guest.tokens = [\"" + dashboard_hash
                   + "\"]\n")
          .find("rules.conf:2:1: identity \"guest\" is the identity of unauthenticated")
        == 0);
}

TEST_CASE("a token that is not a hash is never quoted back", "[security][rules-file]") {
  auto err = load_error("identity.d.tokens = [\"my-clear-text-token\"]\n");
  CHECK(err.find("my-clear-text-token") == std::string::npos);
  CHECK(err == "rules.conf:1:1: identity \"d\": tokens[0]: expected \"sha256:\" followed by "
               "64 hex digits (broker-node --hash-token makes one from a token), got something "
               "else of 19 bytes (not shown: it may be a token in clear text)");
}

TEST_CASE("random bytes, truncations and mutations give a rule set or an error",
          "[security][rules-file]") {
  std::mt19937 rng{2024};
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 2000; ++i) {
    std::string text(static_cast<size_t>(i % 97), '\0');
    for (auto& c : text)
      c = static_cast<char>(byte(rng));
    auto result = load_rules(text, "random");
    if (!result)
      CHECK(result.error_value().code() == broker::ec::invalid_config);
  }
  for (size_t n = 0; n <= sample.size(); ++n) {
    auto result = load_rules(sample.substr(0, n), "cut");
    if (!result)
      CHECK(result.error_value().message().find("cut:") == 0);
  }
  std::uniform_int_distribution<size_t> pos(0, sample.size() - 1);
  for (int i = 0; i < 2000; ++i) {
    auto text = sample;
    text[pos(rng)] = static_cast<char>(byte(rng));
    auto result = load_rules(text, "mutated");
    if (!result)
      CHECK(result.error_value().message().find("mutated:") == 0);
  }
}

TEST_CASE("a huge rules file loads", "[security][rules-file]") {
  // 1000 identities with 100 prefixes each.
  std::string text;
  for (int who = 0; who < 1000; ++who) {
    text += "identity.id" + std::to_string(who) + ".publish = [";
    for (int i = 0; i < 100; ++i)
      text += "\"/zeek/" + std::to_string(who) + "/" + std::to_string(i) + "/\", ";
    text += "]\n";
  }
  auto rs = load_ok(text);
  CHECK(rs->identity_count() == 1001);
  CHECK(rs->configured_rules() == 100'000);
  CHECK(rs->check_publish(rs->find("id999"), "/zeek/999/99/x").allowed);
  CHECK_FALSE(rs->check_publish(rs->find("id999"), "/zeek/998/99/x").allowed);
}

TEST_CASE("load_rules_file reads the file and names it in errors", "[security][rules-file]") {
  temp_path tmp;
  tmp.write("identity.w.publish = [\"/a/\"]\n");
  auto rs = load_rules_file(tmp.path);
  REQUIRE(rs);
  CHECK((*rs)->check_publish((*rs)->find("w"), "/a/x").allowed);
  tmp.write("identity.w.publish = [\"/a/\"\n");
  rs = load_rules_file(tmp.path);
  REQUIRE_FALSE(rs);
  CHECK(rs.error_value().message().find(tmp.path + ":") == 0);
  auto missing = load_rules_file("/nonexistent/rules.conf");
  REQUIRE_FALSE(missing);
  CHECK(missing.error_value().code() == broker::ec::cannot_open_file);
  CHECK(missing.error_value().message()
        == "broker.security.rules-file: cannot open \"/nonexistent/rules.conf\": No such file "
           "or directory");
  auto dir = load_rules_file("/tmp");
  REQUIRE_FALSE(dir);
  tmp.write(std::string(max_rules_file_size + 1, '#'));
  auto big = load_rules_file(tmp.path);
  REQUIRE_FALSE(big);
  CHECK(big.error_value().message().find("is larger than") != std::string::npos);
}
