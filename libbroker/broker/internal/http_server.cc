#include "broker/internal/http_server.hh"

#include "broker/internal/core_runtime.hh"
#include "broker/internal/json.hh"
#include "broker/internal/logger.hh"
#include "broker/internal/peering.hh"
#include "broker/internal/send_queue.hh"
#include "broker/internal/source_inbox.hh"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace broker::internal {

namespace {

constexpr std::string_view component = "web-socket";

/// The only WebSocket path (spec §2).
constexpr std::string_view ws_path = "/v1/messages/json";

/// The metrics path.
constexpr std::string_view metrics_path = "/metrics";

/// Header blocks up to this size are accepted (spec §2: SHOULD at least 8 KiB).
constexpr uint32_t max_header_size = 16 * 1024;

/// Plain HTTP requests carry no meaningful body here.
constexpr uint64_t max_request_body = 64 * 1024;

/// WebSocket close codes (RFC 6455).
constexpr uint16_t close_normal = 1000;
constexpr uint16_t close_unsupported_data = 1003;
constexpr uint16_t close_policy_violation = 1008;

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

class server_impl;

// -- WebSocket session ----------------------------------------------------------------

class ws_session : public std::enable_shared_from_this<ws_session> {
public:
  ws_session(std::shared_ptr<server_impl> srv, beast::tcp_stream stream);
  ~ws_session();

  void accept(http::request<http::string_body> req);

private:
  void on_accept(beast::error_code ec);
  void on_first_message(beast::error_code ec);
  void on_attached();
  void read_more();
  void on_read(beast::error_code ec);
  void flush_input();
  void write_more();
  void close_with(uint16_t code, std::string reason);
  void finish(peer_end why, const std::string& reason);
  std::string take_text();

  std::shared_ptr<server_impl> srv_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer rbuf_;
  std::string address_;
  uint16_t port_ = 0;
  uint64_t id_ = 0;
  endpoint_id client_id_ = endpoint_id::random();
  std::shared_ptr<send_queue> out_;
  std::shared_ptr<source_inbox> in_;
  std::vector<data_message> pending_;
  size_t pending_pos_ = 0;
  size_t inputs_ = 0;
  std::deque<std::string> ctrl_;
  std::string current_ctrl_;
  std::vector<send_item> items_;
  size_t item_pos_ = 0;
  bool attached_ = false;
  bool reading_ = false;
  bool read_paused_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool finished_ = false;
  std::optional<std::pair<uint16_t, std::string>> close_after_write_;
};

// -- plain HTTP session -----------------------------------------------------------------

class http_session : public std::enable_shared_from_this<http_session> {
public:
  http_session(std::shared_ptr<server_impl> srv, tcp::socket sock);
  void start();

private:
  void on_read(beast::error_code ec);
  void respond(http::status status, std::string content_type, std::string body);

  std::shared_ptr<server_impl> srv_;
  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> req_;
  std::shared_ptr<http::response<http::string_body>> res_;
};

// -- the server ---------------------------------------------------------------------------

class server_impl : public http_server, public std::enable_shared_from_this<server_impl> {
public:
  server_impl(peer_manager& net, std::shared_ptr<core_runtime> rt,
              std::function<uint64_t()> next_id, http_options opts)
    : ioc(net.io_context()),
      acc(ioc),
      rt(std::move(rt)),
      next_id(std::move(next_id)),
      opts(std::move(opts)) {}

  uint16_t port() const noexcept override { return bound_port; }

  void stop() override {
    std::unordered_map<const ws_session*, std::shared_ptr<ws_session>> sessions;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (stopped)
        return;
      stopped = true;
      sessions.swap(live);
    }
    // Sessions with pending operations live on in their handlers; the others go now.
    sessions.clear();
    asio::post(acc.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->acc.close(ignored);
    });
  }

  void accept() {
    acc.async_accept(asio::make_strand(ioc), [self = shared_from_this()](beast::error_code ec,
                                                                          tcp::socket sock) {
      if (ec == asio::error::operation_aborted || !self->acc.is_open())
        return;
      if (!ec) {
        sock.set_option(tcp::no_delay{true}, ec);
        std::make_shared<http_session>(self, std::move(sock))->start();
      }
      self->accept();
    });
  }

  asio::io_context& ioc;
  tcp::acceptor acc;
  std::shared_ptr<core_runtime> rt;
  std::function<uint64_t()> next_id;
  http_options opts;
  uint16_t bound_port = 0;
  std::atomic<size_t> clients{0};
  std::mutex mtx;
  bool stopped = false;
  /// Every session from upgrade to finish(). A session that stopped reading because its
  /// inbox is full has no pending operation, so this is what keeps it alive then.
  std::unordered_map<const ws_session*, std::shared_ptr<ws_session>> live;

  void track(const std::shared_ptr<ws_session>& session) {
    std::lock_guard<std::mutex> guard{mtx};
    if (!stopped)
      live.emplace(session.get(), session);
  }

  /// Pre: the caller holds its own reference to the session.
  void untrack(const ws_session* session) {
    std::lock_guard<std::mutex> guard{mtx};
    live.erase(session);
  }
};

// -- http_session ---------------------------------------------------------------------------

http_session::http_session(std::shared_ptr<server_impl> srv, tcp::socket sock)
  : srv_(std::move(srv)), stream_(std::move(sock)) {
}

void http_session::start() {
  parser_.emplace();
  parser_->header_limit(max_header_size);
  parser_->body_limit(max_request_body);
  stream_.expires_after(std::chrono::milliseconds{srv_->opts.handshake_timeout_ms});
  http::async_read(stream_, buf_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
}

void http_session::on_read(beast::error_code ec) {
  if (ec) {
    if (ec == http::error::header_limit)
      respond(http::status::request_header_fields_too_large, "text/plain",
              "Header exceeds maximum size.");
    else if (ec != beast::error::timeout && ec != http::error::end_of_stream)
      respond(http::status::bad_request, "text/plain", "Malformed request: " + ec.message());
    return;
  }
  req_ = parser_->release();
  auto path = path_of(std::string_view{req_.target().data(), req_.target().size()});
  const auto& opts = srv_->opts;
  if (opts.web_socket && path == ws_path) {
    if (!websocket::is_upgrade(req_)) {
      respond(http::status::bad_request, "text/plain", "Expected a WebSocket handshake.");
      return;
    }
    if (srv_->clients.load() >= opts.max_clients) {
      respond(http::status::service_unavailable, "text/plain",
              "too many WebSocket clients (maximum " + std::to_string(opts.max_clients) + ")");
      return;
    }
    stream_.expires_never();
    auto session = std::make_shared<ws_session>(srv_, std::move(stream_));
    srv_->track(session);
    session->accept(std::move(req_));
    return;
  }
  if (opts.metrics && path == metrics_path) {
    if (req_.method() != http::verb::get) {
      respond(http::status::method_not_allowed, "text/plain", "use GET");
      return;
    }
    // The numbers live in the core: ask it, answer on our strand.
    // The task keeps the session alive while the core works on it.
    auto exec = stream_.get_executor();
    srv_->rt->post([self = shared_from_this(), exec](core_state& st) {
      auto text = to_prometheus(st.metrics());
      asio::post(exec, [self, text = std::move(text)]() mutable {
        self->respond(http::status::ok, "text/plain; version=0.0.4", std::move(text));
      });
    });
    return;
  }
  if (opts.web_socket)
    respond(http::status::bad_request, "text/plain",
            "caf::sec::invalid_argument(\"invalid path; try /v1/messages/json\")");
  else
    respond(http::status::not_found, "text/plain", "not found; try /metrics");
}

void http_session::respond(http::status status, std::string content_type, std::string body) {
  res_ = std::make_shared<http::response<http::string_body>>(status, 11);
  res_->set(http::field::content_type, content_type);
  res_->body() = std::move(body);
  res_->keep_alive(false);
  res_->prepare_payload();
  http::async_write(stream_, *res_, [self = shared_from_this()](beast::error_code, size_t) {
    beast::error_code ignored;
    self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  });
}

// -- ws_session -------------------------------------------------------------------------------

ws_session::ws_session(std::shared_ptr<server_impl> srv, beast::tcp_stream stream)
  : srv_(std::move(srv)), ws_(std::move(stream)) {
  beast::error_code ec;
  auto ep = beast::get_lowest_layer(ws_).socket().remote_endpoint(ec);
  if (!ec) {
    address_ = ep.address().to_string();
    port_ = ep.port();
  }
  ++srv_->clients;
}

ws_session::~ws_session() {
  --srv_->clients;
}

void ws_session::accept(http::request<http::string_body> req) {
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
    res.erase(http::field::server); // Broker sends exactly the RFC's lines.
  }));
  ws_.read_message_max(srv_->opts.max_message_size);
  ws_.auto_fragment(false); // One frame per message, as Broker clients expect.
  ws_.text(true);
  beast::get_lowest_layer(ws_).expires_after(
    std::chrono::milliseconds{srv_->opts.handshake_timeout_ms});
  ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
}

void ws_session::on_accept(beast::error_code ec) {
  if (ec) {
    srv_->untrack(this); // Not a valid upgrade; Beast answered it.
    return;
  }
  ws_.async_read(rbuf_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->on_first_message(ec);
  });
}

std::string ws_session::take_text() {
  auto text = beast::buffers_to_string(rbuf_.data());
  rbuf_.consume(rbuf_.size());
  return text;
}

void ws_session::on_first_message(beast::error_code ec) {
  if (ec) {
    if (ec == beast::error::timeout)
      log(log_level::info, component, "client " + address_ + " sent no subscriptions in time");
    finish(peer_end::lost, ec.message());
    return;
  }
  beast::get_lowest_layer(ws_).expires_never();
  if (!ws_.got_text()) {
    close_with(close_unsupported_data, "binary frames are not supported");
    return;
  }
  auto filter = json::decode_filter(take_text(), srv_->opts.max_depth);
  if (!filter) {
    ctrl_.push_back(json::make_error("deserialization_failed",
                                     "first message must contain a filter"));
    close_after_write_.emplace(close_policy_violation, "first message must contain a filter");
    write_more();
    return;
  }
  const auto& opts = srv_->opts;
  id_ = srv_->next_id();
  out_ = std::make_shared<send_queue>(opts.buffer_size, opts.policy);
  in_ = std::make_shared<source_inbox>(id_, opts.inbox_capacity);
  std::weak_ptr<ws_session> weak = shared_from_this();
  auto exec = ws_.get_executor();
  out_->on_ready([weak, exec] {
    asio::post(exec, [weak] {
      if (auto self = weak.lock())
        self->write_more();
    });
  });
  in_->on_wake(srv_->rt->wake_callback(id_));
  in_->on_release([weak, exec] {
    asio::post(exec, [weak] {
      if (auto self = weak.lock())
        self->flush_input();
    });
  });
  client_attachment att;
  att.id = id_;
  att.client = client_id_;
  for (auto& prefix : *filter)
    att.filter.emplace_back(prefix);
  att.address = address_;
  att.port = port_;
  att.queue = out_;
  att.inbox = in_;
  // The ack goes out only after the core subscribed us (spec §4.2 fix).
  // The task keeps the session alive while the core attaches it.
  srv_->rt->post([att = std::move(att), self = shared_from_this(), exec](core_state& st) mutable {
    st.add_client(std::move(att));
    asio::post(exec, [self] { self->on_attached(); });
  });
}

void ws_session::on_attached() {
  attached_ = true;
  log(log_level::info, component,
      "client " + to_string(client_id_) + " connected from " + address_ + ":"
        + std::to_string(port_));
  ctrl_.push_back(json::make_ack(to_string(srv_->opts.node), srv_->opts.version));
  write_more();
  read_more();
}

void ws_session::read_more() {
  if (reading_ || read_paused_ || closing_ || finished_)
    return;
  reading_ = true;
  ws_.async_read(rbuf_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->reading_ = false;
    self->on_read(ec);
  });
}

void ws_session::on_read(beast::error_code ec) {
  if (ec) {
    if (ec == websocket::error::closed)
      finish(peer_end::lost, "closed by client");
    else
      finish(peer_end::lost, ec.message());
    return;
  }
  ++inputs_;
  if (!ws_.got_text()) {
    close_with(close_unsupported_data, "binary frames are not supported");
    return;
  }
  auto text = take_text();
  std::string topic;
  data value;
  auto res = json::decode_data_message(text, topic, value, srv_->opts.max_depth);
  if (!res) {
    ctrl_.push_back(json::make_error("deserialization_failed", json::error_context(inputs_, res)));
    write_more();
  } else {
    pending_.emplace_back(std::move(topic), std::move(value));
    flush_input();
  }
  read_more();
}

void ws_session::flush_input() {
  if (!in_ || pending_.empty())
    return;
  pending_pos_ += in_->try_push_some(pending_, pending_pos_);
  if (pending_pos_ == pending_.size()) {
    pending_.clear();
    pending_pos_ = 0;
    if (read_paused_) {
      read_paused_ = false;
      read_more();
    }
  } else {
    read_paused_ = true; // A flooding client is slowed by TCP, never disconnected.
  }
}

void ws_session::write_more() {
  if (writing_ || finished_)
    return;
  auto on_written = [self = shared_from_this()](beast::error_code ec, size_t) {
    self->writing_ = false;
    if (ec) {
      self->finish(peer_end::lost, "write failed: " + ec.message());
      return;
    }
    self->write_more();
  };
  if (!ctrl_.empty()) {
    current_ctrl_ = std::move(ctrl_.front());
    ctrl_.pop_front();
    writing_ = true;
    ws_.async_write(asio::buffer(current_ctrl_), std::move(on_written));
    return;
  }
  // Once the queue has closed we only finish writing and close: take() would keep
  // reporting the closed queue, and each report would queue another frame.
  if (item_pos_ == items_.size() && !closing_ && !close_after_write_ && out_) {
    items_.clear();
    item_pos_ = 0;
    std::optional<filter_type> unused;
    if (!out_->take(items_, unused)) {
      if (out_->overflowed()) {
        ctrl_.push_back(json::make_error(
          "backpressure_overflow", "output queue exceeded "
                                     + std::to_string(srv_->opts.buffer_size)
                                     + " messages; disconnecting"));
        close_after_write_.emplace(close_normal, "backpressure overflow");
      } else {
        close_after_write_.emplace(close_normal, "EOF");
      }
      write_more();
      return;
    }
  }
  if (item_pos_ < items_.size()) {
    // The JSON frame is encoded once per message and shared by every client.
    const auto& frame = items_[item_pos_++].msg.impl().json();
    writing_ = true;
    ws_.async_write(asio::buffer(frame), std::move(on_written));
    return;
  }
  if (close_after_write_) {
    auto [code, reason] = *close_after_write_;
    close_after_write_.reset();
    close_with(code, reason);
  }
}

void ws_session::close_with(uint16_t code, std::string reason) {
  if (closing_ || finished_)
    return;
  closing_ = true;
  websocket::close_reason cr{static_cast<websocket::close_code>(code), reason};
  ws_.async_close(cr, [self = shared_from_this(), reason](beast::error_code) {
    self->finish(peer_end::removed, reason);
  });
}

void ws_session::finish(peer_end why, const std::string& reason) {
  if (finished_)
    return;
  finished_ = true;
  if (in_)
    in_->on_release(nullptr);
  if (out_)
    out_->on_ready(nullptr);
  if (attached_) {
    log(log_level::info, component, "client " + to_string(client_id_) + " removed: " + reason);
    if (!pending_.empty())
      in_->try_push_some(pending_, pending_pos_);
    auto id = id_;
    srv_->rt->post([id, why, reason](core_state& st) { st.remove_client(id, why, reason); });
  }
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(ws_).socket().close(ignored);
  srv_->untrack(this); // Last: every caller is a handler that holds its own reference.
}

} // namespace

expected<std::shared_ptr<http_server>>
http_server::start(peer_manager& net, std::shared_ptr<core_runtime> rt,
                   std::function<uint64_t()> next_id, const std::string& address,
                   uint16_t port, http_options opts) {
  auto srv = std::make_shared<server_impl>(net, std::move(rt), std::move(next_id),
                                           std::move(opts));
  beast::error_code ec;
  auto addr = asio::ip::make_address(address.empty() ? "0.0.0.0" : address, ec);
  if (ec)
    return error{ec::invalid_config, "invalid listen address \"" + address + "\""};
  tcp::endpoint ep{addr, port};
  srv->acc.open(ep.protocol(), ec);
  if (!ec)
    srv->acc.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    srv->acc.bind(ep, ec);
  if (!ec)
    srv->acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return error{ec::cannot_open_resource, "cannot listen on " + address + ":"
                                             + std::to_string(port) + ": " + ec.message()};
  srv->bound_port = srv->acc.local_endpoint().port();
  asio::post(srv->acc.get_executor(), [srv] { srv->accept(); });
  std::shared_ptr<http_server> result = srv;
  return result;
}

} // namespace broker::internal
