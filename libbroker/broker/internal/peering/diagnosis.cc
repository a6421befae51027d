#include "broker/internal/peering/diagnosis.hh"

#include "broker/internal/codec/hex.hh"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace broker::internal {

namespace asio = boost::asio;

std::string framing_failure(const wire::frame_reader& reader, const error& err, bool tls) {
  auto text = "framing error: " + err.message();
  if (!reader.at_start())
    return text;
  auto bytes = reader.unread();
  switch (wire::recognize_foreign(bytes)) {
    case wire::foreign_protocol::tls:
      if (tls)
        break;
      return "the peer speaks TLS, but this node has broker.disable-ssl=true (both sides "
             "must agree: set broker.disable-ssl the same on both)";
    case wire::foreign_protocol::http_response:
      return "the peer answered in HTTP (\"" + wire::first_line(bytes)
             + "\"): that is an HTTP port (WebSocket or metrics?), not a peering port";
    case wire::foreign_protocol::http_request:
      return "an HTTP client connected to the peering port (\"" + wire::first_line(bytes)
             + "\"); WebSocket clients belong on broker.web-socket.port";
    case wire::foreign_protocol::unknown:
      break;
  }
  text += " (not Broker's peering protocol; its first bytes:";
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    text += ' ';
    text += hex_digits[c >> 4];
    text += hex_digits[c & 0x0f];
  }
  return text + ")";
}

std::string tls_failure(const boost::system::error_code& ec, bool dialer) {
  if (ec.category() == asio::error::get_ssl_category()) {
    switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
      case SSL_R_WRONG_VERSION_NUMBER:
      case SSL_R_UNKNOWN_PROTOCOL:
        return std::string{"the peer does not speak TLS"}
               + (dialer ? " (a plain peer, or no peering port)" : "")
               + ", but this node has broker.disable-ssl=false (both sides must agree: "
                 "set broker.disable-ssl the same on both)";
      case SSL_R_HTTP_REQUEST:
      case SSL_R_HTTPS_PROXY_REQUEST:
        return "an HTTP client connected to the peering port; WebSocket clients belong on "
               "broker.web-socket.port";
      default:
        break;
    }
  }
  return "TLS handshake failed: " + ec.message();
}

std::string closed_failure(bool silent_plain_dial) {
  if (silent_plain_dial)
    return "connection closed by peer before it sent a byte: does it expect TLS? This node "
           "has broker.disable-ssl=true (both sides must agree)";
  return "connection closed by peer";
}

} // namespace broker::internal
