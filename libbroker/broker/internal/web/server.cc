#include "broker/internal/web/server.hh"

#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/web/transport.hh"
#include "broker/internal/codec/json.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/peering/peer_manager.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/internal/core/source_inbox.hh"
#include "broker/internal/web/unmask.hh"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <condition_variable>
#include <cstring>
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

/// Bytes read from the socket at once while the frame_masker needs a frame header.
constexpr size_t masker_read_size = 16 * 1024;

/// WebSocket close codes (RFC 6455).
constexpr uint16_t close_normal = 1000;
constexpr uint16_t close_unsupported_data = 1003;
constexpr uint16_t close_policy_violation = 1008;

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

class server_impl;

/// Lets other threads (the core, queue callbacks) post to a session's strand only while the
/// server runs. After stop() nothing is posted any more, so nothing can reach a strand of
/// an io_context that the endpoint destroys next.
class io_gate {
public:
  template <class Executor, class F>
  void post(const Executor& exec, F&& f) {
    std::lock_guard<std::mutex> guard{mtx_};
    if (open_)
      asio::post(exec, std::forward<F>(f));
  }

  void close() {
    std::lock_guard<std::mutex> guard{mtx_};
    open_ = false;
  }

private:
  std::mutex mtx_;
  bool open_ = true;
};

// -- unmasking ----------------------------------------------------------------------------

/// The layer between the transport and Beast's WebSocket stream that runs a frame_masker
/// over the bytes the client sends, so that Beast (server role) accepts unmasked frames.
/// Writes pass through untouched. Payload bytes are read straight into Beast's buffer
/// when the masker allows it; only frame headers take a detour through `raw_`.
class unmask_stream {
public:
  using next_layer_type = erased_stream;
  using executor_type = erased_stream::executor_type;

  /// `early` holds bytes the HTTP parser read past the upgrade request: they come first.
  unmask_stream(erased_stream&& next, std::string_view early) : next_(std::move(next)) {
    if (!early.empty()) {
      auto dst = raw_.prepare(early.size());
      std::memcpy(dst.data(), early.data(), early.size());
      raw_.commit(early.size());
    }
  }

  executor_type get_executor() noexcept { return next_.get_executor(); }
  erased_stream& next_layer() noexcept { return next_; }

  template <class ConstBuffers, class WriteHandler>
  auto async_write_some(const ConstBuffers& buffers, WriteHandler&& handler) {
    return next_.async_write_some(buffers, std::forward<WriteHandler>(handler));
  }

  template <class MutableBuffers, class ReadHandler>
  auto async_read_some(const MutableBuffers& buffers, ReadHandler&& handler) {
    return asio::async_compose<ReadHandler, void(beast::error_code, size_t)>(
      read_op<MutableBuffers>{*this, buffers}, handler, next_);
  }

private:
  template <class MutableBuffers>
  struct read_op {
    enum class step { start, posted, direct, raw };
    unmask_stream& s;
    MutableBuffers buffers;
    step at = step::start;
    size_t result = 0;

    template <class Self>
    void operator()(Self& self, beast::error_code ec = {}, size_t n = 0) {
      switch (at) {
        case step::start:
          result = s.drain(buffers);
          if (result > 0 || asio::buffer_size(buffers) == 0) {
            at = step::posted; // Never complete inside the initiating call.
            asio::post(s.get_executor(), std::move(self));
            return;
          }
          read_more(self);
          return;
        case step::posted:
          self.complete({}, result);
          return;
        case step::direct:
          s.masker_.skip(n);
          self.complete(ec, n);
          return;
        case step::raw:
          s.raw_.commit(n);
          result = s.drain(buffers);
          if (result > 0 || ec)
            self.complete(result > 0 ? beast::error_code{} : ec, result);
          else
            read_more(self); // Only part of a frame header arrived.
          return;
      }
    }

    /// Pre: nothing buffered is left to produce (drain() returned 0 for a non-empty
    /// destination, so `raw_` is empty).
    template <class Self>
    void read_more(Self& self) {
      if (auto direct = s.masker_.passthrough(); direct > 0) {
        at = step::direct;
        auto limit = static_cast<size_t>(std::min<uint64_t>(direct, SIZE_MAX));
        s.next_.async_read_some(beast::buffers_prefix(limit, buffers), std::move(self));
      } else {
        at = step::raw;
        s.next_.async_read_some(s.raw_.prepare(masker_read_size), std::move(self));
      }
    }
  };

  /// Moves what `raw_` and the masker hold into `buffers`; returns the bytes produced.
  template <class MutableBuffers>
  size_t drain(const MutableBuffers& buffers) {
    size_t total = 0;
    for (auto i = asio::buffer_sequence_begin(buffers); i != asio::buffer_sequence_end(buffers);
         ++i) {
      asio::mutable_buffer dst{*i};
      auto src = raw_.data();
      auto p = masker_.transform(static_cast<const std::byte*>(src.data()), src.size(),
                                 static_cast<std::byte*>(dst.data()), dst.size());
      raw_.consume(p.consumed);
      total += p.produced;
      if (p.produced < dst.size())
        break; // Nothing more to produce.
    }
    return total;
  }

  erased_stream next_;
  frame_masker masker_;
  beast::flat_buffer raw_;
};

template <class TeardownHandler>
void async_teardown(beast::role_type role, unmask_stream& stream, TeardownHandler&& handler) {
  async_teardown(role, stream.next_layer(), std::forward<TeardownHandler>(handler));
}

// -- WebSocket session ----------------------------------------------------------------

class ws_session : public std::enable_shared_from_this<ws_session> {
public:
  ws_session(std::shared_ptr<server_impl> srv, erased_stream stream, std::string_view early);
  ~ws_session();

  void accept(http::request<http::string_body> req);

  /// Sends close 1000 once the frames in progress are written (posted to the strand).
  void close_for_shutdown();

  /// Closes the socket now (posted to the strand).
  void abort();

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
  websocket::stream<unmask_stream> ws_;
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
  bool accepted_ = false;   ///< The upgrade succeeded: close frames are possible.
  bool registered_ = false; ///< add_client() is posted: finish() must remove the client.
  bool attached_ = false;
  bool reading_ = false;
  bool read_paused_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool finished_ = false;
  std::optional<std::pair<uint16_t, std::string>> close_after_write_;
};

// -- plain HTTP session -----------------------------------------------------------------

/// Runs the TLS handshake (wss://), reads one request, then upgrades it to a ws_session,
/// answers /metrics or refuses it.
class http_session : public std::enable_shared_from_this<http_session> {
public:
  http_session(std::shared_ptr<server_impl> srv, erased_stream stream);
  void start();

private:
  void read_request();
  void on_read(beast::error_code ec);
  void respond(http::status status, std::string content_type, std::string body);
  std::string peer_name();

  std::shared_ptr<server_impl> srv_;
  erased_stream stream_;
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
    std::vector<std::shared_ptr<ws_session>> sessions;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (stopped)
        return;
      stopped = true;
      for (auto& [key, session] : live)
        sessions.push_back(session);
    }
    asio::post(acc.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->acc.close(ignored);
    });
    // Clients see a normal close instead of a dropped connection. On an I/O thread we
    // cannot wait for the handshakes: this thread would have to run them.
    for (auto& session : sessions)
      session->close_for_shutdown();
    sessions.clear();
    std::unique_lock<std::mutex> guard{mtx};
    if (!ioc.get_executor().running_in_this_thread())
      gone.wait_for(guard, shutdown_close_timeout, [this] { return live.empty(); });
    // Whoever is left goes now. The posted aborts keep their sessions alive until they ran;
    // dropping our references breaks the session <-> server cycle even if they never run.
    std::unordered_map<const ws_session*, std::shared_ptr<ws_session>> rest;
    rest.swap(live);
    guard.unlock();
    for (auto& [key, session] : rest)
      session->abort();
    gate->close();
  }

  void accept();

  asio::io_context& ioc;
  tcp::acceptor acc;
  std::shared_ptr<core_runtime> rt;
  std::function<uint64_t()> next_id;
  http_options opts;
  asio::ssl::context* tls = nullptr; ///< The peering TLS context (wss://), or null (ws://).
  std::shared_ptr<io_gate> gate = std::make_shared<io_gate>();
  uint16_t bound_port = 0;
  std::atomic<size_t> clients{0};
  std::mutex mtx;
  std::condition_variable gone; ///< Signalled when `live` becomes empty.
  bool stopped = false;
  /// Every session from upgrade to finish(). A session that stopped reading because its
  /// inbox is full has no pending operation, so this is what keeps it alive then.
  std::unordered_map<const ws_session*, std::shared_ptr<ws_session>> live;

  /// Registers an upgraded session; false once the server stopped.
  bool track(const std::shared_ptr<ws_session>& session) {
    std::lock_guard<std::mutex> guard{mtx};
    if (stopped)
      return false;
    live.emplace(session.get(), session);
    return true;
  }

  /// Pre: the caller holds its own reference to the session.
  void untrack(const ws_session* session) {
    std::lock_guard<std::mutex> guard{mtx};
    if (live.erase(session) > 0 && live.empty())
      gone.notify_all();
  }
};

void server_impl::accept() {
  acc.async_accept(asio::make_strand(ioc), [self = shared_from_this()](beast::error_code ec,
                                                                        tcp::socket sock) {
    if (ec == asio::error::operation_aborted || !self->acc.is_open())
      return;
    if (!ec) {
      sock.set_option(tcp::no_delay{true}, ec);
      auto conn = make_transport(std::move(sock), self->tls);
      std::make_shared<http_session>(self, erased_stream{std::move(conn)})->start();
    }
    self->accept();
  });
}

// -- http_session ---------------------------------------------------------------------------

http_session::http_session(std::shared_ptr<server_impl> srv, erased_stream stream)
  : srv_(std::move(srv)), stream_(std::move(stream)) {
}

std::string http_session::peer_name() {
  beast::error_code ec;
  auto ep = beast::get_lowest_layer(stream_).socket().remote_endpoint(ec);
  if (ec)
    return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

void http_session::start() {
  // One deadline for the TLS handshake and the request together.
  beast::get_lowest_layer(stream_).expires_after(
    std::chrono::milliseconds{srv_->opts.handshake_timeout_ms});
  if (!stream_.impl().secure()) {
    read_request();
    return;
  }
  stream_.impl().handshake([self = shared_from_this()](beast::error_code ec) {
    if (ec) {
      // No client certificate, one from another CA, a plain ws:// client, ...
      log(log_level::info, component,
          "TLS handshake with " + self->peer_name() + " failed: " + ec.message());
      beast::error_code ignored;
      self->stream_.next_layer().socket().close(ignored);
      return;
    }
    self->read_request();
  });
}

void http_session::read_request() {
  parser_.emplace();
  parser_->header_limit(max_header_size);
  parser_->body_limit(max_request_body);
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
    beast::get_lowest_layer(stream_).expires_never();
    // A client may send its first frames right behind the request; the parser has them.
    auto early = beast::buffers_to_string(buf_.data());
    auto session = std::make_shared<ws_session>(srv_, std::move(stream_), early);
    if (!srv_->track(session)) {
      session->abort(); // The server stopped while this request was on its way.
      return;
    }
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
    srv_->rt->post([self = shared_from_this(), exec, gate = srv_->gate](core_state& st) {
      auto text = to_prometheus(st.metrics());
      gate->post(exec, [self, text = std::move(text)]() mutable {
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

void http_session::respond(http::status status, std::string content_type,
                                   std::string body) {
  res_ = std::make_shared<http::response<http::string_body>>(status, 11);
  res_->set(http::field::content_type, content_type);
  res_->body() = std::move(body);
  res_->keep_alive(false);
  res_->prepare_payload();
  http::async_write(stream_, *res_, [self = shared_from_this()](beast::error_code, size_t) {
    // The body has a Content-Length, so a TCP shutdown ends the answer for TLS as well.
    beast::error_code ignored;
    beast::get_lowest_layer(self->stream_).socket().shutdown(tcp::socket::shutdown_send,
                                                             ignored);
  });
}

// -- ws_session -------------------------------------------------------------------------------

ws_session::ws_session(std::shared_ptr<server_impl> srv, erased_stream stream,
                               std::string_view early)
  : srv_(std::move(srv)), ws_(std::move(stream), early) {
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

void ws_session::close_for_shutdown() {
  asio::post(ws_.get_executor(), [self = shared_from_this()] {
    if (self->finished_ || self->closing_)
      return;
    if (!self->accepted_) {
      // Still upgrading: there is no WebSocket to close yet.
      self->finish(peer_end::removed, "shutting down");
      return;
    }
    if (!self->close_after_write_)
      self->close_after_write_.emplace(close_normal, "shutting down");
    self->write_more();
  });
}

void ws_session::abort() {
  asio::post(ws_.get_executor(),
             [self = shared_from_this()] { self->finish(peer_end::removed, "shutting down"); });
}

void ws_session::on_accept(beast::error_code ec) {
  if (ec) {
    srv_->untrack(this); // Not a valid upgrade; Beast answered it.
    return;
  }
  if (finished_)
    return;
  accepted_ = true;
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
  if (closing_ || finished_)
    return;
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
  auto gate = srv_->gate;
  out_->on_ready([weak, exec, gate] {
    gate->post(exec, [weak] {
      if (auto self = weak.lock())
        self->write_more();
    });
  });
  in_->on_wake(srv_->rt->wake_callback(id_));
  in_->on_release([weak, exec, gate] {
    gate->post(exec, [weak] {
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
  registered_ = true;
  srv_->rt->post(
    [att = std::move(att), self = shared_from_this(), exec, gate](core_state& st) mutable {
      st.add_client(std::move(att));
      gate->post(exec, [self] { self->on_attached(); });
    });
}

void ws_session::on_attached() {
  if (finished_)
    return; // finish() already told the core to remove us again.
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
  // Nothing follows a close frame.
  if (writing_ || closing_ || finished_)
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
  if (item_pos_ == items_.size() && !close_after_write_ && out_) {
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
  if (registered_) {
    if (attached_)
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
  if (srv->opts.web_socket) {
    // The same settings as peering (spec §1): wss:// with mutual TLS whenever the
    // broker.ssl.* options give peering a context, and a broken setup is an error here too.
    error err;
    srv->tls = static_cast<asio::ssl::context*>(net.tls_context(err));
    if (err)
      return err;
  }
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
