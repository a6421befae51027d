#include "broker/internal/web/http_session.hh"

#include "broker/internal/config/logger.hh"
#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/ops/page.hh"
#include "broker/internal/ops/prometheus.hh"
#include "broker/internal/web/server_impl.hh"
#include "broker/internal/ops/snapshot.hh"
#include "broker/internal/ops/status.hh"
#include "broker/internal/web/ws_session.hh"
#include "broker/internal/security/bearer.hh"
#include "broker/internal/security/connection_access.hh"
#include "broker/internal/security/x509_names.hh"

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/read.hpp>

// SHA-1 and base64 of the accept key from Beast, not OpenSSL: a plain ws:// node then never
// initializes libcrypto, whose first digest faults in about 2 MB of its code and tables.
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/core/detail/sha1.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace beast = boost::beast;
namespace http = beast::http;

namespace broker::internal {

namespace {

constexpr std::string_view component = "web-socket";

/// The only WebSocket path (doc/protocol/websocket.md §2).
constexpr std::string_view ws_path = "/v1/messages/json";

/// The paths of metrics servers.
constexpr std::string_view metrics_path = "/metrics";
constexpr std::string_view status_path = "/v1/status";

/// How long a metrics or status request waits for the stores' numbers before it answers
/// without the missing ones (Prometheus scrapes time out after 10 s by default).
constexpr auto snapshot_deadline = std::chrono::seconds{3};

/// Header blocks up to this size are accepted (doc/protocol/websocket.md §2; Broker: 2 KiB).
constexpr uint32_t max_header_size = 16 * 1024;

/// Plain HTTP requests carry no meaningful body here.
constexpr uint64_t max_request_body = 64 * 1024;

/// RFC 6455 §1.3.
constexpr std::string_view accept_guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

std::string_view reason_phrase(unsigned status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 426:
      return "Upgrade Required";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

/// True if the comma-separated header value `list` contains `token` (case-insensitive).
bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    auto item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
      item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
      item.remove_suffix(1);
    if (item.size() == token.size()
        && std::equal(item.begin(), item.end(), token.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x))
                    == std::tolower(static_cast<unsigned char>(y));
           }))
      return true;
    if (comma == std::string_view::npos)
      break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string_view field(const http::request<http::string_body>& req, http::field name) {
  auto i = req.find(name);
  if (i == req.end())
    return {};
  return {i->value().data(), i->value().size()};
}

} // namespace

std::string check_application_name(std::string_view name) {
  if (name.empty())
    return "X-Application-Name is empty";
  if (name.size() > max_application_name)
    return "X-Application-Name has " + std::to_string(name.size())
           + " characters, more than " + std::to_string(max_application_name);
  for (size_t i = 0; i < name.size(); ++i) {
    auto c = static_cast<unsigned char>(name[i]);
    if (std::isalnum(c) && c < 0x80)
      continue;
    if (std::string_view{"-/_.=:*@"}.find(static_cast<char>(c)) != std::string_view::npos)
      continue;
    char shown[16];
    if (c >= 0x20 && c < 0x7f)
      std::snprintf(shown, sizeof(shown), "'%c'", c);
    else
      std::snprintf(shown, sizeof(shown), "byte 0x%02x", c);
    return "X-Application-Name has " + std::string{shown} + " at position "
           + std::to_string(i + 1)
           + "; allowed are letters, digits and - / _ . = : * @ (as in Zeek)";
  }
  return {};
}

std::string web_socket_accept(std::string_view key) {
  // 16 bytes encode to 24 base64 characters, the last two of them padding.
  if (key.size() != 24 || key.substr(22) != "==")
    return {};
  auto is_base64 = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/';
  };
  if (!std::all_of(key.begin(), key.begin() + 22, is_base64))
    return {};
  beast::detail::sha1_context ctx;
  beast::detail::init(ctx);
  beast::detail::update(ctx, key.data(), key.size());
  beast::detail::update(ctx, accept_guid.data(), accept_guid.size());
  unsigned char digest[beast::detail::sha1_context::digest_size];
  beast::detail::finish(ctx, digest);
  char out[beast::detail::base64::encoded_size(sizeof(digest))];
  auto n = beast::detail::base64::encode(out, digest, sizeof(digest));
  return std::string{out, n};
}

http_session::http_session(std::shared_ptr<server_impl> srv, std::unique_ptr<stream> conn)
  : srv_(std::move(srv)), conn_(std::move(conn)), timer_(conn_->get_executor()) {
}

void http_session::start() {
  // One deadline for the TLS handshake and the request together.
  timer_.expires_after(std::chrono::milliseconds{srv_->opts.handshake_timeout_ms});
  std::weak_ptr<http_session> weak = shared_from_this();
  timer_.async_wait([weak](boost::system::error_code ec) {
    if (auto self = weak.lock(); self && !ec)
      self->conn_->close();
  });
  if (!conn_->secure()) {
    read_request();
    return;
  }
  check_plain_http();
}

void http_session::check_plain_http() {
  // Peek at the first byte without taking it: a TLS client starts with a handshake record
  // (0x16), a plain HTTP client with the letters of its method.
  conn_->socket().async_wait(
    boost::asio::ip::tcp::socket::wait_read,
    [self = shared_from_this()](boost::system::error_code ec) {
      if (ec) {
        self->conn_->close();
        return;
      }
      unsigned char first = 0;
      boost::system::error_code peek_ec;
      auto n = self->conn_->socket().receive(boost::asio::buffer(&first, 1),
                                             boost::asio::socket_base::message_peek, peek_ec);
      if (peek_ec || n == 0) {
        self->conn_->close();
        return;
      }
      if (std::isalpha(first)) {
        self->srv_->reject(client_reject::tls);
        self->srv_->io.get_logger().write(log_level::info, component,
                                          "plain HTTP from " + self->conn_->remote_name()
                                            + " on a TLS port; answered 400");
        self->respond_plain(400, "This port speaks TLS: connect with wss:// (or https://), "
                                 "not ws:// or http://.\n");
        return;
      }
      self->tls_handshake();
    });
}

void http_session::tls_handshake() {
  conn_->async_handshake(false, [self = shared_from_this()](boost::system::error_code ec) {
    if (ec) {
      // No client certificate, one from another CA, a client that speaks no TLS, ...
      self->srv_->reject(client_reject::tls);
      self->srv_->io.get_logger().write(log_level::info, component,
                                        "TLS handshake with " + self->conn_->remote_name()
                                          + " failed: " + ec.message());
      self->timer_.cancel();
      self->conn_->close();
      return;
    }
    self->read_request();
  });
}

void http_session::read_request() {
  parser_.emplace();
  parser_->header_limit(max_header_size);
  parser_->body_limit(max_request_body);
  http::async_read(*conn_, buf_, *parser_,
                   [self = shared_from_this()](boost::system::error_code ec, size_t) {
                     self->on_request(ec);
                   });
}

void http_session::on_request(boost::system::error_code ec) {
  if (ec) {
    if (ec == http::error::header_limit)
      respond(431, "text/plain", "Header exceeds maximum size.");
    else if (ec != http::error::end_of_stream && ec != boost::asio::error::operation_aborted
             && ec != boost::asio::error::eof)
      respond(400, "text/plain", "Malformed request: " + ec.message());
    else
      conn_->close();
    return;
  }
  req_ = parser_->release();
  auto path = path_of(std::string_view{req_.target().data(), req_.target().size()});
  const auto& opts = srv_->opts;
  if (opts.web_socket && path == ws_path) {
    upgrade();
    return;
  }
  if (opts.metrics) {
    answer_metrics_server(path);
    return;
  }
  respond(400, "text/plain",
          "caf::sec::invalid_argument(\"invalid path; try /v1/messages/json\")");
}

void http_session::answer_metrics_server(std::string_view path) {
  const auto& opts = srv_->opts;
  auto target = std::string_view{req_.target().data(), req_.target().size()};
  auto query = target.size() > path.size() ? target.substr(path.size() + 1) : std::string_view{};
  bool known = path == metrics_path
               || (opts.status_page && (path == status_path || find_page_file(path)));
  if (!known) {
    respond(404, "text/plain",
            opts.status_page ? "not found; try /metrics, /v1/status or /" : "not found; try /metrics");
    return;
  }
  if (req_.method() != http::verb::get) {
    respond(405, "text/plain", "use GET", "Allow: GET\r\n");
    return;
  }
  if (auto* file = find_page_file(path)) {
    respond(200, std::string{file->content_type}, std::string{file->body},
            "Cache-Control: no-cache\r\n");
    return;
  }
  bool status = path == status_path;
  status_query sq;
  if (status) {
    if (auto err = parse_status_query(query, sq); !err.empty()) {
      respond(400, "text/plain", err);
      return;
    }
  }
  // The numbers live in the core, the network side and the stores: collect them, answer on
  // our strand. The callbacks keep the session alive while they run.
  auto exec = conn_->get_executor();
  auto self = shared_from_this();
  auto request = collect_snapshot(*srv_->rt, opts.probe, status ? sq.limit : 0,
                                  [self, exec, status, sq](node_snapshot snap) mutable {
    auto srv = self->srv_;
    srv->post(exec, [self, status, sq, snap = std::move(snap)]() mutable {
      self->timer_.cancel();
      if (!snap.core_answered) {
        self->respond(503, "text/plain", "the core did not answer; shutting down or overloaded");
        return;
      }
      if (status) {
        auto rates = self->srv_->rates.update(snap);
        self->respond(200, "application/json", render_status(snap, rates, sq),
                      "Cache-Control: no-cache\r\n");
        return;
      }
      prometheus_options popts{self->srv_->opts.endpoint_name,
                               self->srv_->opts.handler_series_limit};
      self->respond(200, "text/plain; version=0.0.4", render_prometheus(snap, popts));
    });
  });
  // A store busy with a long backlog answers late: after the deadline, answer without it.
  timer_.expires_after(snapshot_deadline);
  timer_.async_wait([request](boost::system::error_code ec) {
    if (ec)
      return;
    if (auto r = request.lock())
      r->finish_now();
  });
}

void http_session::upgrade() {
  if (req_.method() != http::verb::get || !has_token(field(req_, http::field::upgrade), "websocket")
      || !has_token(field(req_, http::field::connection), "upgrade")) {
    srv_->reject(client_reject::handshake);
    respond(400, "text/plain", "Expected a WebSocket handshake.");
    return;
  }
  auto accept = web_socket_accept(field(req_, http::field::sec_websocket_key));
  if (accept.empty()) {
    srv_->reject(client_reject::handshake);
    respond(400, "text/plain", "Mandatory field Sec-WebSocket-Key missing or invalid.");
    return;
  }
  if (field(req_, http::field::sec_websocket_version) != "13") {
    srv_->reject(client_reject::handshake);
    respond(426, "text/plain", "Unsupported WebSocket version (need 13).",
            "Sec-WebSocket-Version: 13\r\n");
    return;
  }
  if (srv_->clients.load() >= srv_->opts.max_clients) {
    srv_->reject(client_reject::max_clients);
    respond(503, "text/plain",
            "too many WebSocket clients (maximum " + std::to_string(srv_->opts.max_clients)
              + ")");
    return;
  }
  auto access = admit();
  if (srv_->opts.access && !access)
    return; // Answered.
  timer_.cancel();
  // Exactly Broker's lines (doc/protocol/websocket.md §2): no subprotocol, no extensions, no Server
  // header.
  std::string response = "HTTP/1.1 101 Switching Protocols\r\n"
                         "Upgrade: websocket\r\n"
                         "Connection: Upgrade\r\n"
                         "Sec-WebSocket-Accept: ";
  response += accept;
  response += "\r\n\r\n";
  // A client may send its first frames right behind the request; the parser has them.
  auto early = beast::buffers_to_string(buf_.data());
  // Zeek's clients name themselves (zeek-websocket-rs always does); Broker's do not.
  std::string app;
  std::string app_error;
  if (auto i = req_.find("X-Application-Name"); i != req_.end()) {
    app.assign(i->value().data(), i->value().size());
    app_error = check_application_name(app);
  }
  auto session = std::make_shared<ws_session>(srv_, std::move(conn_), std::move(response),
                                              early, std::move(app), std::move(access));
  if (!srv_->track(session)) {
    session->abort(); // The server stopped while this request was on its way.
    return;
  }
  session->start(app_error);
}

std::unique_ptr<security::connection_access> http_session::admit() {
  auto& access = srv_->opts.access;
  if (!access)
    return nullptr;
  // A bearer token (doc/security.md, "Identities"), else the client's certificate on
  // wss://, else nothing: the anonymous identity.
  auto target = std::string_view{req_.target().data(), req_.target().size()};
  auto bearer = security::find_bearer_token(field(req_, http::field::authorization), target);
  if (!bearer.error.empty()) {
    srv_->reject(client_reject::authentication);
    respond(400, "text/plain", bearer.error + "\n");
    return nullptr;
  }
  auto cred = bearer.source != security::token_source::none
                ? security::credential::from_token(bearer.token)
                : security::tls_credential(conn_->native_tls());
  auto how = cred.kind;
  boost::system::error_code ec;
  auto ep = conn_->socket().remote_endpoint(ec);
  auto res = access->admit(std::move(cred), ec ? std::string{"?"} : ep.address().to_string(),
                           ec ? 0 : ep.port());
  if (res.admitted)
    return std::make_unique<security::connection_access>(access, std::move(*res.admitted));
  srv_->reject(client_reject::authentication);
  if (res.throttled)
    respond(429, "text/plain", res.reason + "\n",
            "Retry-After: " + std::to_string(res.retry_after) + "\r\n");
  else if (how == security::mechanism::token)
    respond(401, "text/plain", res.reason + "\n",
            "WWW-Authenticate: Bearer error=\"invalid_token\"\r\n");
  else
    respond(403, "text/plain", res.reason + "\n");
  return nullptr;
}

void http_session::respond_plain(unsigned status, std::string body) {
  timer_.cancel();
  out_ = "HTTP/1.1 " + std::to_string(status) + " " + std::string{reason_phrase(status)}
         + "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size())
         + "\r\nConnection: close\r\n\r\n" + body;
  boost::asio::async_write(conn_->socket(), boost::asio::buffer(out_),
                           [self = shared_from_this()](boost::system::error_code, size_t) {
                             boost::system::error_code ignored;
                             self->conn_->socket().shutdown(
                               boost::asio::ip::tcp::socket::shutdown_send, ignored);
                           });
}

void http_session::respond(unsigned status, std::string content_type, std::string body,
                           std::string extra_headers) {
  timer_.cancel();
  out_ = "HTTP/1.1 " + std::to_string(status) + " " + std::string{reason_phrase(status)}
         + "\r\nContent-Type: " + content_type
         + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers
         + "Connection: close\r\n\r\n" + body;
  conn_->async_write_all(out_, [self = shared_from_this()](boost::system::error_code, size_t) {
    // The body has a Content-Length, so closing our side ends the answer for TLS as well.
    boost::system::error_code ignored;
    self->conn_->socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  });
}

} // namespace broker::internal
