#include "broker/internal/ops/prometheus.hh"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <utility>

namespace broker::internal {

namespace {

using label = std::pair<std::string_view, std::string_view>;

constexpr std::string_view other_label = "other";

/// Label values escaped as the exposition format wants (backslash, quote, newline).
void append_escaped(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
}

/// Appends families and samples to one string.
class writer {
public:
  writer(std::string& out, const std::string& endpoint) : out_(out), endpoint_(endpoint) {}

  void family(const metric_family& f) {
    out_ += "# HELP ";
    out_ += f.name;
    out_ += ' ';
    out_ += f.help;
    out_ += "\n# TYPE ";
    out_ += f.name;
    out_ += ' ';
    out_ += f.type;
    out_ += '\n';
    name_ = f.name;
  }

  void sample(std::initializer_list<label> labels, uint64_t value) {
    head(labels);
    out_ += std::to_string(value);
    out_ += '\n';
  }

  void sample_real(std::initializer_list<label> labels, double value) {
    head(labels);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.3f", value);
    out_ += buf;
    out_ += '\n';
  }

private:
  void head(std::initializer_list<label> labels) {
    out_ += name_;
    if (!endpoint_.empty() || labels.size() > 0) {
      out_ += '{';
      bool first = true;
      auto add = [&](std::string_view key, std::string_view value) {
        if (!first)
          out_ += ',';
        first = false;
        out_ += key;
        out_ += "=\"";
        append_escaped(out_, value);
        out_ += '"';
      };
      if (!endpoint_.empty())
        add("endpoint", endpoint_);
      for (auto& [key, value] : labels)
        add(key, value);
      out_ += '}';
    }
    out_ += ' ';
  }

  std::string& out_;
  const std::string& endpoint_;
  std::string_view name_;
};

/// Per-peer or per-client values: the first `limit` handlers by id get their own label
/// set, the rest are summed into one.
struct series {
  std::string key;     // Endpoint id, or "other".
  std::string address; // host:port, or "" for "other".
  std::string app;     // Clients: X-Application-Name, "unknown" if none (as Zeek labels it).
  uint64_t queued = 0;
  uint64_t capacity = 0;
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t dropped = 0;
};

std::vector<series> series_of(const node_snapshot& snap, handler_kind kind, size_t limit) {
  const auto& core = snap.core;
  const auto& apps = snap.network.clients.apps;
  std::vector<series> result;
  series rest;
  rest.key = other_label;
  bool any_rest = false;
  for (auto& h : core.handlers) { // Ascending ids: the oldest handlers first.
    if (h.kind != kind)
      continue;
    series* x = &rest;
    if (result.size() < limit) {
      result.emplace_back();
      x = &result.back();
      x->key = to_string(h.remote);
      x->address = h.address + ":" + std::to_string(h.port);
      if (kind == handler_kind::web_socket) {
        auto app = apps.find(h.id);
        x->app = app == apps.end() ? "unknown" : app->second;
      }
    } else {
      any_rest = true;
    }
    x->queued += h.buffered;
    x->capacity += h.capacity;
    x->sent += h.delivered;
    x->received += h.received;
    x->dropped += h.dropped;
  }
  if (any_rest)
    result.push_back(std::move(rest));
  return result;
}

/// What the emitters read.
struct render_input {
  const node_snapshot& snap;
  std::vector<series> peers;
  std::vector<series> clients;
  std::map<std::string, store_report> stores; // By name; duplicates summed.
};

using emit_fn = void (*)(const render_input&, writer&);

struct family_row {
  metric_family info;
  emit_fn emit;
};

constexpr std::string_view kind_values =
  "kind: subscriber, hub, peer, web_socket, store_master, store_clone, zeromq";

constexpr overflow_policy all_policies[] = {overflow_policy::block, overflow_policy::drop_oldest,
                                            overflow_policy::drop_newest,
                                            overflow_policy::disconnect};

template <class F>
void per_kind(const render_input& in, writer& w, F field) {
  for (size_t i = 0; i < num_handler_kinds; ++i) {
    auto k = static_cast<handler_kind>(i);
    w.sample({{"kind", to_string(k)}}, field(in.snap.core.metrics[k]));
  }
}

template <class F>
void per_series(const std::vector<series>& xs, std::string_view key, writer& w, F field) {
  for (auto& x : xs)
    if (key == "client")
      w.sample({{key, x.key}, {"address", x.address}, {"app", x.app}}, field(x));
    else
      w.sample({{key, x.key}, {"address", x.address}}, field(x));
}

template <class F>
void per_store(const render_input& in, writer& w, F field) {
  for (auto& [name, st] : in.stores)
    w.sample({{"name", name}}, field(st));
}

const std::vector<family_row>& rows() {
  static const std::vector<family_row> table = {
    // -- Broker's families ------------------------------------------------------------
    {{"broker_connections", "gauge", "type: native, web-socket, zeromq", true,
      "Number of active network connections: peerings (native), WebSocket clients and "
      "ZeroMQ connections (ours)."},
     [](const render_input& in, writer& w) {
       auto& m = in.snap.core.metrics;
       w.sample({{"type", "native"}}, m[handler_kind::peer].handlers);
       w.sample({{"type", "web-socket"}}, m[handler_kind::web_socket].handlers);
       // Open ones: node mode lists its two connections while it reconnects too.
       auto& zl = in.snap.network.zeromq.links;
       w.sample({{"type", "zeromq"}},
                static_cast<uint64_t>(std::count_if(zl.begin(), zl.end(), [](auto& l) {
                  return l.state == "connected";
                })));
     }},
    {{"broker_processed_messages_total", "counter",
      "type: data, command, routing-update, ping, pong", true,
      "Total number of processed messages: routed by the core (data, command) or received "
      "from peers (routing-update, ping, pong)."},
     [](const render_input& in, writer& w) {
       auto& m = in.snap.core.metrics;
       auto& net = in.snap.network;
       w.sample({{"type", "data"}}, m.processed - std::min(m.processed, m.processed_commands));
       w.sample({{"type", "command"}}, m.processed_commands);
       w.sample({{"type", "routing-update"}}, net.routing_updates);
       w.sample({{"type", "ping"}}, net.pings);
       w.sample({{"type", "pong"}}, net.pongs);
     }},
    {{"broker_buffered_messages", "gauge", "type: data, command, routing-update, ping, pong",
      true,
      "Number of currently buffered messages: received from a source and waiting for the "
      "core (pings and pongs are answered at once and never wait)."},
     [](const render_input& in, writer& w) {
       auto& c = in.snap.core;
       w.sample({{"type", "data"}}, c.waiting_data);
       w.sample({{"type", "command"}}, c.waiting_commands);
       w.sample({{"type", "routing-update"}}, c.waiting_routing_updates);
       w.sample({{"type", "ping"}}, 0);
       w.sample({{"type", "pong"}}, 0);
     }},
    {{"broker_store_entries", "gauge", "name: the store", true,
      "Number of entries in the data store."},
     [](const render_input& in, writer& w) {
       per_store(in, w, [](auto& s) { return s.entries; });
     }},
    {{"broker_store_input_channels", "gauge", "name: the store", true,
      "Number of active input channels in a data store (master: clones whose writes it "
      "consumes; clone: 1 while attached to its master)."},
     [](const render_input& in, writer& w) {
       per_store(in, w, [](auto& s) { return s.input_channels; });
     }},
    {{"broker_store_output_channels", "gauge", "name: the store", true,
      "Number of active output channels in a data store (master: attached clones; clone: 1 "
      "while its master consumes its writes)."},
     [](const render_input& in, writer& w) {
       per_store(in, w, [](auto& s) { return s.output_channels; });
     }},
    {{"broker_store_out_of_order_updates", "gauge", "name: the store", true,
      "Number of out-of-order data store updates held until the missing ones arrive."},
     [](const render_input& in, writer& w) {
       per_store(in, w, [](auto& s) { return s.out_of_order_updates; });
     }},
    {{"broker_store_processed_updates_total", "counter", "name: the store", true,
      "Total number of processed data store updates (produced and acknowledged)."},
     [](const render_input& in, writer& w) {
       per_store(in, w, [](auto& s) { return s.processed_updates; });
     }},
    {{"broker_store_unacknowledged_updates", "gauge", "name: the store", true,
      "Number of unacknowledged data store updates."},
     [](const render_input& in, writer& w) {
       per_store(in, w, [](auto& s) { return s.unacknowledged_updates; });
     }},
    // -- ours -------------------------------------------------------------------------
    {{"broker_store_rejected_writes_total", "counter", "name: the store", false,
      "Total number of writes a data store master rejected (type_clash, no_such_key, ...); "
      "each is also logged, an error event, and the verdict its writer gets."},
     [](const render_input& in, writer& w) {
       per_store(in, w, [](auto& s) { return s.rejected_writes; });
     }},
    // -- Zeek's ZeroMQ forwarder (ZeroMQ-Proxy.cc), so that its dashboards keep working --
    {{"zeek_cluster_zeromq_proxy_frontend_bytes_received", "counter", "-", false,
      "Bytes of events received from nodes' XPUBs (our XSUB side)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.frontend_bytes_received);
     }},
    {{"zeek_cluster_zeromq_proxy_frontend_messages_received", "counter", "-", false,
      "Events received from nodes' XPUBs (our XSUB side)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.frontend_messages_received);
     }},
    {{"zeek_cluster_zeromq_proxy_frontend_bytes_sent", "counter", "-", false,
      "Bytes of subscription messages passed to the XSUB side (once each, as zmq_proxy_steerable counts; not per node)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.frontend_bytes_sent);
     }},
    {{"zeek_cluster_zeromq_proxy_frontend_messages_sent", "counter", "-", false,
      "Subscription messages passed to the XSUB side (once each, as zmq_proxy_steerable counts; not per node)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.frontend_messages_sent);
     }},
    {{"zeek_cluster_zeromq_proxy_backend_bytes_received", "counter", "-", false,
      "Bytes of subscriptions received from nodes' XSUBs (our XPUB side)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.backend_bytes_received);
     }},
    {{"zeek_cluster_zeromq_proxy_backend_messages_received", "counter", "-", false,
      "Subscriptions received from nodes' XSUBs (our XPUB side)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.backend_messages_received);
     }},
    {{"zeek_cluster_zeromq_proxy_backend_bytes_sent", "counter", "-", false,
      "Bytes of events forwarded to the XPUB side (once each, as zmq_proxy_steerable counts; not per receiving node)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.backend_bytes_sent);
     }},
    {{"zeek_cluster_zeromq_proxy_backend_messages_sent", "counter", "-", false,
      "Events forwarded to the XPUB side (once each, as zmq_proxy_steerable counts; not per receiving node)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.backend_messages_sent);
     }},
    {{"broker_zeromq_dropped_messages_total", "counter", "-", false,
      "Events for ZeroMQ connections dropped by broker.zeromq.overflow-policy."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.dropped);
     }},
    {{"broker_zeromq_failed_connections_total", "counter", "-", false,
      "ZeroMQ connections closed for bad input, a failed handshake or a timeout."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.failed);
     }},
    {{"broker_zeromq_not_bridged_total", "counter", "-", false,
      "ZeroMQ events the node subscribed to that were not broker-bin-v1 or did not decode."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.zeromq.not_bridged);
     }},
    {{"broker_build_info", "gauge", "version: the library version", false,
      "Always 1; the label carries the version of this node."},
     [](const render_input& in, writer& w) {
       w.sample({{"version", in.snap.node.version}}, 1);
     }},
    {{"broker_start_time_seconds", "gauge", "", false,
      "When the endpoint started, in seconds since the Unix epoch."},
     [](const render_input& in, writer& w) {
       auto since = in.snap.node.started.time_since_epoch();
       w.sample_real({}, std::chrono::duration<double>(since).count());
     }},
    {{"broker_handlers", "gauge", kind_values, false,
      "Output handlers attached to the core, by kind (local ones included)."},
     [](const render_input& in, writer& w) {
       per_kind(in, w, [](auto& k) { return k.handlers; });
     }},
    {{"broker_handler_queued_messages", "gauge", kind_values, false,
      "Messages waiting in handler queues, by kind."},
     [](const render_input& in, writer& w) {
       per_kind(in, w, [](auto& k) { return k.buffered; });
     }},
    {{"broker_handler_queue_capacity", "gauge", kind_values, false,
      "Sum of the handler queues' capacities, by kind (queued / capacity is the fill)."},
     [](const render_input& in, writer& w) {
       uint64_t caps[num_handler_kinds] = {};
       for (auto& h : in.snap.core.handlers)
         caps[static_cast<size_t>(h.kind)] += h.capacity;
       for (size_t i = 0; i < num_handler_kinds; ++i)
         w.sample({{"kind", to_string(static_cast<handler_kind>(i))}}, caps[i]);
     }},
    {{"broker_handler_delivered_messages_total", "counter", kind_values, false,
      "Messages put into handler queues, by kind."},
     [](const render_input& in, writer& w) {
       per_kind(in, w, [](auto& k) { return k.delivered; });
     }},
    {{"broker_handler_dropped_messages_total", "counter",
      "kind: as above; policy: block, drop_oldest, drop_newest, disconnect", false,
      "Messages dropped by an overflow policy, by handler kind and policy."},
     [](const render_input& in, writer& w) {
       for (size_t i = 0; i < num_handler_kinds; ++i) {
         auto k = static_cast<handler_kind>(i);
         for (auto p : all_policies)
           w.sample({{"kind", to_string(k)}, {"policy", to_string(p)}},
                    in.snap.core.metrics.dropped(k, p));
       }
     }},
    {{"broker_handler_disconnects_total", "counter", kind_values, false,
      "Handlers closed by the disconnect overflow policy, by kind."},
     [](const render_input& in, writer& w) {
       per_kind(in, w, [](auto& k) { return k.disconnects; });
     }},
    {{"broker_handler_limit_disconnects_total", "counter", kind_values, false,
      "Connections closed because they exceeded a budget (subscriptions, unread control "
      "output), by kind."},
     [](const render_input& in, writer& w) {
       per_kind(in, w, [](auto& k) { return k.limit_disconnects; });
     }},
    {{"broker_unrouted_messages_total", "counter", "", false,
      "Messages nobody subscribed to."},
     [](const render_input& in, writer& w) { w.sample({}, in.snap.core.metrics.unrouted); }},
    {{"broker_duplicate_messages_total", "counter", "", false,
      "Copies from peers suppressed because they arrived over a second path."},
     [](const render_input& in, writer& w) { w.sample({}, in.snap.core.metrics.duplicates); }},
    {{"broker_out_of_order_messages_total", "counter", "", false,
      "Messages from peers dropped because a newer one of the same origin was already "
      "routed (per-origin order)."},
     [](const render_input& in, writer& w) { w.sample({}, in.snap.core.metrics.out_of_order); }},
    {{"broker_suspended_sources", "gauge", "", false,
      "Sources parked because a block-policy sink is full."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.core.metrics.suspended_sources);
     }},
    {{"broker_suspensions_total", "counter", "", false, "Times a source was parked."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.core.metrics.suspensions);
     }},
    {{"broker_peer_queued_messages", "gauge",
      "peer: the peer's endpoint id, or other; address: host:port", false,
      "Messages waiting in one peer's send queue."},
     [](const render_input& in, writer& w) {
       per_series(in.peers, "peer", w, [](auto& x) { return x.queued; });
     }},
    {{"broker_peer_queue_capacity", "gauge", "peer, address: as above", false,
      "Capacity of one peer's send queue (broker.peer-buffer-size)."},
     [](const render_input& in, writer& w) {
       per_series(in.peers, "peer", w, [](auto& x) { return x.capacity; });
     }},
    {{"broker_peer_sent_messages_total", "counter", "peer, address: as above", false,
      "Messages put into one peer's send queue."},
     [](const render_input& in, writer& w) {
       per_series(in.peers, "peer", w, [](auto& x) { return x.sent; });
     }},
    {{"broker_peer_received_messages_total", "counter", "peer, address: as above", false,
      "Data and command messages received from one peer and taken by the core."},
     [](const render_input& in, writer& w) {
       per_series(in.peers, "peer", w, [](auto& x) { return x.received; });
     }},
    {{"broker_peer_dropped_messages_total", "counter", "peer, address: as above", false,
      "Messages for one peer dropped by its overflow policy."},
     [](const render_input& in, writer& w) {
       per_series(in.peers, "peer", w, [](auto& x) { return x.dropped; });
     }},
    {{"broker_web_socket_client_queued_messages", "gauge",
      "client: the id the node gave the client, or other; address: host:port; app: its "
      "X-Application-Name (unknown if none)", false,
      "Messages waiting in one WebSocket client's send queue."},
     [](const render_input& in, writer& w) {
       per_series(in.clients, "client", w, [](auto& x) { return x.queued; });
     }},
    {{"broker_web_socket_client_queue_capacity", "gauge", "client, address, app: as above", false,
      "Capacity of one WebSocket client's send queue (broker.web-socket-buffer-size)."},
     [](const render_input& in, writer& w) {
       per_series(in.clients, "client", w, [](auto& x) { return x.capacity; });
     }},
    {{"broker_web_socket_client_sent_messages_total", "counter", "client, address, app: as above",
      false, "Messages put into one WebSocket client's send queue."},
     [](const render_input& in, writer& w) {
       per_series(in.clients, "client", w, [](auto& x) { return x.sent; });
     }},
    {{"broker_web_socket_client_received_messages_total", "counter",
      "client, address, app: as above", false,
      "Messages one WebSocket client published, taken by the core."},
     [](const render_input& in, writer& w) {
       per_series(in.clients, "client", w, [](auto& x) { return x.received; });
     }},
    {{"broker_web_socket_client_dropped_messages_total", "counter",
      "client, address, app: as above", false,
      "Messages for one WebSocket client dropped by its overflow policy."},
     [](const render_input& in, writer& w) {
       per_series(in.clients, "client", w, [](auto& x) { return x.dropped; });
     }},
    {{"broker_web_socket_rejected_clients_total", "counter",
      "reason: handshake, tls, max_clients, application_name, subscriptions, "
      "max_subscriptions, authentication", false,
      "WebSocket clients turned away: a bad upgrade request (handshake), a failed TLS "
      "handshake or plain HTTP on a TLS port (tls), broker.web-socket.max-clients, an "
      "invalid X-Application-Name, a first message that is no list of topics, more than "
      "broker.web-socket.max-subscriptions, a malformed, unknown or throttled credential "
      "(authentication)."},
     [](const render_input& in, writer& w) {
       for (auto& [reason, n] : in.snap.network.clients.rejected_clients)
         w.sample({{"reason", reason}}, n);
     }},
    {{"broker_web_socket_rejected_inputs_total", "counter", "", false,
      "Messages of WebSocket clients rejected with an error frame (malformed JSON, invalid "
      "data); the node logs them at most once a second."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.clients.rejected_inputs);
     }},
    {{"broker_web_socket_ping_timeouts_total", "counter", "", false,
      "WebSocket clients closed because they did not answer a ping "
      "(broker.web-socket.ping-interval)."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.clients.ping_timeouts);
     }},
    {{"broker_refused_messages_total", "counter", "", false,
      "Messages from peers and WebSocket clients that access rules refused to route "
      "(doc/security.md); per identity and rule in broker_access_refusals_total."},
     [](const render_input& in, writer& w) { w.sample({}, in.snap.core.metrics.refused); }},
    {{"broker_access_refusals_total", "counter",
      "identity (empty for built-in rules); rule, e.g. deny publish \"/zeek/control/\" or "
      "default subscribe; what: publish, subscribe, deliver", false,
      "What access rules refused, per identity and deciding rule: published messages, "
      "subscription prefixes (narrowed or refused), deliveries under a filtered "
      "subscription. Series appear with their first refusal."},
     [](const render_input& in, writer& w) {
       for (auto& row : in.snap.network.access.rows) {
         if (row.rule.empty())
           continue; // An identity's totals: the sum of its rules.
         if (row.refused_publishes > 0)
           w.sample({{"identity", row.identity}, {"rule", row.rule}, {"what", "publish"}},
                    row.refused_publishes);
         if (row.refused_subscriptions > 0)
           w.sample({{"identity", row.identity}, {"rule", row.rule}, {"what", "subscribe"}},
                    row.refused_subscriptions);
         if (row.refused_deliveries > 0)
           w.sample({{"identity", row.identity}, {"rule", row.rule}, {"what", "deliver"}},
                    row.refused_deliveries);
       }
     }},
    {{"broker_access_authentication_failures_total", "counter",
      "mechanism: token, certificate, curve-key", false,
      "Connections whose credential matched no identity (or several), refused and logged "
      "with the remote address (at most 10 lines a minute)."},
     [](const render_input& in, writer& w) {
       for (auto& row : in.snap.network.access.rows)
         if (row.identity.empty() && row.authentication_failures > 0)
           w.sample({{"mechanism", row.rule}}, row.authentication_failures);
     }},
    {{"broker_access_authentication_throttled_total", "counter",
      "mechanism: token, certificate, curve-key", false,
      "Connections refused unchecked because their address failed to authenticate 10 "
      "times lately (one more attempt every 6 s)."},
     [](const render_input& in, writer& w) {
       for (auto& row : in.snap.network.access.rows)
         if (row.identity.empty() && row.authentication_throttled > 0)
           w.sample({{"mechanism", row.rule}}, row.authentication_throttled);
     }},
    {{"broker_access_identities", "gauge", "", false,
      "Identities in the access rules in force (the anonymous one included); 0: no rules, "
      "everything is allowed."},
     [](const render_input& in, writer& w) {
       w.sample({}, in.snap.network.access.enforcing ? in.snap.network.access.identities : 0);
     }},
    {{"broker_access_rules", "gauge", "", false,
      "Configured rules (prefixes) in the access rules in force; changes with a reload."},
     [](const render_input& in, writer& w) { w.sample({}, in.snap.network.access.rules); }},
  };
  return table;
}

} // namespace

const std::vector<metric_family>& metric_families() {
  static const std::vector<metric_family> result = [] {
    std::vector<metric_family> xs;
    for (auto& row : rows())
      xs.push_back(row.info);
    return xs;
  }();
  return result;
}

std::string render_prometheus(const node_snapshot& snap, const prometheus_options& opts) {
  render_input in{snap, series_of(snap, handler_kind::peer, opts.handler_series_limit),
                  series_of(snap, handler_kind::web_socket, opts.handler_series_limit),
                  {}};
  for (auto& st : snap.stores) {
    auto [i, added] = in.stores.emplace(st.name, st);
    if (!added) {
      auto& x = i->second;
      x.entries += st.entries;
      x.input_channels += st.input_channels;
      x.output_channels += st.output_channels;
      x.out_of_order_updates += st.out_of_order_updates;
      x.unacknowledged_updates += st.unacknowledged_updates;
      x.processed_updates += st.processed_updates;
    }
  }
  std::string out;
  writer w{out, opts.endpoint_name};
  for (auto& row : rows()) {
    w.family(row.info);
    row.emit(in, w);
  }
  return out;
}

std::string metric_families_markdown() {
  std::string out = "| family | type | labels | from | meaning |\n|---|---|---|---|---|\n";
  for (auto& f : metric_families()) {
    out += "| `";
    out += f.name;
    out += "` | ";
    out += f.type;
    out += " | ";
    out += f.labels.empty() ? std::string_view{"-"} : f.labels;
    out += " | ";
    out += f.broker ? "Broker" : "ours";
    out += " | ";
    out += f.help;
    out += " |\n";
  }
  return out;
}

} // namespace broker::internal
