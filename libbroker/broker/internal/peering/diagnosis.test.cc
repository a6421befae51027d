#include "broker/internal/peering/diagnosis.hh"

#include <boost/asio/ssl/error.hpp>

#include <catch2/catch.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

using namespace broker;
using namespace broker::internal;

namespace {

/// The message of a framing failure after `bytes` arrived first.
std::string after(const std::string& bytes, bool tls = false) {
  wire::frame_reader reader;
  reader.feed(bytes);
  auto res = reader.next();
  REQUIRE(res.kind == wire::frame_reader::status::failed);
  return framing_failure(reader, res.err, tls);
}

boost::system::error_code ssl_reason(int reason) {
  return {static_cast<int>(ERR_PACK(ERR_LIB_SSL, 0, reason)),
          boost::asio::error::get_ssl_category()};
}

} // namespace

TEST_CASE("a framing failure names TLS and HTTP from the first bytes", "[diagnosis]") {
  auto hello = std::string{"\x16\x03\x01\x00\xf4\x01\x00\x00\xf0\x03\x03", 11};
  CHECK(after(hello) == "the peer speaks TLS, but this node has broker.disable-ssl=true "
                        "(both sides must agree: set broker.disable-ssl the same on both)");
  CHECK(after("HTTP/1.1 400 Bad Request\r\n\r\n")
        == "the peer answered in HTTP (\"HTTP/1.1 400 Bad Request\"): that is an HTTP port "
           "(WebSocket or metrics?), not a peering port");
  CHECK(after("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        == "an HTTP client connected to the peering port (\"GET / HTTP/1.1\"); WebSocket "
           "clients belong on broker.web-socket.port");
  CHECK(after(std::string{"\xff\xff\xff\xff\x01\x02", 6})
        == "framing error: frame of 4294967295 bytes exceeds the limit of 65536 (not "
           "Broker's peering protocol; its first bytes: ff ff ff ff 01 02)");
  // Over TLS, TLS bytes inside are not a settings mismatch.
  CHECK(after(hello, true).find("framing error: frame of 369295616 bytes") == 0);
}

TEST_CASE("a failed TLS handshake explains OpenSSL's reasons for plain peers and HTTP",
          "[diagnosis]") {
  auto plain = tls_failure(ssl_reason(SSL_R_WRONG_VERSION_NUMBER), true);
  CHECK(plain == "the peer does not speak TLS (a plain peer, or no peering port), but this "
                 "node has broker.disable-ssl=false (both sides must agree: set "
                 "broker.disable-ssl the same on both)");
  CHECK(tls_failure(ssl_reason(SSL_R_WRONG_VERSION_NUMBER), false).find("(a plain peer")
        == std::string::npos);
  CHECK(tls_failure(ssl_reason(SSL_R_HTTP_REQUEST), false)
        == "an HTTP client connected to the peering port; WebSocket clients belong on "
           "broker.web-socket.port");
  CHECK(tls_failure(ssl_reason(SSL_R_CERTIFICATE_VERIFY_FAILED), true)
          .find("TLS handshake failed: ")
        == 0);
  CHECK(closed_failure(true).find("does it expect TLS?") != std::string::npos);
  CHECK(closed_failure(false) == "connection closed by peer");
}
