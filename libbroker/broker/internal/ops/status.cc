#include "broker/internal/ops/status.hh"

#include "broker/time.hh"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace broker::internal {

using json = nlohmann::json;

namespace {

/// Most entries a request can ask to be listed (a bound on the work one request causes).
constexpr size_t max_status_limit = 100'000;

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string iso_time(std::chrono::system_clock::time_point t) {
  return broker::to_string(timestamp{std::chrono::duration_cast<timespan>(t.time_since_epoch())});
}

uint64_t all_drops(const endpoint_metrics& m) {
  uint64_t n = 0;
  for (auto& k : m.kinds)
    for (auto x : k.dropped)
      n += x;
  return n;
}

/// Drops everywhere: the core's handlers and the ZeroMQ connections (their own queues,
/// outside the core; closed connections included).
uint64_t all_drops(const node_snapshot& snap) {
  return all_drops(snap.core.metrics) + snap.network.zeromq.dropped;
}

uint64_t all_delivered(const endpoint_metrics& m) {
  uint64_t n = 0;
  for (auto& k : m.kinds)
    n += k.delivered;
  return n;
}

double fill_of(const handler_status& h) {
  return h.capacity == 0 ? 0.0 : static_cast<double>(h.buffered) / h.capacity;
}

json queue_json(const handler_status& h) {
  return json{{"size", h.buffered},
              {"capacity", h.capacity},
              {"policy", std::string{to_string(h.policy)}},
              {"fill", fill_of(h)}};
}

json rates_json(const rate_set& rates, uint64_t id) {
  auto i = rates.handlers.find(id);
  if (rates.window <= 0 || i == rates.handlers.end())
    return nullptr;
  return json{{"in", i->second.in}, {"out", i->second.out}, {"dropped", i->second.dropped}};
}

/// The common part of every handler entry.
json handler_json(const handler_status& h, const rate_set& rates) {
  json x{{"handler", h.id},
         {"queue", queue_json(h)},
         {"messages_out", h.delivered},
         {"dropped", h.dropped},
         {"rates", rates_json(rates, h.id)}};
  if (h.has_source) {
    x["messages_in"] = h.received;
    x["waiting_in"] = h.inbox;
  }
  if (h.filters)
    x["subscriptions"] = h.filter;
  return x;
}

/// Lists up to `limit` of `xs` (the fullest first when cut), and how many there are.
template <class F>
json listing(std::vector<const handler_status*> xs, size_t limit, F make) {
  if (xs.size() > limit)
    std::stable_sort(xs.begin(), xs.end(),
                     [](auto* a, auto* b) { return fill_of(*a) > fill_of(*b); });
  json items = json::array();
  for (size_t i = 0; i < xs.size() && i < limit; ++i)
    items.push_back(make(*xs[i]));
  return json{{"total", xs.size()}, {"items", std::move(items)}};
}

/// A store handler subscribes to `<name>/<$>/data/master` (or `.../clone`): its name.
std::string store_name(const handler_status& h) {
  constexpr std::string_view marker = "/<$>/data/";
  for (auto& f : h.filter)
    if (auto pos = f.rfind(marker); pos != std::string::npos)
      return f.substr(0, pos);
  return {};
}

/// The access-control section: the rules in force, what was refused (rules that refused
/// something, per identity and rule) and failed authentications per mechanism.
json access_json(const access_report& acc) {
  json x{{"rules_file", acc.rules_file.empty() ? json{} : json(acc.rules_file)},
         {"enforcing", acc.enforcing},
         {"identities", acc.enforcing ? acc.identities : 0},
         {"rules", acc.rules}};
  json refusals = json::array();
  json identities = json::array();
  json authentication = json::array();
  for (auto& row : acc.rows) {
    if (row.identity.empty() && (row.authentication_failures > 0
                                 || row.authentication_throttled > 0)) {
      authentication.push_back({{"mechanism", row.rule},
                                {"failures", row.authentication_failures},
                                {"throttled", row.authentication_throttled}});
      continue;
    }
    if (row.refused_publishes + row.refused_subscriptions + row.refused_deliveries == 0)
      continue;
    json r{{"identity", row.identity.empty() ? json{} : json(row.identity)},
           {"publishes", row.refused_publishes},
           {"subscriptions", row.refused_subscriptions},
           {"deliveries", row.refused_deliveries}};
    if (row.rule.empty()) {
      identities.push_back(std::move(r));
    } else {
      r["rule"] = row.rule;
      refusals.push_back(std::move(r));
    }
  }
  x["identities_refused"] = std::move(identities);
  x["refusals"] = std::move(refusals);
  x["authentication_failures"] = std::move(authentication);
  return x;
}

} // namespace

// -- rates ------------------------------------------------------------------------------

rate_tracker::sample rate_tracker::make_sample(const node_snapshot& snap) {
  sample s;
  s.time = snap.taken_steady;
  auto& m = snap.core.metrics;
  s.processed = m.processed;
  s.delivered = all_delivered(m);
  s.dropped = all_drops(snap);
  s.unrouted = m.unrouted;
  s.duplicates = m.duplicates;
  s.handlers.reserve(snap.core.handlers.size());
  for (auto& h : snap.core.handlers)
    s.handlers.emplace(h.id, counters{h.delivered, h.received, h.dropped});
  return s;
}

rate_set rate_tracker::update(const node_snapshot& snap) {
  if (!snap.core_answered)
    return {};
  auto now = make_sample(snap);
  std::lock_guard<std::mutex> guard{mtx_};
  while (!samples_.empty() && now.time - samples_.front().time > rate_window)
    samples_.pop_front();
  rate_set result;
  if (!samples_.empty() && now.time > samples_.front().time) {
    auto& old = samples_.front();
    auto dt = seconds(now.time - old.time);
    auto per_second = [dt](uint64_t later, uint64_t earlier) {
      // A counter that went down belongs to a handler that was replaced: no rate.
      return later >= earlier ? static_cast<double>(later - earlier) / dt : 0.0;
    };
    result.window = dt;
    result.processed = per_second(now.processed, old.processed);
    result.delivered = per_second(now.delivered, old.delivered);
    result.dropped = per_second(now.dropped, old.dropped);
    result.unrouted = per_second(now.unrouted, old.unrouted);
    result.duplicates = per_second(now.duplicates, old.duplicates);
    for (auto& [id, c] : now.handlers) {
      // The oldest sample that knew this handler.
      for (auto& s : samples_) {
        auto i = s.handlers.find(id);
        if (i == s.handlers.end())
          continue;
        auto hdt = seconds(now.time - s.time);
        if (hdt <= 0)
          break;
        auto rate = [hdt](uint64_t later, uint64_t earlier) {
          return later >= earlier ? static_cast<double>(later - earlier) / hdt : 0.0;
        };
        result.handlers.emplace(id, rate_set::handler_rates{rate(c.out, i->second.out),
                                                            rate(c.in, i->second.in),
                                                            rate(c.dropped, i->second.dropped)});
        break;
      }
    }
  }
  if (samples_.empty() || now.time - samples_.back().time >= rate_sample_interval)
    samples_.push_back(std::move(now));
  return result;
}

// -- the document -----------------------------------------------------------------------

std::string parse_status_query(std::string_view query, status_query& out) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto item = query.substr(0, amp);
    auto eq = item.find('=');
    auto key = item.substr(0, eq);
    auto value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    if (key == "limit") {
      size_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc{} || end != value.data() + value.size() || value.empty()
          || n > max_status_limit)
        return "limit: expected an integer between 0 and " + std::to_string(max_status_limit)
               + ", got \"" + std::string{value.substr(0, 40)} + "\"";
      out.limit = n;
    } else if (!key.empty()) {
      return "unknown parameter \"" + std::string{key.substr(0, 40)} + "\"; try limit=N";
    }
    if (amp == std::string_view::npos)
      break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

std::string render_status(const node_snapshot& snap, const rate_set& rates,
                          const status_query& query) {
  const auto& core = snap.core;
  const auto& m = core.metrics;
  json doc;
  doc["endpoint"] = {{"id", to_string(snap.node.id)},
                     {"name", snap.node.name},
                     {"version", snap.node.version},
                     {"started", iso_time(snap.node.started)},
                     {"uptime_seconds", seconds(snap.taken_steady - snap.node.started_steady)}};
  doc["time"] = iso_time(snap.taken);
  doc["complete"] = snap.core_answered;
  doc["announced"] = core.announced;
  doc["totals"] = {{"processed", m.processed},
                   {"processed_commands", m.processed_commands},
                   {"delivered", all_delivered(m)},
                   {"dropped", all_drops(snap)},
                   {"unrouted", m.unrouted},
                   {"refused", m.refused},
                   {"duplicates", m.duplicates},
                   {"suspended_sources", m.suspended_sources},
                   {"suspensions", m.suspensions},
                   {"routing_updates", snap.network.routing_updates},
                   {"pings", snap.network.pings},
                   {"pongs", snap.network.pongs}};
  doc["rates"] = {{"window_seconds", rates.window},
                  {"processed", rates.processed},
                  {"delivered", rates.delivered},
                  {"dropped", rates.dropped},
                  {"unrouted", rates.unrouted},
                  {"duplicates", rates.duplicates}};
  json kinds = json::array();
  json drops = json::array();
  for (size_t i = 0; i < num_handler_kinds; ++i) {
    auto k = static_cast<handler_kind>(i);
    auto& x = m.kinds[i];
    kinds.push_back({{"kind", std::string{to_string(k)}},
                     {"handlers", x.handlers},
                     {"queued", x.buffered},
                     {"delivered", x.delivered},
                     {"disconnects", x.disconnects}});
    for (size_t p = 0; p < num_overflow_policies; ++p)
      if (x.dropped[p] > 0)
        drops.push_back({{"kind", std::string{to_string(k)}},
                         {"policy", std::string{to_string(static_cast<overflow_policy>(p))}},
                         {"count", x.dropped[p]}});
  }
  doc["kinds"] = std::move(kinds);
  doc["drops"] = std::move(drops);
  // Handlers by kind.
  std::vector<const handler_status*> peers, clients, subscribers, hubs, stores, bridges;
  for (auto& h : core.handlers) {
    switch (h.kind) {
      case handler_kind::peer:
        peers.push_back(&h);
        break;
      case handler_kind::web_socket:
        clients.push_back(&h);
        break;
      case handler_kind::subscriber:
        subscribers.push_back(&h);
        break;
      case handler_kind::hub:
        hubs.push_back(&h);
        break;
      case handler_kind::store_master:
      case handler_kind::store_clone:
        stores.push_back(&h);
        break;
      case handler_kind::zeromq:
        bridges.push_back(&h);
        break;
    }
  }
  auto peer_entry = [&](const handler_status& h) {
    auto x = handler_json(h, rates);
    x["id"] = to_string(h.remote);
    x["address"] = h.address;
    x["port"] = h.port;
    x["state"] = "peered";
    bool inbound = false;
    x["announced"] = h.announced;
    for (auto& link : snap.network.peers) {
      if (link.handler != h.id)
        continue;
      x["direction"] = link.outbound ? "outbound" : "inbound";
      inbound = !link.outbound;
      x["tls"] = link.tls;
      x["routing_updates"] = link.routing_updates;
      x["pings"] = link.pings;
      x["pongs"] = link.pongs;
      x["writes_through"] = link.writes_through;
      if (link.outbound) // The address we dialed, not the kernel's view of it.
        x["port"] = link.port;
    }
    if (inbound) {
      // The port an inbound peer connects from is ephemeral: it names nothing an operator
      // could dial, so it is reported as such and not as the peer's port.
      x["source_port"] = x["port"];
      x["port"] = nullptr;
    }
    return x;
  };
  auto peer_list = listing(peers, query.limit, peer_entry);
  for (auto& d : snap.network.dials) {
    json x{{"address", d.host},
           {"port", d.port},
           {"direction", "outbound"},
           {"state", d.connecting ? "connecting" : "waiting"}};
    if (!d.remote.is_nil())
      x["id"] = to_string(d.remote);
    x["last_error"] = d.last_error.empty() ? json{} : json(d.last_error);
    peer_list["dials"].push_back(std::move(x));
  }
  if (!peer_list.contains("dials"))
    peer_list["dials"] = json::array();
  doc["peers"] = std::move(peer_list);
  auto clients_list = listing(clients, query.limit, [&](const handler_status& h) {
    auto x = handler_json(h, rates);
    x["id"] = to_string(h.remote);
    x["address"] = h.address;
    x["port"] = h.port;
    x["direction"] = "inbound";
    x["tls"] = snap.network.client_tls;
    auto app = snap.network.clients.apps.find(h.id);
    x["app"] = app == snap.network.clients.apps.end() ? json{} : json(app->second);
    return x;
  });
  const auto& cr = snap.network.clients;
  json rejected = json::object();
  for (auto& [reason, n] : cr.rejected_clients)
    rejected[reason] = n;
  clients_list["rejected_clients"] = std::move(rejected);
  clients_list["rejected_inputs"] = cr.rejected_inputs;
  clients_list["ping_timeouts"] = cr.ping_timeouts;
  doc["clients"] = std::move(clients_list);
  if (const auto& z = snap.network.zeromq; z.enabled) {
    json zj;
    zj["mode"] = z.mode;
    zj["node_id"] = z.node_id;
    zj["xsub_port"] = z.xsub_port;
    zj["xpub_port"] = z.xpub_port;
    zj["accepted"] = z.accepted;
    zj["failed"] = z.failed;
    zj["dropped"] = z.dropped;
    zj["bridged_to_core"] = z.bridged_to_core;
    zj["bridged_from_core"] = z.bridged_from_core;
    zj["not_bridged"] = z.not_bridged;
    zj["bridge_dropped"] = z.bridge_dropped;
    zj["own_events"] = z.own_events;
    if (z.mode == "node") {
      zj["reconnects"] = z.reconnects;
      zj["connect_failures"] = z.connect_failures;
      zj["to_node"] = z.to_node;
      zj["hellos_sent"] = z.hellos_sent;
    }
    json links = json::array();
    for (auto& l : z.links) {
      json lj;
      lj["side"] = l.side;
      lj["peer"] = l.peer;
      lj["messages_in"] = l.messages_in;
      lj["messages_out"] = l.messages_out;
      lj["dropped"] = l.dropped;
      lj["queued"] = l.queued;
      lj["zeek_node_id"] = l.zeek_id.empty() ? json{} : json(l.zeek_id);
      lj["zeek_node_name"] = l.zeek_name.empty() ? json{} : json(l.zeek_name);
      lj["state"] = l.state;
      if (z.mode == "node") {
        lj["endpoint"] = l.endpoint;
        lj["connects"] = l.connects;
        lj["connect_failures"] = l.connect_failures;
        lj["failed"] = l.failed;
        lj["last_error"] = l.last_error.empty() ? json{} : json(l.last_error);
      }
      // The same queue object as every other connection's entry.
      lj["queue"] = {{"size", l.queued},
                     {"capacity", l.capacity},
                     {"policy", l.policy},
                     {"fill", l.capacity == 0 ? 0.0
                                              : static_cast<double>(l.queued) / l.capacity}};
      links.push_back(std::move(lj));
    }
    zj["connections"] = std::move(links);
    doc["zeromq"] = std::move(zj);
  }
  doc["access"] = access_json(snap.network.access);
  auto plain = [&](const handler_status& h) { return handler_json(h, rates); };
  json local;
  local["subscribers"] = listing(subscribers, query.limit, plain);
  local["hubs"] = listing(hubs, query.limit, plain);
  // The bridge to a ZeroMQ cluster (its queue holds what goes to ZeroMQ subscribers).
  local["zeromq_bridge"] = listing(bridges, query.limit, plain);
  auto store_list = listing(stores, query.limit, [&](const handler_status& h) {
    auto x = handler_json(h, rates);
    x["role"] = h.kind == handler_kind::store_master ? "master" : "clone";
    x["name"] = store_name(h);
    return x;
  });
  // The stores' own counters, by name (the handler knows only its topic).
  json reports = json::array();
  auto sorted = snap.stores;
  std::sort(sorted.begin(), sorted.end(),
            [](auto& a, auto& b) { return std::tie(a.name, a.master) < std::tie(b.name, b.master); });
  for (auto& st : sorted)
    reports.push_back({{"name", st.name},
                       {"role", st.master ? "master" : "clone"},
                       {"entries", st.entries},
                       {"input_channels", st.input_channels},
                       {"output_channels", st.output_channels},
                       {"out_of_order_updates", st.out_of_order_updates},
                       {"unacknowledged_updates", st.unacknowledged_updates},
                       {"processed_updates", st.processed_updates}});
  store_list["reports"] = std::move(reports);
  local["stores"] = std::move(store_list);
  local["publishers"] = {{"total", core.publishers}, {"messages", core.published}};
  doc["local"] = std::move(local);
  json events = json::array();
  for (auto& e : snap.network.events)
    events.push_back({{"time", e.time},
                      {"level", e.level},
                      {"component", e.component},
                      {"message", e.message},
                      {"repeats", e.repeats}});
  doc["events"] = std::move(events);
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace broker::internal
