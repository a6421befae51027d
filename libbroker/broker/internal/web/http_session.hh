#pragma once

// http_session: one accepted connection until it is either answered as plain HTTP or
// upgraded to a WebSocket (doc/protocol/websocket.md §2).
//
// Owner: runs on its connection's strand; pending operations keep it alive.
//
// Flow:
//   1. With TLS, the TLS handshake; one deadline covers it and the request. A client that
//      speaks plain HTTP to a TLS port (its first byte is a letter, not a TLS record) gets
//      a plain-text 400 that says the port speaks TLS.
//   2. One request, read with Beast's HTTP parser (headers up to 16 KiB, 431 beyond).
//   3. /v1/messages/json (WebSocket servers): validate the upgrade (GET, Upgrade and
//      Connection headers, a Sec-WebSocket-Key of 16 base64-encoded bytes, version 13),
//      build the 101 answer and hand the stream, with any bytes read past the request, to a
//      ws_session, with the client's X-Application-Name. An invalid name still gets the 101
//      (as from Zeek's server), then an error frame and close 1008 from the ws_session.
//      With access control, the client's bearer token (Authorization header or ?token=),
//      else its certificate (wss://), else nothing (anonymous) is admitted first
//      (security/runtime.hh): a malformed token gets 400, one that matches no identity
//      401, an unknown certificate 403, an address that failed too often 429; each is
//      counted and logged (rate-limited) with the remote address. Metrics servers: /metrics (Prometheus text), /v1/status (JSON) and the
//      files of the web view (page.hh) at /; the numbers come from a node_snapshot
//      (snapshot.hh), collected without blocking this strand. Anything else: Broker's 400
//      (WebSocket servers), or 404.

#include "broker/internal/io/stream.hh"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <string>

namespace broker::internal {

class server_impl;

namespace security {
class connection_access;
} // namespace security

class http_session : public std::enable_shared_from_this<http_session> {
public:
  http_session(std::shared_ptr<server_impl> srv, std::unique_ptr<stream> conn);

  void start();

private:
  using request = boost::beast::http::request<boost::beast::http::string_body>;

  void check_plain_http();
  void tls_handshake();
  void read_request();
  void on_request(boost::system::error_code ec);
  void upgrade();
  /// Access control at the upgrade: the client's access, or null and an answer sent
  /// (400, 401, 403, 429). Null without access control, too.
  std::unique_ptr<security::connection_access> admit();
  void answer_metrics_server(std::string_view path);
  void respond(unsigned status, std::string content_type, std::string body,
               std::string extra_headers = {});
  /// Answers on the raw socket, around TLS (plain HTTP on a TLS port).
  void respond_plain(unsigned status, std::string body);

  std::shared_ptr<server_impl> srv_;
  std::unique_ptr<stream> conn_;
  boost::asio::steady_timer timer_;
  boost::beast::flat_buffer buf_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  request req_;
  std::string out_;
};

/// Longest X-Application-Name we accept (it becomes a metric label).
inline constexpr size_t max_application_name = 256;

/// Checks an X-Application-Name value as Zeek's server does: one or more of the characters
/// `[-/_.=:*@a-zA-Z0-9]` (we also cap the length at max_application_name). Returns an
/// empty string if `name` is valid, otherwise what is wrong with it.
std::string check_application_name(std::string_view name);

/// The Sec-WebSocket-Accept value for `key` (RFC 6455 §4.2.2), or an empty string if `key`
/// is not the base64 encoding of exactly 16 bytes.
std::string web_socket_accept(std::string_view key);

} // namespace broker::internal
