// Our master and clone against a Broker peer that exists only as bytes: every command the
// test feeds in and every command it expects is written out in hex, as Broker's store
// protocol lays it out (doc/protocol/stores.md). Entities: Broker's master BM (actor 42)
// and Broker's clone BC (actor 7) on node B; our master OM and our clone OC on node O.

#include "broker/internal/store/store_logic.test.hh"

#include "broker/internal/codec/bin.test.hh"
#include "broker/internal/codec/hex.hh"
#include "broker/internal/store/clone.hh"
#include "broker/internal/store/master.hh"

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::test;
using namespace std::chrono_literals;

namespace {

// Hex test vectors: the bin codec tests' helpers.
using bin::test::from_hex;
using bin::test::to_hex;

/// For ids spelled right in this file (runs before any test: no REQUIRE here).
endpoint_id parse_id(const char* text) {
  return endpoint_id::parse(text).value_or(endpoint_id{});
}

const auto node_b = parse_id("925c9110-5b87-57d9-9d80-b65568e87a44");
const auto node_o = parse_id("c0551e8d-392b-509b-a47b-ae46f75befac");

#define HEX_BM "925c91105b8757d99d80b65568e87a44 000000000000002a "
#define HEX_BC "925c91105b8757d99d80b65568e87a44 0000000000000007 "
#define HEX_OM "c0551e8d392b509ba47bae46f75befac 0000000000001111 "
#define HEX_OC "c0551e8d392b509ba47bae46f75befac 00000000000003e8 "
#define HEX_OC_R1 "c0551e8d392b509ba47bae46f75befac 00000000000003e9 " // Reader, attach 1.
#define HEX_OC_R2 "c0551e8d392b509ba47bae46f75befac 00000000000003ea " // Reader, attach 2.
#define HEX_P "c0551e8d392b509ba47bae46f75befac 0000000000000005 "   // Our publisher.
#define HEX_NIL "00000000000000000000000000000000 0000000000000000 "

const entity_id publisher{node_o, 5};

/// The answer's value, or a marker that fails any comparison with a real value.
data value_of(const expected<data>& r) {
  return r ? *r : data{"no value: " + r.error_value().message()};
}

/// What the stores sent since `mark`, as "topic-suffix hex" lines.
std::vector<std::string> sent_since(const bus& net, size_t mark) {
  std::vector<std::string> result;
  for (size_t i = mark; i < net.sent.size(); ++i) {
    auto& p = net.sent[i];
    auto suffix = p.topic.substr(p.topic.rfind('/') + 1);
    result.push_back(suffix + " " + to_hex(p.bytes));
  }
  return result;
}

std::string line(const char* topic_suffix, const char* hex) {
  std::string text = topic_suffix;
  text += ' ';
  for (auto c : std::string_view{hex})
    if (c != ' ')
      text += c;
  return text;
}

} // namespace

TEST_CASE("a Broker clone attaches to our master, writes and gets answers, from byte-exact "
          "commands",
          "[store_logic][interop]") {
  bus net{1};
  node_env env{net, 0};
  auto master = make_master_logic("s", {node_o, 0x1111}, make_memory_backend(),
                                  fast_settings(), env);
  net.add(master.get());
  master->start(net.now);
  master->write(make_op_put("a", count{1}, std::nullopt, publisher), net.now); // Seq 2.
  auto feed = [&](const char* hex) {
    master->handle(master_topic("s"), from_hex(hex), net.now);
  };
  // 1. The clone's attach request: nack{[0]}.
  auto mark = net.sent.size();
  feed("0000000000000000 " HEX_BC HEX_NIL "0b 01 0000000000000000");
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("clone", "0000000000000002 " HEX_OM HEX_BC
                                                  "0c 0000000000000002 0005 01 "
                                                  "050161 020000000000000001")});
  // 2. Its first ack, then its writer's handshake: the master acks the writer at once.
  mark = net.sent.size();
  feed("0000000000000000 " HEX_BC HEX_OM "0a 0000000000000002");
  feed("0000000000000000 " HEX_BC HEX_OM "08 0000000000000001 0005");
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("clone", "0000000000000000 " HEX_OM HEX_BC
                                                  "0a 0000000000000001")});
  // 3. A write: applied, then broadcast as the put it caused.
  mark = net.sent.size();
  feed("0000000000000002 " HEX_BC HEX_OM "00 050162 020000000000000007 00 " HEX_BC);
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("clone", "0000000000000003 " HEX_OM HEX_NIL
                                                  "00 050162 020000000000000007 00 " HEX_BC)});
  master->get("b", [](expected<data> r) {
    CHECK(value_of(r) == data{count{7}});
  });
  // 4. put_unique on a taken key: the verdict goes through the channel.
  mark = net.sent.size();
  feed("0000000000000003 " HEX_BC HEX_OM "01 050162 020000000000000008 00 " HEX_BC
       "0000000000000009 " HEX_BC);
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("clone", "0000000000000004 " HEX_OM HEX_NIL "02 00 "
                                                  HEX_BC "0000000000000009 " HEX_OM)});
  // 5. A nack: the same bytes again, to the one who asked (as a broadcast, like Broker).
  mark = net.sent.size();
  feed("0000000000000000 " HEX_BC HEX_OM "0b 01 0000000000000003");
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("clone", "0000000000000003 " HEX_OM HEX_NIL
                                                  "00 050162 020000000000000007 00 " HEX_BC)});
  // 6. Heartbeats: keepalive with the last sequence number, and the writer channel's ack.
  mark = net.sent.size();
  net.run(10);
  auto out = sent_since(net, mark);
  CHECK(std::count(out.begin(), out.end(),
                   line("clone", "0000000000000000 " HEX_OM HEX_NIL "09 0000000000000004"))
        >= 1);
  CHECK(std::count(out.begin(), out.end(),
                   line("clone", "0000000000000000 " HEX_OM HEX_BC "0a 0000000000000003"))
        >= 1);
  CHECK(master->malformed() == 0);
}

TEST_CASE("our clone attaches to a Broker master, reads, writes and re-attaches, from "
          "byte-exact commands",
          "[store_logic][interop]") {
  bus net{2};
  node_env env{net, 0};
  auto clone = make_clone_logic("s", {node_o, 1000}, fast_settings(), env);
  net.add(clone.get());
  auto feed = [&](const char* hex) {
    clone->handle(clone_topic("s"), from_hex(hex), net.now);
  };
  // 1. Start: nack{[0]} from the reader entity of attach 1, to no one in particular.
  auto mark = net.sent.size();
  clone->start(net.now);
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("master", "0000000000000000 " HEX_OC_R1 HEX_NIL
                                                   "0b 01 0000000000000000")});
  // 2. Broker's ack_clone: offset 1, 5 ticks, {"a": 1}. The clone acks it and opens its
  //    write channel.
  mark = net.sent.size();
  feed("0000000000000001 " HEX_BM HEX_OC_R1 "0c 0000000000000001 0005 01 050161 "
       "020000000000000001");
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{
          line("master", "0000000000000000 " HEX_OC_R1 HEX_BM "0a 0000000000000001"),
          line("master", "0000000000000000 " HEX_OC HEX_BM "08 0000000000000001 0005")});
  CHECK(clone->ready());
  clone->get("a", [](expected<data> r) {
    CHECK(value_of(r) == data{count{1}});
  });
  // 3. A write waits for the master's ack of the writer handshake, then goes out.
  mark = net.sent.size();
  clone->write(make_op_put("x", count{3}, std::nullopt, publisher), net.now);
  CHECK(sent_since(net, mark).empty());
  feed("0000000000000000 " HEX_BM HEX_OC "0a 0000000000000001");
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("master", "0000000000000002 " HEX_OC HEX_BM
                                                   "00 050178 020000000000000003 00 " HEX_P)});
  // 4. The master's update arrives; the clone applies it.
  feed("0000000000000002 " HEX_BM HEX_NIL "00 050178 020000000000000003 00 " HEX_P);
  clone->get("x", [](expected<data> r) {
    CHECK(value_of(r) == data{count{3}});
  });
  // 5. put_unique: who = the clone's writer entity; the verdict comes as an update.
  std::optional<expected<data>> verdict;
  mark = net.sent.size();
  clone->put_unique("y", count{4}, std::nullopt, publisher, net.now,
                    [&](expected<data> r) { verdict = std::move(r); });
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("master", "0000000000000003 " HEX_OC HEX_BM
                                                   "01 050179 020000000000000004 00 " HEX_OC
                                                   "0000000000000001 " HEX_P)});
  feed("0000000000000003 " HEX_BM HEX_NIL "00 050179 020000000000000004 00 " HEX_P);
  feed("0000000000000004 " HEX_BM HEX_NIL "02 01 " HEX_OC "0000000000000001 " HEX_BM);
  REQUIRE(verdict);
  REQUIRE(*verdict);
  CHECK(**verdict == data{true});
  // Another clone's verdict is not ours.
  feed("0000000000000005 " HEX_BM HEX_NIL "02 00 " HEX_BC "0000000000000001 " HEX_BM);
  // 6. A keepalive reveals two missed updates: the clone nacks them.
  mark = net.sent.size();
  feed("0000000000000000 " HEX_BM HEX_NIL "09 0000000000000007");
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("master", "0000000000000000 " HEX_OC_R1 HEX_BM
                                                   "0b 02 0000000000000006 0000000000000007")});
  // 7. The master cannot retransmit: the clone starts over under a new reader entity.
  mark = net.sent.size();
  feed("0000000000000000 " HEX_BM HEX_OC_R1 "0d 0000000000000006");
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("master", "0000000000000000 " HEX_OC_R2 HEX_NIL
                                                   "0b 01 0000000000000000")});
  // Still answering from the old state until the new snapshot arrives.
  clone->get("y", [](expected<data> r) {
    CHECK(value_of(r) == data{count{4}});
  });
  feed("0000000000000007 " HEX_BM HEX_OC_R2 "0c 0000000000000007 0005 01 050161 "
       "020000000000000009");
  clone->get("a", [](expected<data> r) {
    CHECK(value_of(r) == data{count{9}});
  });
  clone->get("y", [](expected<data> r) { CHECK(r.error_value() == ec::no_such_key); });
  CHECK(clone->malformed() == 0);
  CHECK(env.events.size() >= 2);
}

TEST_CASE("our clone ignores commands meant for other stores' entities", "[store_logic][interop]") {
  bus net{3};
  node_env env{net, 0};
  auto clone = make_clone_logic("s", {node_o, 1000}, fast_settings(), env);
  net.add(clone.get());
  clone->start(net.now);
  // An ack_clone for another clone (BC), and one for a reader attach we never made.
  clone->handle(clone_topic("s"),
                from_hex("0000000000000001 " HEX_BM HEX_BC "0c 0000000000000001 0005 00"), net.now);
  clone->handle(clone_topic("s"),
                from_hex("0000000000000001 " HEX_BM HEX_OC_R2 "0c 0000000000000001 0005 00"),
                net.now);
  CHECK(!clone->ready());
  CHECK(clone->malformed() == 0);
}

TEST_CASE("our clone's verdict request to a Broker master: ignored, acknowledged, and so "
          "'acknowledged' without an outcome",
          "[store_logic][interop]") {
  bus net{4};
  node_env env{net, 0};
  auto clone = make_clone_logic("s", {node_o, 1000}, fast_settings(), env);
  net.add(clone.get());
  auto feed = [&](const char* hex) {
    clone->handle(clone_topic("s"), from_hex(hex), net.now);
  };
  clone->start(net.now);
  feed("0000000000000001 " HEX_BM HEX_OC_R1 "0c 0000000000000001 0005 00");
  feed("0000000000000000 " HEX_BM HEX_OC "0a 0000000000000001");
  clone->write(make_op_put("x", count{3}, std::nullopt, publisher), net.now);
  // The request: put_unique_result{false, who = our writer, req 1, publisher = our writer},
  // right behind the write on the write channel. Broker's master logs it at debug level
  // ("unexpected command") and goes on.
  std::optional<expected<data>> verdict;
  auto mark = net.sent.size();
  clone->verdict(net.now, [&](expected<data> r) { verdict = std::move(r); });
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("master", "0000000000000003 " HEX_OC HEX_BM "02 00 "
                                                   HEX_OC "0000000000000001 " HEX_OC)});
  feed("0000000000000002 " HEX_BM HEX_NIL "00 050178 020000000000000003 00 " HEX_P);
  CHECK(!verdict);
  // An acknowledgement of the write alone settles nothing.
  feed("0000000000000000 " HEX_BM HEX_OC "0a 0000000000000002");
  CHECK(!verdict);
  // Acknowledged with nothing out of order and no answer: no outcome to report.
  feed("0000000000000000 " HEX_BM HEX_OC "0a 0000000000000003");
  REQUIRE(verdict);
  REQUIRE(*verdict);
  CHECK((*verdict)->get_type() == data::type::none);
  // The clone holds the master's state after the write (read your writes).
  clone->get("x", [](expected<data> r) { CHECK(value_of(r) == data{count{3}}); });
  CHECK(clone->malformed() == 0);
}

TEST_CASE("our master answers a verdict request of a Broker-shaped writer in the update "
          "sequence, with the first rejection's code",
          "[store_logic][interop]") {
  bus net{5};
  node_env env{net, 0};
  auto master = make_master_logic("s", {node_o, 0x1111}, make_memory_backend(),
                                  fast_settings(), env);
  net.add(master.get());
  master->start(net.now);
  master->write(make_op_put("a", "text", std::nullopt, publisher), net.now);
  auto feed = [&](const char* hex) {
    master->handle(master_topic("s"), from_hex(hex), net.now);
  };
  feed("0000000000000000 " HEX_BC HEX_NIL "0b 01 0000000000000000");
  feed("0000000000000000 " HEX_BC HEX_OM "0a 0000000000000002");
  feed("0000000000000000 " HEX_BC HEX_OM "08 0000000000000001 0005");
  // add 1 to "a" (a string): type_clash, logged, counted, an error event.
  auto mark = net.sent.size();
  feed("0000000000000002 " HEX_BC HEX_OM "05 050161 030000000000000001 03 00 " HEX_BC);
  CHECK(sent_since(net, mark).empty());
  CHECK(master->stats().rejected_writes == 1);
  REQUIRE(env.failures.size() == 1);
  CHECK(env.failures[0] == ec::type_clash);
  REQUIRE(!env.warnings.empty());
  CHECK(env.warnings.back().find("store s: add of key") == 0);
  // The verdict request: answered in the update sequence, code 11 (type_clash).
  feed("0000000000000003 " HEX_BC HEX_OM "02 00 " HEX_BC "0000000000000009 " HEX_BC);
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("clone", "0000000000000003 " HEX_OM HEX_NIL "02 00 "
                                                  HEX_BC "0000000000000009 "
                                                  "c0551e8d392b509ba47bae46f75befac "
                                                  "000000000000000b")});
  // A clean write since: the next verdict is positive, code 0.
  feed("0000000000000004 " HEX_BC HEX_OM "00 050162 020000000000000007 00 " HEX_BC);
  mark = net.sent.size();
  feed("0000000000000005 " HEX_BC HEX_OM "02 00 " HEX_BC "000000000000000a " HEX_BC);
  CHECK(sent_since(net, mark)
        == std::vector<std::string>{line("clone", "0000000000000005 " HEX_OM HEX_NIL "02 01 "
                                                  HEX_BC "000000000000000a "
                                                  "c0551e8d392b509ba47bae46f75befac "
                                                  "0000000000000000")});
  CHECK(master->malformed() == 0);
}
