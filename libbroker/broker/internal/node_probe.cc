#include "broker/internal/node_probe.hh"

#include "broker/internal/endpoint_context.hh"

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
      result.peers.push_back(std::move(x));
    }
    for (auto& d : net->pending_dials())
      result.dials.push_back(pending_dial{d.host, d.port, d.connecting, d.remote});
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
