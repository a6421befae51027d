// GET /v1/status: the document's content, the query, and rates from samples.

#include "broker/internal/ops/status.hh"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

using namespace broker;
using namespace broker::internal;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

handler_status make_handler(uint64_t id, handler_kind kind, size_t buffered, size_t capacity) {
  handler_status h;
  h.id = id;
  h.kind = kind;
  h.policy = overflow_policy::disconnect;
  h.buffered = buffered;
  h.capacity = capacity;
  h.remote = endpoint_id::random();
  h.address = "127.0.0.1";
  h.port = static_cast<uint16_t>(5000 + id);
  h.has_source = true;
  h.filters = true;
  h.filter = {"/t/" + std::to_string(id)};
  return h;
}

node_snapshot snapshot_at(std::chrono::steady_clock::time_point t, uint64_t processed,
                          uint64_t peer_out) {
  node_snapshot snap;
  snap.node.id = endpoint_id::random();
  snap.node.name = "hub-1";
  snap.node.version = "1.2.3";
  snap.node.started_steady = t - 5s;
  snap.taken_steady = t;
  snap.core_answered = true;
  snap.core.metrics.processed = processed;
  auto peer = make_handler(10, handler_kind::peer, 3, 4);
  peer.delivered = peer_out;
  peer.announced = {"/mine"};
  snap.core.handlers.push_back(peer);
  for (uint64_t i = 0; i < 5; ++i)
    snap.core.handlers.push_back(make_handler(20 + i, handler_kind::web_socket, i, 10));
  peer_link link;
  link.handler = 10;
  link.id = peer.remote;
  link.outbound = true;
  link.port = 9999;
  link.tls = "verified";
  link.pings = 2;
  snap.network.peers.push_back(link);
  snap.network.dials.push_back(pending_dial{"10.0.0.9", 9999, false, endpoint_id{},
                                            "cannot connect to 10.0.0.9:9999: refused"});
  return snap;
}

} // namespace

TEST_CASE("the status names the endpoint, its peers with direction, TLS and queues",
          "[status]") {
  auto now = std::chrono::steady_clock::now();
  auto snap = snapshot_at(now, 10, 7);
  auto doc = json::parse(render_status(snap, rate_set{}, status_query{}));
  CHECK(doc["endpoint"]["name"] == "hub-1");
  CHECK(doc["endpoint"]["version"] == "1.2.3");
  CHECK(doc["endpoint"]["uptime_seconds"].get<double>() == Approx(5.0));
  REQUIRE(doc["peers"]["total"] == 1);
  auto peer = doc["peers"]["items"][0];
  CHECK(peer["id"] == to_string(snap.core.handlers[0].remote));
  CHECK(peer["direction"] == "outbound");
  CHECK(peer["tls"] == "verified");
  CHECK(peer["state"] == "peered");
  CHECK(peer["port"] == 9999); // The dialed port, not the local view of it.
  CHECK(peer["queue"]["size"] == 3);
  CHECK(peer["queue"]["capacity"] == 4);
  CHECK(peer["queue"]["fill"].get<double>() == Approx(0.75));
  CHECK(peer["queue"]["policy"] == "disconnect");
  CHECK(peer["messages_out"] == 7);
  CHECK(peer["subscriptions"] == json::array({"/t/10"}));
  CHECK(peer["announced"] == json::array({"/mine"}));
  CHECK(peer["pings"] == 2);
  CHECK(peer["rates"].is_null());
  auto dial = doc["peers"]["dials"][0];
  CHECK(dial["address"] == "10.0.0.9");
  CHECK(dial["state"] == "waiting");
  CHECK(doc["clients"]["total"] == 5);
  CHECK(doc["clients"]["items"].size() == 5);
}

TEST_CASE("the status says what an operator needs without reading the code", "[status]") {
  auto snap = snapshot_at(std::chrono::steady_clock::now(), 0, 0);
  // An inbound peer: its source port is ephemeral.
  auto in = make_handler(11, handler_kind::peer, 0, 4);
  snap.core.handlers.push_back(in);
  peer_link link;
  link.handler = 11;
  link.id = in.remote;
  link.outbound = false;
  link.port = in.port;
  snap.network.peers.push_back(link);
  // A store master, named by its subscription.
  auto store = make_handler(30, handler_kind::store_master, 0, 10);
  store.filter = {"users/<$>/data/master"};
  snap.core.handlers.push_back(store);
  snap.network.clients.apps[20] = "zeek-rs/a";
  snap.network.clients.rejected_inputs = 3;
  snap.network.clients.ping_timeouts = 1;
  snap.network.clients.rejected_clients = {{"application_name", 2}, {"tls", 0}};
  snap.network.events.push_back(event_entry{"2026-01-01T00:00:00.000", "info", "peering",
                                            "lost peer x"});
  auto doc = json::parse(render_status(snap, rate_set{}, status_query{}));
  json inbound;
  for (auto& p : doc["peers"]["items"])
    if (p["handler"] == 11)
      inbound = p;
  CHECK(inbound["direction"] == "inbound");
  CHECK(inbound["port"].is_null());
  CHECK(inbound["source_port"] == in.port);
  CHECK(doc["peers"]["dials"][0]["last_error"] == "cannot connect to 10.0.0.9:9999: refused");
  CHECK(doc["local"]["stores"]["items"][0]["name"] == "users");
  json app;
  for (auto& c : doc["clients"]["items"])
    if (c["handler"] == 20)
      app = c["app"];
  CHECK(app == "zeek-rs/a");
  CHECK(doc["clients"]["items"][1]["app"].is_null()); // Sent no X-Application-Name.
  CHECK(doc["clients"]["rejected_inputs"] == 3);
  CHECK(doc["clients"]["ping_timeouts"] == 1);
  CHECK(doc["clients"]["rejected_clients"]["application_name"] == 2);
  REQUIRE(doc["events"].size() == 1);
  CHECK(doc["events"][0]["message"] == "lost peer x");
  CHECK(doc["events"][0]["component"] == "peering");
}

TEST_CASE("a limit lists the fullest queues first and counts the rest", "[status]") {
  auto snap = snapshot_at(std::chrono::steady_clock::now(), 0, 0);
  status_query q;
  q.limit = 2;
  auto doc = json::parse(render_status(snap, rate_set{}, q));
  CHECK(doc["clients"]["total"] == 5);
  REQUIRE(doc["clients"]["items"].size() == 2);
  CHECK(doc["clients"]["items"][0]["queue"]["size"] == 4);
  CHECK(doc["clients"]["items"][1]["queue"]["size"] == 3);
}

TEST_CASE("rates compare with the oldest sample of the window", "[status]") {
  rate_tracker tracker;
  auto t0 = std::chrono::steady_clock::now();
  auto first = tracker.update(snapshot_at(t0, 100, 10));
  CHECK(first.window == 0);
  auto r = tracker.update(snapshot_at(t0 + 2s, 300, 30));
  CHECK(r.window == Approx(2.0));
  CHECK(r.processed == Approx(100.0));
  CHECK(r.handlers.at(10).out == Approx(10.0));
  // Samples closer than a second are not kept, so the base stays the first sample.
  tracker.update(snapshot_at(t0 + 2500ms, 350, 30));
  r = tracker.update(snapshot_at(t0 + 4s, 500, 50));
  CHECK(r.window == Approx(4.0));
  CHECK(r.processed == Approx(100.0));
  // Beyond the window the oldest samples go.
  // Beyond the window the oldest samples go: t0 and t0 + 2 s are more than 10 s old.
  r = tracker.update(snapshot_at(t0 + 13s, 1400, 68));
  CHECK(r.window == Approx(9.0));
  CHECK(r.processed == Approx(100.0));
  auto doc = json::parse(render_status(snapshot_at(t0 + 13s, 1400, 68), r, status_query{}));
  CHECK(doc["rates"]["processed"].get<double>() == Approx(100.0));
  CHECK(doc["peers"]["items"][0]["rates"]["out"].get<double>() == Approx(2.0));
}

TEST_CASE("the status query takes limit=N and names anything else", "[status]") {
  status_query q;
  CHECK(parse_status_query("", q).empty());
  CHECK(parse_status_query("limit=7", q).empty());
  CHECK(q.limit == 7);
  CHECK(parse_status_query("limit=x", q).find("limit: expected an integer") == 0);
  CHECK(parse_status_query("limit=", q).find("limit: expected an integer") == 0);
  CHECK(parse_status_query("limit=99999999999999999999", q).find("limit:") == 0);
  CHECK(parse_status_query("color=red", q) == R"(unknown parameter "color"; try limit=N)");
}

TEST_CASE("the status shows the access rules and what they refused", "[status]") {
  auto snap = snapshot_at(std::chrono::steady_clock::now(), 0, 0);
  auto empty = json::parse(render_status(snap, rate_set{}, status_query{}));
  CHECK(empty["access"]["rules_file"].is_null());
  CHECK(empty["access"]["enforcing"] == false);
  CHECK(empty["access"]["refusals"].empty());
  auto& acc = snap.network.access;
  acc.rules_file = "/etc/broker/rules.conf";
  acc.enforcing = true;
  acc.identities = 3;
  acc.rules = 12;
  snap.core.metrics.refused = 9;
  acc.rows = {{"worker", "", 9, 1, 0, 0, 0},
              {"worker", "deny publish \"/zeek/control/\"", 9, 0, 0, 0, 0},
              {"worker", "default subscribe", 0, 1, 0, 0, 0},
              {"worker", "allow publish \"/zeek/\"", 0, 0, 0, 0, 0},
              {"", "token", 0, 0, 0, 12, 30}};
  auto doc = json::parse(render_status(snap, rate_set{}, status_query{}));
  auto& a = doc["access"];
  CHECK(a["rules_file"] == "/etc/broker/rules.conf");
  CHECK(a["enforcing"] == true);
  CHECK(a["identities"] == 3);
  CHECK(a["rules"] == 12);
  CHECK(doc["totals"]["refused"] == 9);
  REQUIRE(a["refusals"].size() == 2); // Rules that refused nothing are left out.
  CHECK(a["refusals"][0]["rule"] == "deny publish \"/zeek/control/\"");
  CHECK(a["refusals"][0]["publishes"] == 9);
  CHECK(a["refusals"][1]["subscriptions"] == 1);
  REQUIRE(a["identities_refused"].size() == 1);
  CHECK(a["identities_refused"][0]["identity"] == "worker");
  REQUIRE(a["authentication_failures"].size() == 1);
  CHECK(a["authentication_failures"][0]["mechanism"] == "token");
  CHECK(a["authentication_failures"][0]["failures"] == 12);
  CHECK(a["authentication_failures"][0]["throttled"] == 30);
}
