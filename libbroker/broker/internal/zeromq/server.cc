#include "broker/internal/zeromq/server.hh"

#include "broker/internal/config/logger.hh"
#include "broker/internal/io/gate.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/io/stream.hh"
#include "broker/internal/zeromq/bridge.hh"
#include "broker/internal/zeromq/forwarder.hh"
#include "broker/internal/zeromq/zmq_link.hh"
#include "broker/internal/zmtp/curve.hh"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace broker::internal::zeromq {

server::~server() = default;

void server::update_filter(const filter_type& f) {
  if (bridge_)
    bridge_->update_filter(f);
}

namespace {

constexpr std::string_view component = "zeromq";

class server_impl : public server, public std::enable_shared_from_this<server_impl> {
public:
  server_impl(io_runtime& io, zeromq_settings cfg, std::shared_ptr<security::runtime> sec)
    : io_(io), cfg_(std::move(cfg)), sec_(std::move(sec)), xsub_acc_(io.context()), xpub_acc_(io.context()) {}

  ~server_impl() override {
    boost::system::error_code ignored;
    xsub_acc_.close(ignored);
    xpub_acc_.close(ignored);
  }

  error init() {
    if (!cfg_.server_secret_key.empty()) {
      auto secret = zmtp::key_from_z85(cfg_.server_secret_key);
      if (!secret)
        return error{ec::invalid_config, "broker.zeromq.curve-server-secret-key is no Z85 "
                                         "key (40 characters of Z85 text)"};
      keys_.secret_key = *secret;
      keys_.public_key = zmtp::public_key_of(*secret);
      if (!cfg_.server_public_key.empty()) {
        auto pub = zmtp::key_from_z85(cfg_.server_public_key);
        if (!pub)
          return error{ec::invalid_config, "broker.zeromq.curve-server-public-key is no Z85 "
                                           "key (40 characters of Z85 text)"};
        if (*pub != keys_.public_key)
          return error{ec::invalid_config, "broker.zeromq.curve-server-public-key does not "
                                           "belong to broker.zeromq.curve-server-secret-key"};
      }
      // As Zeek's forwarder (its ZAP handler admits the configured client public key):
      // with broker.zeromq.curve-client-public-key set, only a node with that key gets in;
      // another is refused with ZAP's status 400 (libzmq's nodes see AUTH_FAILED).
      if (!cfg_.client_public_key.empty()) {
        auto client = zmtp::key_from_z85(cfg_.client_public_key);
        if (!client)
          return error{ec::invalid_config, "broker.zeromq.curve-client-public-key is no Z85 "
                                           "key (40 characters of Z85 text)"};
        admitted_ = *client;
        admit_one_ = true;
      }
      curve_ = true;
    }
    if (auto err = listen(xsub_acc_, cfg_.xsub_port, "broker.zeromq.xsub-port"))
      return err;
    return listen(xpub_acc_, cfg_.xpub_port, "broker.zeromq.xpub-port");
  }

  void begin() {
    if (xsub_acc_.is_open())
      accept(xsub_acc_, side::xsub);
    if (xpub_acc_.is_open())
      accept(xpub_acc_, side::xpub);
  }

  const std::string& node_id() const noexcept override { return cfg_.node_id; }

  uint16_t xsub_port() const noexcept override { return xsub_bound_; }
  uint16_t xpub_port() const noexcept override { return xpub_bound_; }

  std::vector<link_status> links() const override {
    std::vector<link_status> result;
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& [ptr, l] : live_) {
      link_status st;
      st.name = l->name();
      st.side = l->role() == side::xsub ? "xsub" : "xpub";
      auto pos = st.name.rfind(' ');
      st.peer = pos == std::string::npos ? st.name : st.name.substr(pos + 1);
      st.messages_in = l->stats().messages_in.load(std::memory_order_relaxed);
      st.messages_out = l->stats().messages_out.load(std::memory_order_relaxed);
      st.dropped = l->stats().dropped.load(std::memory_order_relaxed);
      st.queued = l->queue_size();
      st.capacity = cfg_.buffer_size;
      st.policy = std::string{to_string(cfg_.policy)};
      std::tie(st.zeek_id, st.zeek_name) = l->zeek_node();
      result.push_back(std::move(st));
    }
    // A node's name comes from its XPUB (xsub side); its XSUB connection gets it by id.
    std::map<std::string, std::string> names;
    for (auto& st : result)
      if (!st.zeek_id.empty() && !st.zeek_name.empty())
        names.emplace(st.zeek_id, st.zeek_name);
    for (auto& st : result)
      if (st.zeek_name.empty())
        if (auto i = names.find(st.zeek_id); i != names.end())
          st.zeek_name = i->second;
    return result;
  }

  server_counters counters() const override {
    server_counters c;
    auto& f = hub_->fwd.counters();
    auto ld = [](const std::atomic<uint64_t>& x) { return x.load(std::memory_order_relaxed); };
    c.frontend_bytes_received = ld(f.frontend_bytes_received);
    c.frontend_messages_received = ld(f.frontend_messages_received);
    c.frontend_bytes_sent = ld(f.frontend_bytes_sent);
    c.frontend_messages_sent = ld(f.frontend_messages_sent);
    c.backend_bytes_received = ld(f.backend_bytes_received);
    c.backend_messages_received = ld(f.backend_messages_received);
    c.backend_bytes_sent = ld(f.backend_bytes_sent);
    c.backend_messages_sent = ld(f.backend_messages_sent);
    std::lock_guard<std::mutex> guard{mtx_};
    c.connections = live_.size();
    c.accepted = accepted_;
    c.failed = failed_;
    c.dropped = dropped_closed_;
    for (auto& [ptr, l] : live_)
      c.dropped += l->stats().dropped.load(std::memory_order_relaxed);
    if (bridge_)
      bridge_->report(c);
    return c;
  }

  void make_bridge(std::shared_ptr<core_runtime> rt, uint64_t id) {
    std::shared_ptr<forwarder> fwd{hub_, &hub_->fwd};
    bridge_ = std::make_shared<bridge>(io_.context(), hub_->g, std::move(rt), id,
                                       std::move(fwd), cfg_.node_id, cfg_.buffer_size,
                                       cfg_.policy);
    bridge_->start();
  }

  void stop() override {
    std::unordered_map<const zmq_link*, std::shared_ptr<zmq_link>> rest;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (stopped_)
        return;
      stopped_ = true;
      rest.swap(live_);
    }
    asio::post(xsub_acc_.get_executor(), [self = shared_from_this()] {
      boost::system::error_code ignored;
      self->xsub_acc_.close(ignored);
      self->xpub_acc_.close(ignored);
    });
    for (auto& [ptr, l] : rest)
      l->close_async("the node shuts down");
    if (bridge_)
      bridge_->stop();
    hub_->g.close();
  }

private:
  error listen(tcp::acceptor& acc, uint16_t port, const char* option) {
    if (port == 0)
      return {};
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(cfg_.address.empty() ? "0.0.0.0" : cfg_.address, ec);
    if (ec)
      return error{ec::invalid_config,
                   "broker.zeromq.address: invalid listen address \"" + cfg_.address + "\""};
    tcp::endpoint ep{addr, port};
    acc.open(ep.protocol(), ec);
    if (!ec)
      acc.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec)
      acc.bind(ep, ec);
    if (!ec)
      acc.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return error{ec::cannot_open_resource, std::string{option} + ": cannot listen on "
                                               + cfg_.address + ":" + std::to_string(port)
                                               + ": " + ec.message()};
    (&acc == &xsub_acc_ ? xsub_bound_ : xpub_bound_) = acc.local_endpoint().port();
    return {};
  }

  void accept(tcp::acceptor& acc, side role) {
    acc.async_accept(asio::make_strand(io_.context()),
                     [self = shared_from_this(), &acc, role](boost::system::error_code ec,
                                                             tcp::socket sock) {
                       if (ec == asio::error::operation_aborted || !acc.is_open())
                         return;
                       if (!ec)
                         self->on_accept(std::move(sock), role);
                       self->accept(acc, role);
                     });
  }

  void on_accept(tcp::socket sock, side role) {
    boost::system::error_code ec;
    sock.set_option(tcp::no_delay{true}, ec);
    link_options opts;
    opts.role = role;
    opts.session.type = role == side::xsub ? zmtp::socket_type::xsub : zmtp::socket_type::xpub;
    opts.session.server = true;
    opts.session.subscriptions_as_messages = true; // As libzmq's XSUB forwards them.
    if (curve_) {
      opts.session.mech = zmtp::mechanism::curve;
      opts.session.curve_keys = keys_;
      if (sec_) {
        // With rules: the link admits identities by key (zmq_link.hh); the shared key too.
        if (admit_one_)
          opts.shared_key = admitted_;
      } else if (admit_one_)
        opts.session.authorize = [admitted = admitted_](const zmtp::key& k) {
          return k == admitted;
        };
    }
    opts.security = sec_;
    auto remote = sock.remote_endpoint(ec);
    if (!ec) {
      opts.address = remote.address().to_string();
      opts.port = remote.port();
    }
    opts.buffer_size = cfg_.buffer_size;
    opts.policy = cfg_.policy;
    opts.heartbeat_ms = cfg_.heartbeat_interval_ms;
    std::weak_ptr<server_impl> weak = shared_from_this();
    opts.log = [weak](bool is_error, const std::string& text) {
      if (auto self = weak.lock())
        self->io_.get_logger().write(is_error ? log_level::warning : log_level::info,
                                     component, text);
    };
    // The link keeps the forwarder and the gate alive (they outlive the server if need be).
    std::shared_ptr<forwarder> fwd{hub_, &hub_->fwd};
    auto l = std::make_shared<zmq_link>(std::make_unique<stream>(std::move(sock), nullptr),
                                        &hub_->g, std::move(fwd), std::move(opts));
    const zmq_link* key = l.get();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (stopped_)
        return;
      live_.emplace(key, l);
      ++accepted_;
    }
    l->set_on_close([weak, key](bool failed) {
      if (auto self = weak.lock())
        self->forget(key, failed);
    });
    io_.get_logger().write(log_level::debug, component, l->name() + " accepted");
    l->start();
  }

  void forget(const zmq_link* key, bool failed) {
    std::lock_guard<std::mutex> guard{mtx_};
    if (failed)
      ++failed_;
    auto i = live_.find(key);
    if (i == live_.end())
      return;
    dropped_closed_ += i->second->stats().dropped.load(std::memory_order_relaxed);
    // The link lives on while its pending handlers hold it (close() runs in one of them).
    live_.erase(i);
  }

  io_runtime& io_;
  zeromq_settings cfg_;
  std::shared_ptr<security::runtime> sec_; ///< Null without a rules file.
  zmtp::keypair keys_;
  bool curve_ = false;
  bool admit_one_ = false; ///< broker.zeromq.curve-client-public-key set: only that key.
  zmtp::key admitted_{};
  /// What the links share with the server.
  struct hub {
    forwarder fwd;
    gate g;
  };
  std::shared_ptr<hub> hub_ = std::make_shared<hub>();
  tcp::acceptor xsub_acc_;
  tcp::acceptor xpub_acc_;
  uint16_t xsub_bound_ = 0;
  uint16_t xpub_bound_ = 0;
  mutable std::mutex mtx_;
  std::unordered_map<const zmq_link*, std::shared_ptr<zmq_link>> live_;
  uint64_t accepted_ = 0;
  uint64_t failed_ = 0;
  uint64_t dropped_closed_ = 0;
  bool stopped_ = false;
};

} // namespace

expected<std::shared_ptr<server>> server::start(io_runtime& io, const zeromq_settings& cfg,
                                                std::shared_ptr<core_runtime> rt,
                                                uint64_t bridge_id,
                                                std::shared_ptr<security::runtime> sec) {
  if (sec && sec->rules_file().empty())
    sec = nullptr; // No rules: nothing to check.
  auto srv = std::make_shared<server_impl>(io, cfg, std::move(sec));
  if (auto err = srv->init())
    return err;
  if (rt)
    srv->make_bridge(std::move(rt), bridge_id);
  asio::post(io.context(), [srv] { srv->begin(); });
  std::shared_ptr<server> result = srv;
  return result;
}

} // namespace broker::internal::zeromq
