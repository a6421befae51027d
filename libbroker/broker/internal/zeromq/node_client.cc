#include "broker/internal/zeromq/node_client.hh"

#include "broker/internal/zeromq/bridge.hh"
#include "broker/internal/zeromq/uplink.hh"
#include "broker/internal/zmtp/curve.hh"

#include <atomic>
#include <cctype>
#include <charconv>
#include <optional>

namespace broker::internal::zeromq {

namespace {

error bad_endpoint(std::string_view option, std::string_view text, std::string_view why) {
  return error{ec::invalid_config, std::string{option} + ": \"" + std::string{text}
                                     + "\" is no ZeroMQ endpoint tcp://host:port (" + std::string{why}
                                     + ")"};
}

} // namespace

expected<connect_target> parse_connect_endpoint(std::string_view text, std::string_view option) {
  constexpr std::string_view scheme = "tcp://";
  if (text.substr(0, scheme.size()) != scheme) {
    auto pos = text.find("://");
    if (pos == std::string_view::npos)
      return bad_endpoint(option, text, "no transport: it starts with tcp://");
    return bad_endpoint(option, text,
                        "transport " + std::string{text.substr(0, pos)}
                          + " is not supported: Zeek's nodes connect with tcp://");
  }
  auto rest = text.substr(scheme.size());
  connect_target result;
  result.text = std::string{text};
  std::string_view host;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      return bad_endpoint(option, text, "an IPv6 address is written [address]:port");
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos)
      return bad_endpoint(option, text, "no port");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return bad_endpoint(option, text, "an IPv6 address is written [address]:port");
  }
  if (host.empty())
    return bad_endpoint(option, text, "no host");
  if (host == "*")
    return bad_endpoint(option, text, "* is for binding, not for connecting: name the host");
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'
          || c == ':' || c == '%'))
      return bad_endpoint(option, text, "the host has a character that is not allowed");
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0
      || value > 65535)
    return bad_endpoint(option, text, "the port must be a number from 1 to 65535");
  result.host = std::string{host};
  result.port = static_cast<uint16_t>(value);
  return result;
}

bool wants_node_mode(const zeromq_settings& cfg) noexcept {
  return !cfg.connect_xpub.empty() || !cfg.connect_xsub.empty();
}

namespace {

class node_client_impl : public server {
public:
  node_client_impl(io_runtime& io, zeromq_settings cfg) : io_(io), cfg_(std::move(cfg)) {}

  error init() {
    if (cfg_.xsub_port != 0 || cfg_.xpub_port != 0)
      return error{ec::invalid_config,
                   "broker.zeromq.connect-xpub / connect-xsub (node mode: join a forwarder) "
                   "and broker.zeromq.xsub-port / xpub-port (be the forwarder) exclude each "
                   "other: set one pair"};
    if (cfg_.connect_xpub.empty() || cfg_.connect_xsub.empty())
      return error{ec::invalid_config,
                   std::string{"node mode needs both broker.zeromq.connect-xpub (the "
                               "forwarder's XSUB, Zeek's connect_xpub_endpoint) and "
                               "broker.zeromq.connect-xsub (its XPUB, connect_xsub_endpoint); "}
                     + (cfg_.connect_xpub.empty() ? "connect-xpub" : "connect-xsub")
                     + " is not set"};
    auto xpub = parse_connect_endpoint(cfg_.connect_xpub, "broker.zeromq.connect-xpub");
    if (!xpub)
      return xpub.error_value();
    auto xsub = parse_connect_endpoint(cfg_.connect_xsub, "broker.zeromq.connect-xsub");
    if (!xsub)
      return xsub.error_value();
    link_options base;
    base.session.server = false;
    base.buffer_size = cfg_.buffer_size;
    base.policy = cfg_.policy;
    base.heartbeat_ms = cfg_.heartbeat_interval_ms;
    if (auto err = curve(base.session))
      return err;
    auto pub = base;
    pub.role = side::xpub;
    pub.session.type = zmtp::socket_type::xpub;
    auto sub = base;
    sub.role = side::xsub;
    sub.session.type = zmtp::socket_type::xsub;
    sub.session.subscriptions_as_messages = true; // As a Zeek node's XSUB sends them.
    std::chrono::milliseconds timeout{cfg_.connect_timeout_ms};
    uplinks_[0] = std::make_shared<uplink>(io_, hub_, std::move(*xpub), pub, timeout);
    uplinks_[1] = std::make_shared<uplink>(io_, hub_, std::move(*xsub), sub, timeout);
    return {};
  }

  void make_bridge(std::shared_ptr<core_runtime> rt, uint64_t id, std::string name) {
    bridge_ = std::make_shared<bridge>(io_.context(), hub_->g, std::move(rt), id,
                                       std::shared_ptr<forwarder>{hub_, &hub_->out},
                                       cfg_.node_id, cfg_.buffer_size, cfg_.policy);
    bridge_->join_as_node(std::shared_ptr<forwarder>{hub_, &hub_->in}, std::move(name));
    bridge_->start();
  }

  void begin() {
    for (auto& u : uplinks_)
      u->start();
  }

  const std::string& node_id() const noexcept override { return cfg_.node_id; }

  std::string_view mode() const noexcept override { return "node"; }

  uint16_t xsub_port() const noexcept override { return 0; }
  uint16_t xpub_port() const noexcept override { return 0; }

  std::vector<link_status> links() const override {
    std::vector<link_status> result;
    for (auto& u : uplinks_)
      result.push_back(u->status());
    return result;
  }

  server_counters counters() const override {
    server_counters c;
    for (auto& st : links()) {
      c.connections += st.state == "connected" ? 1 : 0;
      c.failed += st.failed;
      c.dropped += st.dropped;
      c.reconnects += st.connects > 0 ? st.connects - 1 : 0;
      c.connect_failures += st.connect_failures;
    }
    if (bridge_)
      bridge_->report(c);
    return c;
  }

  void stop() override {
    if (stopped_.exchange(true))
      return;
    for (auto& u : uplinks_)
      u->stop();
    if (bridge_)
      bridge_->stop();
    hub_->g.close();
  }

private:
  error curve(zmtp::session_config& sc) {
    // As Zeek's nodes: our key pair (the one the nodes share) and the forwarder's public
    // key. The forwarder's secret key may stand for its public key (a copied Zeek config).
    bool ours = !cfg_.client_secret_key.empty();
    bool theirs = !cfg_.server_public_key.empty() || !cfg_.server_secret_key.empty();
    if (!ours && !theirs)
      return {};
    if (!ours)
      return error{ec::invalid_config,
                   "node mode with CURVE needs broker.zeromq.curve-client-secret-key (ours, "
                   "Zeek's curve_client_secretkey) besides the forwarder's "
                   "broker.zeromq.curve-server-public-key"};
    if (!theirs)
      return error{ec::invalid_config,
                   "node mode with CURVE needs the forwarder's "
                   "broker.zeromq.curve-server-public-key (Zeek's curve_server_publickey) "
                   "besides broker.zeromq.curve-client-secret-key"};
    auto secret = zmtp::key_from_z85(cfg_.client_secret_key);
    if (!secret)
      return error{ec::invalid_config, "broker.zeromq.curve-client-secret-key is no Z85 key "
                                       "(40 characters of Z85 text)"};
    sc.curve_keys.secret_key = *secret;
    sc.curve_keys.public_key = zmtp::public_key_of(*secret);
    if (!cfg_.client_public_key.empty()) {
      auto pub = zmtp::key_from_z85(cfg_.client_public_key);
      if (!pub)
        return error{ec::invalid_config, "broker.zeromq.curve-client-public-key is no Z85 "
                                         "key (40 characters of Z85 text)"};
      if (*pub != sc.curve_keys.public_key)
        return error{ec::invalid_config, "broker.zeromq.curve-client-public-key does not "
                                         "belong to broker.zeromq.curve-client-secret-key"};
    }
    std::optional<zmtp::key> server;
    if (!cfg_.server_public_key.empty()) {
      server = zmtp::key_from_z85(cfg_.server_public_key);
      if (!server)
        return error{ec::invalid_config, "broker.zeromq.curve-server-public-key is no Z85 "
                                         "key (40 characters of Z85 text)"};
    }
    if (!cfg_.server_secret_key.empty()) {
      auto s = zmtp::key_from_z85(cfg_.server_secret_key);
      if (!s)
        return error{ec::invalid_config, "broker.zeromq.curve-server-secret-key is no Z85 "
                                         "key (40 characters of Z85 text)"};
      auto derived = zmtp::public_key_of(*s);
      if (server && *server != derived)
        return error{ec::invalid_config, "broker.zeromq.curve-server-public-key does not "
                                         "belong to broker.zeromq.curve-server-secret-key"};
      server = derived;
    }
    sc.mech = zmtp::mechanism::curve;
    sc.curve_server_key = *server;
    return {};
  }

  io_runtime& io_;
  zeromq_settings cfg_;
  std::shared_ptr<node_hub> hub_ = std::make_shared<node_hub>();
  std::shared_ptr<uplink> uplinks_[2];
  std::atomic<bool> stopped_{false};
};

} // namespace

expected<std::shared_ptr<server>> node_client::start(io_runtime& io, const zeromq_settings& cfg,
                                                     std::shared_ptr<core_runtime> rt,
                                                     uint64_t bridge_id, std::string name) {
  auto nc = std::make_shared<node_client_impl>(io, cfg);
  if (auto err = nc->init())
    return err;
  if (rt)
    nc->make_bridge(std::move(rt), bridge_id, std::move(name));
  nc->begin();
  std::shared_ptr<server> result = nc;
  return result;
}

} // namespace broker::internal::zeromq
