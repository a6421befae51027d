#include "broker/internal/ops/node_probe.hh"

#include "broker/internal/config/logger.hh"
#include "broker/internal/endpoint_context.hh"

#include <array>

namespace broker::internal {

namespace {

class endpoint_probe : public node_probe {
public:
  endpoint_probe(const std::shared_ptr<endpoint_context>& ctx, node_identity id)
    : ctx_(ctx), id_(std::move(id)) {}

  node_identity identity() const override { return id_; }

  network_report network() const override {
    network_report result;
    auto ctx = ctx_.lock();
    if (!ctx)
      return result;
    auto io = ctx->io();
    auto mode = io ? io->mode() : tls_mode::plain;
    result.client_tls = std::string{to_string(mode)};
    add_clients(*ctx, result.clients);
    add_zeromq(*ctx, result.zeromq);
    if (auto sec = ctx->security())
      add_access(*sec, result.access);
    if (io)
      for (auto& e : io->get_logger().recent())
        result.events.push_back(
          event_entry{e.time, std::string{to_string(e.level)}, e.component, e.message,
                      e.repeats});
    auto net = ctx->network();
    if (!net)
      return result;
    for (auto& rec : net->peers()) {
      peer_link x;
      x.id = rec.id;
      x.address = rec.address;
      x.port = rec.port;
      x.outbound = rec.outbound;
      x.handler = rec.handler;
      x.tls = rec.secure ? std::string{to_string(mode)} : "plain";
      x.routing_updates = rec.control.routing_updates;
      x.pings = rec.control.pings;
      x.pongs = rec.control.pongs;
      x.writes_through = rec.writes_through;
      result.peers.push_back(std::move(x));
    }
    for (auto& d : net->pending_dials())
      result.dials.push_back(pending_dial{d.host, d.port, d.connecting, d.remote, d.last_error});
    auto totals = net->control_totals();
    result.routing_updates = totals.routing_updates;
    result.pings = totals.pings;
    result.pongs = totals.pongs;
    return result;
  }

  void stores(std::shared_ptr<std::function<void(store_report)>> sink) const override {
    auto ctx = ctx_.lock();
    if (!ctx)
      return;
    for (auto& fe : ctx->stores())
      fe->post([sink](store_logic& logic, timestamp) {
        auto st = logic.stats();
        (*sink)(store_report{st.name, st.master, st.entries, st.input_channels,
                             st.output_channels, st.out_of_order_updates,
                             st.unacknowledged_updates, st.processed_updates,
                             st.rejected_writes});
      });
  }

private:
  static void add_zeromq(const endpoint_context& ctx, zeromq_report& out) {
    auto srv = ctx.zeromq();
    if (!srv)
      return;
    out.enabled = true;
    out.mode = std::string{srv->mode()};
    out.node_id = srv->node_id();
    out.xsub_port = srv->xsub_port();
    out.xpub_port = srv->xpub_port();
    auto c = srv->counters();
    out.frontend_bytes_received = c.frontend_bytes_received;
    out.frontend_messages_received = c.frontend_messages_received;
    out.frontend_bytes_sent = c.frontend_bytes_sent;
    out.frontend_messages_sent = c.frontend_messages_sent;
    out.backend_bytes_received = c.backend_bytes_received;
    out.backend_messages_received = c.backend_messages_received;
    out.backend_bytes_sent = c.backend_bytes_sent;
    out.backend_messages_sent = c.backend_messages_sent;
    out.accepted = c.accepted;
    out.failed = c.failed;
    out.dropped = c.dropped;
    out.bridged_to_core = c.bridged_to_core;
    out.bridged_from_core = c.bridged_from_core;
    out.not_bridged = c.not_bridged;
    out.bridge_dropped = c.bridge_dropped;
    out.own_events = c.own_events;
    out.reconnects = c.reconnects;
    out.connect_failures = c.connect_failures;
    out.to_node = c.to_node;
    out.hellos_sent = c.hellos_sent;
    for (auto& l : srv->links())
      out.links.push_back(zeromq_link_report{l.side, l.peer, l.messages_in, l.messages_out,
                                             l.dropped, l.queued, l.capacity,
                                             l.policy, l.zeek_id, l.zeek_name, l.state,
                                             l.endpoint, l.connects, l.connect_failures,
                                             l.failed, l.last_error});
  }

  static void add_clients(const endpoint_context& ctx, client_report& out) {
    std::array<uint64_t, num_client_rejects> rejected{};
    for (auto& srv : ctx.servers()) {
      auto c = srv->counters();
      out.rejected_inputs += c.rejected_inputs;
      out.ping_timeouts += c.ping_timeouts;
      for (size_t i = 0; i < num_client_rejects; ++i)
        rejected[i] += c.rejected_clients[i];
      for (auto& [id, app] : c.apps)
        if (!app.empty())
          out.apps.emplace(id, std::move(app));
    }
    for (size_t i = 0; i < num_client_rejects; ++i)
      out.rejected_clients.emplace_back(
        std::string{to_string(static_cast<client_reject>(i))}, rejected[i]);
  }

  static void add_access(const security::runtime& sec, access_report& out) {
    out.rules_file = sec.rules_file();
    auto rules = sec.policy().current();
    out.enforcing = rules->enforcing();
    out.identities = rules->identity_count();
    out.rules = rules->configured_rules();
    out.rows = sec.audit().rows();
  }

  std::weak_ptr<endpoint_context> ctx_;
  node_identity id_;
};

} // namespace

std::shared_ptr<const node_probe> make_node_probe(const std::shared_ptr<endpoint_context>& ctx,
                                                  std::string name, std::string version) {
  node_identity id;
  id.id = ctx->id();
  id.name = std::move(name);
  id.version = std::move(version);
  id.started = std::chrono::system_clock::now();
  id.started_steady = std::chrono::steady_clock::now();
  return std::make_shared<endpoint_probe>(ctx, std::move(id));
}

} // namespace broker::internal
