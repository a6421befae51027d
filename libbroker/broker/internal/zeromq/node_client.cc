#include "broker/internal/zeromq/node_client.hh"

#include "broker/internal/config/logger.hh"
#include "broker/internal/io/gate.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/io/stream.hh"
#include "broker/internal/zeromq/bridge.hh"
#include "broker/internal/zeromq/forwarder.hh"
#include "broker/internal/zeromq/zmq_link.hh"
#include "broker/internal/zmtp/curve.hh"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <mutex>
#include <optional>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace broker::internal::zeromq {

namespace {

constexpr std::string_view component = "zeromq";

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

/// What the links and the bridge share (they may outlive the node_client).
struct hub {
  forwarder out; ///< our XPUB connection subscribes, the bridge publishes
  forwarder in;  ///< our XSUB connection publishes, the bridge subscribes
  gate g;
};

/// One of our two sockets: connects, reconnects, holds the current link.
class uplink : public std::enable_shared_from_this<uplink> {
public:
  uplink(io_runtime& io, std::shared_ptr<hub> h, side role, connect_target target,
         link_options base)
    : io_(io),
      hub_(std::move(h)),
      role_(role),
      target_(std::move(target)),
      base_(std::move(base)),
      strand_(asio::make_strand(io.context())),
      timer_(strand_),
      resolver_(strand_) {
    name_ = std::string{role == side::xpub ? "xpub" : "xsub"} + " connection to "
            + target_.text;
  }

  void start() {
    asio::post(strand_, [self = shared_from_this()] { self->connect(); });
  }

  /// Closes the link and stops reconnecting (before the gate closes).
  void stop() {
    std::shared_ptr<zmq_link> l;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stopped_ = true;
      l = link_;
    }
    if (l)
      l->close_async("the node shuts down");
    asio::post(strand_, [self = shared_from_this()] {
      self->timer_.cancel();
      self->resolver_.cancel();
      if (self->socket_) {
        boost::system::error_code ignored;
        self->socket_->close(ignored);
      }
    });
  }

  link_status status() const {
    link_status st;
    std::lock_guard<std::mutex> guard{mtx_};
    st.name = name_;
    st.side = role_ == side::xpub ? "xpub" : "xsub";
    st.peer = peer_.empty() ? target_.text.substr(6) : peer_;
    st.endpoint = target_.text;
    st.state = state_;
    st.messages_in = totals_.in;
    st.messages_out = totals_.out;
    st.dropped = totals_.dropped;
    if (link_) {
      st.messages_in += link_->stats().messages_in.load(std::memory_order_relaxed);
      st.messages_out += link_->stats().messages_out.load(std::memory_order_relaxed);
      st.dropped += link_->stats().dropped.load(std::memory_order_relaxed);
      st.queued = link_->queue_size();
    }
    st.capacity = base_.buffer_size;
    st.policy = std::string{to_string(base_.policy)};
    st.connects = connects_;
    st.connect_failures = connect_failures_;
    st.failed = failed_;
    st.last_error = last_error_;
    return st;
  }

private:
  // -- on the strand ---------------------------------------------------------------------

  void log(log_level lvl, const std::string& text) {
    io_.get_logger().write(lvl, component, text);
  }

  void connect() {
    if (is_stopped())
      return;
    resolver_.async_resolve(
      target_.host, std::to_string(target_.port),
      asio::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec,
                                                               tcp::resolver::results_type rs) {
        self->on_resolved(ec, std::move(rs));
      }));
  }

  void on_resolved(boost::system::error_code ec, tcp::resolver::results_type rs) {
    if (is_stopped())
      return;
    if (ec) {
      attempt_failed("cannot resolve " + target_.host + ": " + ec.message());
      return;
    }
    socket_.emplace(strand_);
    asio::async_connect(*socket_, rs,
                        asio::bind_executor(strand_, [self = shared_from_this()](
                                                       boost::system::error_code ec,
                                                       const tcp::endpoint&) {
                          self->on_connected(ec);
                        }));
  }

  void on_connected(boost::system::error_code ec) {
    auto sock = std::move(*socket_);
    socket_.reset();
    if (is_stopped())
      return;
    if (ec) {
      attempt_failed(ec.message());
      return;
    }
    boost::system::error_code ignored;
    sock.set_option(tcp::no_delay{true}, ignored);
    auto opts = base_;
    opts.name = name_;
    if (auto remote = sock.remote_endpoint(ignored); !ignored) {
      opts.address = remote.address().to_string();
      opts.port = remote.port();
    }
    std::weak_ptr<uplink> weak = shared_from_this();
    // The link's only line in node mode is its close: once per outage (see the header).
    opts.log = [weak](bool is_error, const std::string& text) {
      if (auto self = weak.lock())
        self->link_log(is_error, text);
    };
    std::shared_ptr<forwarder> fwd{hub_, role_ == side::xpub ? &hub_->out : &hub_->in};
    auto l = std::make_shared<zmq_link>(std::make_unique<stream>(std::move(sock), nullptr),
                                        &hub_->g, std::move(fwd), std::move(opts));
    l->set_on_ready([weak] {
      if (auto self = weak.lock())
        self->on_link_ready();
    });
    l->set_on_close([weak](bool failed) {
      if (auto self = weak.lock())
        self->on_link_closed(failed);
    });
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (stopped_)
        return;
      link_ = l;
      peer_ = opts.address.empty() ? std::string{} : address_of(opts.address, opts.port);
    }
    io_.get_logger().write(log_level::debug, component, name_ + ": TCP connected");
    l->start();
  }

  static std::string address_of(const std::string& addr, uint16_t port) {
    auto a = addr.find(':') == std::string::npos ? addr : "[" + addr + "]";
    return a + ":" + std::to_string(port);
  }

  /// The link's close line (its only one in node mode): logged unless it is one more
  /// failure of an outage already logged (a flapping or hostile forwarder).
  void link_log(bool is_error, const std::string& text) {
    bool stopped = false;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stopped = stopped_;
      if (is_error)
        last_error_ = text;
    }
    if (stopped) {
      log(log_level::info, text);
      return;
    }
    if (stable())
      quiet_ = false; // It was up long enough: this is a new outage.
    if (quiet_ && is_error)
      return;
    quiet_ = true;
    announced_ = false;
    log(is_error ? log_level::warning : log_level::info,
        text + "; reconnecting (every " + std::to_string(reconnect_min_ms) + " ms to "
          + std::to_string(reconnect_max_ms / 1000) + " s)");
  }

  /// Whether the current link has been up for reconnect_max_ms (or more).
  bool stable() const {
    return up_since_ && std::chrono::steady_clock::now() - *up_since_
                          >= std::chrono::milliseconds{reconnect_max_ms};
  }

  void on_link_ready() {
    uint64_t n = 0;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      state_ = "connected";
      n = ++connects_;
    }
    up_since_ = std::chrono::steady_clock::now();
    if (!announced_) {
      announced_ = true;
      log(log_level::info, name_ + (n == 1 ? ": connected" : ": connected again"));
    }
  }

  void on_link_closed(bool failed) {
    // libzmq starts over at the shortest interval after a connection; we only after one
    // that lasted, so that a forwarder that fails every connection is tried at most every
    // reconnect_max_ms.
    if (stable())
      backoff_ms_ = reconnect_min_ms;
    up_since_.reset();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (link_) {
        totals_.in += link_->stats().messages_in.load(std::memory_order_relaxed);
        totals_.out += link_->stats().messages_out.load(std::memory_order_relaxed);
        totals_.dropped += link_->stats().dropped.load(std::memory_order_relaxed);
        // The link lives on while its pending handlers hold it.
        link_.reset();
      }
      if (failed)
        ++failed_;
      peer_.clear();
      if (stopped_)
        return;
      state_ = "reconnecting";
    }
    retry_later();
  }

  void attempt_failed(const std::string& why) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      ++connect_failures_;
      last_error_ = why;
      if (state_ == "connected")
        state_ = "reconnecting";
    }
    if (!quiet_) {
      quiet_ = true;
      announced_ = false;
      log(log_level::warning, name_ + ": cannot connect: " + why + "; retrying (every "
                                + std::to_string(reconnect_min_ms) + " ms to "
                                + std::to_string(reconnect_max_ms / 1000) + " s)");
    }
    retry_later();
  }

  void retry_later() {
    if (is_stopped())
      return;
    timer_.expires_after(std::chrono::milliseconds{backoff_ms_});
    backoff_ms_ = std::min(backoff_ms_ * 2, reconnect_max_ms);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec)
        self->connect();
    });
  }

  bool is_stopped() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return stopped_;
  }

  io_runtime& io_;
  std::shared_ptr<hub> hub_;
  side role_;
  connect_target target_;
  link_options base_;
  std::string name_;
  asio::strand<asio::io_context::executor_type> strand_;
  asio::steady_timer timer_;
  tcp::resolver resolver_;
  std::optional<tcp::socket> socket_; ///< While connecting.
  // Strand only.
  size_t backoff_ms_ = reconnect_min_ms;
  bool quiet_ = false;     ///< This outage was logged: more failures of it are not.
  bool announced_ = false; ///< The connection (again) was logged.
  std::optional<std::chrono::steady_clock::time_point> up_since_; ///< The link's handshake

  mutable std::mutex mtx_;
  bool stopped_ = false;
  std::shared_ptr<zmq_link> link_;
  std::string state_ = "connecting";
  std::string peer_;
  std::string last_error_;
  uint64_t connects_ = 0;
  uint64_t connect_failures_ = 0;
  uint64_t failed_ = 0;
  struct {
    uint64_t in = 0, out = 0, dropped = 0;
  } totals_; ///< Of the closed links.
};

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
    uplinks_[0] = std::make_shared<uplink>(io_, hub_, side::xpub, std::move(*xpub), pub);
    uplinks_[1] = std::make_shared<uplink>(io_, hub_, side::xsub, std::move(*xsub), sub);
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
    if (bridge_) {
      auto ld = [](const std::atomic<uint64_t>& x) { return x.load(std::memory_order_relaxed); };
      auto& b = bridge_->counters();
      c.bridged_to_core = ld(b.to_core);
      c.bridged_from_core = ld(b.from_core);
      c.not_bridged = ld(b.not_bridged);
      c.bridge_dropped = ld(b.dropped);
      c.own_events = ld(b.own_events);
      c.to_node = ld(b.to_node);
      c.hellos_sent = ld(b.hellos_sent);
    }
    return c;
  }

  void update_filter(const filter_type& f) override {
    if (bridge_)
      bridge_->update_filter(f);
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
  std::shared_ptr<hub> hub_ = std::make_shared<hub>();
  std::shared_ptr<uplink> uplinks_[2];
  std::shared_ptr<bridge> bridge_;
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
