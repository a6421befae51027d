// GET /metrics: Broker's families under Broker's names, labels and meanings; ours beside
// them; the endpoint label; bounded per-peer cardinality; doc/metrics.md in step.

#include "broker/internal/ops/prometheus.hh"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace broker;
using namespace broker::internal;

namespace {

/// A Broker family as Zeek Broker's sources define it: name, type, label name and values
/// (empty values: any, e.g. a store name).
struct broker_family {
  std::string name;
  std::string type;
  std::string label;
  std::set<std::string> values;
};

/// What a dashboard written for Broker expects (Broker's metric_factory.cc and
/// core_actor.cc; broker_buffered_messages as Broker had it until it dropped the family).
const std::vector<broker_family>& broker_expectations() {
  static const std::vector<broker_family> xs = {
    {"broker_connections", "gauge", "type", {"native", "web-socket", "zeromq"}}, // zeromq: ours (issue 22)
    {"broker_processed_messages_total", "counter", "type",
     {"data", "command", "routing-update", "ping", "pong"}},
    {"broker_buffered_messages", "gauge", "type",
     {"data", "command", "routing-update", "ping", "pong"}},
    {"broker_store_entries", "gauge", "name", {}},
    {"broker_store_input_channels", "gauge", "name", {}},
    {"broker_store_output_channels", "gauge", "name", {}},
    {"broker_store_out_of_order_updates", "gauge", "name", {}},
    {"broker_store_processed_updates_total", "counter", "name", {}},
    {"broker_store_unacknowledged_updates", "gauge", "name", {}},
  };
  return xs;
}

struct sample {
  std::string family;
  std::map<std::string, std::string> labels;
  std::string value;
};

/// Parses the exposition strictly enough to catch malformed lines: every sample belongs
/// to the family declared last.
struct exposition {
  std::map<std::string, std::string> types;
  std::vector<std::string> order;
  std::vector<sample> samples;

  explicit exposition(const std::string& text) {
    std::istringstream in{text};
    std::string line;
    std::string current;
    std::regex type_re{R"(# TYPE (\w+) (gauge|counter))"};
    std::regex sample_re{R"((\w+)(\{(.*)\})? (\S+))"};
    std::regex label_re{R"re((\w+)="((?:[^"\\]|\\.)*)",?)re"};
    while (std::getline(in, line)) {
      std::smatch m;
      if (line.rfind("# HELP ", 0) == 0)
        continue;
      if (std::regex_match(line, m, type_re)) {
        current = m[1];
        types[current] = m[2];
        order.push_back(current);
        continue;
      }
      REQUIRE(std::regex_match(line, m, sample_re));
      CHECK(m[1] == current);
      sample s{m[1], {}, m[4]};
      auto labels = m[3].str();
      for (std::sregex_iterator i{labels.begin(), labels.end(), label_re}, end; i != end; ++i)
        s.labels[(*i)[1]] = (*i)[2];
      samples.push_back(std::move(s));
    }
  }

  std::vector<sample> of(const std::string& family) const {
    std::vector<sample> result;
    for (auto& s : samples)
      if (s.family == family)
        result.push_back(s);
    return result;
  }

  std::string value(const std::string& family, const std::string& key,
                    const std::string& val) const {
    for (auto& s : of(family))
      if (s.labels.count(key) && s.labels.at(key) == val)
        return s.value;
    return "<missing>";
  }
};

handler_status make_handler(uint64_t id, handler_kind kind, size_t buffered, size_t capacity,
                            uint64_t delivered, uint64_t dropped, uint64_t received = 0) {
  handler_status h;
  h.id = id;
  h.kind = kind;
  h.policy = overflow_policy::drop_oldest;
  h.buffered = buffered;
  h.capacity = capacity;
  h.delivered = delivered;
  h.dropped = dropped;
  h.received = received;
  h.has_source = kind != handler_kind::subscriber;
  h.remote = endpoint_id::random();
  h.address = "127.0.0.1";
  h.port = static_cast<uint16_t>(4000 + id);
  return h;
}

/// A node with three peers, two WebSocket clients, a subscriber and a store master.
node_snapshot sample_snapshot() {
  node_snapshot snap;
  snap.node.id = endpoint_id::random();
  snap.node.version = "9.8.7";
  snap.node.started = std::chrono::system_clock::time_point{std::chrono::seconds{1700000000}};
  snap.core_answered = true;
  auto& m = snap.core.metrics;
  m.kinds[static_cast<size_t>(handler_kind::peer)].handlers = 3;
  m.kinds[static_cast<size_t>(handler_kind::web_socket)].handlers = 2;
  m.kinds[static_cast<size_t>(handler_kind::subscriber)].handlers = 1;
  m.kinds[static_cast<size_t>(handler_kind::peer)]
    .dropped[static_cast<size_t>(overflow_policy::drop_oldest)] = 7;
  m.processed = 100;
  m.processed_commands = 30;
  m.unrouted = 4;
  snap.core.waiting_data = 5;
  snap.core.waiting_commands = 2;
  snap.core.waiting_routing_updates = 1;
  snap.core.handlers = {
    make_handler(2, handler_kind::subscriber, 1, 10, 50, 0),
    make_handler(3, handler_kind::peer, 4, 8, 20, 1, 11),
    make_handler(4, handler_kind::peer, 8, 8, 30, 2, 12),
    make_handler(5, handler_kind::peer, 2, 8, 40, 4, 13),
    make_handler(6, handler_kind::web_socket, 0, 16, 5, 0, 3),
    make_handler(7, handler_kind::web_socket, 16, 16, 6, 9, 1),
  };
  snap.network.routing_updates = 6;
  snap.network.pings = 3;
  snap.network.pongs = 2;
  snap.stores.push_back(store_report{"users", true, 42, 1, 2, 0, 3, 99, 5});
  return snap;
}

} // namespace

TEST_CASE("Broker's families keep Broker's names, types and labels", "[prometheus]") {
  exposition ex{render_prometheus(sample_snapshot(), prometheus_options{})};
  for (auto& f : broker_expectations()) {
    INFO("family " << f.name);
    REQUIRE(ex.types.count(f.name) == 1);
    CHECK(ex.types[f.name] == f.type);
    auto samples = ex.of(f.name);
    REQUIRE_FALSE(samples.empty());
    std::set<std::string> values;
    for (auto& s : samples) {
      CHECK(s.labels.size() == 1);
      REQUIRE(s.labels.count(f.label) == 1);
      values.insert(s.labels[f.label]);
    }
    if (!f.values.empty())
      CHECK(values == f.values);
  }
}

TEST_CASE("Broker's families carry Broker's meanings", "[prometheus]") {
  exposition ex{render_prometheus(sample_snapshot(), prometheus_options{})};
  // Network connections only: peers and WebSocket clients, not the local subscriber.
  CHECK(ex.value("broker_connections", "type", "native") == "3");
  CHECK(ex.value("broker_connections", "type", "web-socket") == "2");
  CHECK(ex.value("broker_processed_messages_total", "type", "data") == "70");
  CHECK(ex.value("broker_processed_messages_total", "type", "command") == "30");
  CHECK(ex.value("broker_processed_messages_total", "type", "routing-update") == "6");
  CHECK(ex.value("broker_processed_messages_total", "type", "ping") == "3");
  CHECK(ex.value("broker_processed_messages_total", "type", "pong") == "2");
  CHECK(ex.value("broker_buffered_messages", "type", "data") == "5");
  CHECK(ex.value("broker_buffered_messages", "type", "command") == "2");
  CHECK(ex.value("broker_buffered_messages", "type", "routing-update") == "1");
  CHECK(ex.value("broker_store_entries", "name", "users") == "42");
  CHECK(ex.value("broker_store_output_channels", "name", "users") == "2");
  CHECK(ex.value("broker_store_processed_updates_total", "name", "users") == "99");
  CHECK(ex.value("broker_store_rejected_writes_total", "name", "users") == "5");
  CHECK(ex.value("broker_build_info", "version", "9.8.7") == "1");
  CHECK(ex.of("broker_start_time_seconds").at(0).value == "1700000000.000");
}

TEST_CASE("our families do not reuse a name of Broker's", "[prometheus]") {
  std::set<std::string> broker_names;
  for (auto& f : broker_expectations())
    broker_names.insert(f.name);
  for (auto& f : metric_families()) {
    INFO(f.name);
    CHECK(f.broker == (broker_names.count(std::string{f.name}) == 1));
    // Ours start with broker_; Zeek's forwarder counters keep Zeek's names.
    CHECK((std::string{f.name}.rfind("broker_", 0) == 0
           || std::string{f.name}.rfind("zeek_cluster_zeromq_proxy_", 0) == 0));
  }
}

TEST_CASE("drops are counted by handler kind and policy", "[prometheus]") {
  exposition ex{render_prometheus(sample_snapshot(), prometheus_options{})};
  bool found = false;
  for (auto& s : ex.of("broker_handler_dropped_messages_total"))
    if (s.labels["kind"] == "peer" && s.labels["policy"] == "drop_oldest") {
      CHECK(s.value == "7");
      found = true;
    }
  CHECK(found);
  CHECK(ex.of("broker_handler_dropped_messages_total").size() == num_handler_kinds * 4);
}

TEST_CASE("every sample carries the endpoint label when a name is set", "[prometheus]") {
  prometheus_options opts;
  opts.endpoint_name = "worker-\"1\"";
  exposition ex{render_prometheus(sample_snapshot(), opts)};
  REQUIRE_FALSE(ex.samples.empty());
  for (auto& s : ex.samples) {
    INFO(s.family);
    CHECK(s.labels["endpoint"] == "worker-\\\"1\\\"");
  }
  exposition plain{render_prometheus(sample_snapshot(), prometheus_options{})};
  for (auto& s : plain.samples)
    CHECK(s.labels.count("endpoint") == 0);
}

TEST_CASE("per-peer series stop at the limit; the rest are summed under other",
          "[prometheus]") {
  prometheus_options opts;
  opts.handler_series_limit = 2;
  auto snap = sample_snapshot();
  exposition ex{render_prometheus(snap, opts)};
  auto queued = ex.of("broker_peer_queued_messages");
  REQUIRE(queued.size() == 3);
  CHECK(queued[0].labels["peer"] == to_string(snap.core.handlers[1].remote)); // The oldest.
  CHECK(queued[0].labels["address"] == "127.0.0.1:4003");
  CHECK(queued[2].labels["peer"] == "other");
  CHECK(queued[2].value == "2");
  CHECK(ex.value("broker_peer_received_messages_total", "peer", "other") == "13");
  CHECK(ex.of("broker_web_socket_client_dropped_messages_total").size() == 2);
  opts.handler_series_limit = 0;
  exposition none{render_prometheus(snap, opts)};
  REQUIRE(none.of("broker_peer_sent_messages_total").size() == 1);
  CHECK(none.value("broker_peer_sent_messages_total", "peer", "other") == "90");
}

TEST_CASE("every family of the table is served, in the table's order", "[prometheus]") {
  exposition ex{render_prometheus(sample_snapshot(), prometheus_options{})};
  std::vector<std::string> table;
  for (auto& f : metric_families())
    table.emplace_back(f.name);
  CHECK(ex.order == table);
}

TEST_CASE("doc/metrics.md contains the table generated from the families", "[prometheus]") {
  std::string here = __FILE__;
  auto root = here.substr(0, here.rfind("libbroker/"));
  std::ifstream in{root + "doc/metrics.md"};
  if (!in) {
    WARN("doc/metrics.md not found next to " << here << "; skipped");
    return;
  }
  std::string doc{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  auto table = metric_families_markdown();
  if (doc.find(table) == std::string::npos)
    std::ofstream{"metrics-table.md"} << table; // Unwrapped, unlike the message below.
  INFO("paste this table (also in metrics-table.md here) into doc/metrics.md:\n" << table);
  CHECK(doc.find(table) != std::string::npos);
}

TEST_CASE("access refusals are series per identity, rule and what", "[prometheus]") {
  auto snap = sample_snapshot();
  auto& acc = snap.network.access;
  acc.enforcing = true;
  acc.identities = 2;
  acc.rules = 5;
  snap.core.metrics.refused = 9;
  acc.rows = {{"worker", "", 9, 1, 2, 0, 0},
              {"worker", "deny publish \"/zeek/control/\"", 9, 0, 0, 0, 0},
              {"worker", "deny subscribe \"/x/\"", 0, 1, 2, 0, 0},
              {"worker", "allow publish \"/zeek/\"", 0, 0, 0, 0, 0},
              {"", "token", 0, 0, 0, 4, 6}};
  exposition ex{render_prometheus(snap, prometheus_options{})};
  auto refusals = ex.of("broker_access_refusals_total");
  REQUIRE(refusals.size() == 3);
  CHECK(refusals[0].labels["identity"] == "worker");
  CHECK(refusals[0].labels["rule"] == "deny publish \\\"/zeek/control/\\\"");
  CHECK(refusals[0].labels["what"] == "publish");
  CHECK(refusals[0].value == "9");
  CHECK(refusals[1].labels["what"] == "subscribe");
  CHECK(refusals[2].labels["what"] == "deliver");
  CHECK(refusals[2].value == "2");
  REQUIRE(ex.of("broker_access_authentication_failures_total").size() == 1);
  CHECK(ex.of("broker_access_authentication_failures_total")[0].labels["mechanism"] == "token");
  CHECK(ex.of("broker_access_authentication_failures_total")[0].value == "4");
  CHECK(ex.of("broker_access_authentication_throttled_total")[0].value == "6");
  CHECK(ex.of("broker_access_identities")[0].value == "2");
  CHECK(ex.of("broker_access_rules")[0].value == "5");
  CHECK(ex.of("broker_refused_messages_total")[0].value == "9");
}
