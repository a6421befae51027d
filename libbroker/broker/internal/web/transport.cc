#include "broker/internal/web/transport.hh"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include <type_traits>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;

namespace broker::internal {

namespace {

using plain_stream = beast::tcp_stream;
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

template <class Stream>
class transport_for final : public transport {
public:
  static constexpr bool is_tls = std::is_same_v<Stream, tls_stream>;

  explicit transport_for(Stream stream) : stream_(std::move(stream)) {}

  beast::tcp_stream& tcp() noexcept override { return beast::get_lowest_layer(stream_); }

  bool secure() const noexcept override { return is_tls; }

  void handshake(done_handler handler) override {
    if constexpr (is_tls)
      stream_.async_handshake(ssl::stream_base::server, on_strand(std::move(handler)));
    else
      asio::post(stream_.get_executor(),
                 [h = std::move(handler)]() mutable { std::move(h)(beast::error_code{}); });
  }

  void read_some(asio::mutable_buffer buffer, io_handler handler) override {
    stream_.async_read_some(buffer, on_strand(std::move(handler)));
  }

  void write_some(const std::vector<asio::const_buffer>& buffers,
                  io_handler handler) override {
    // For TLS, Beast's ssl_stream coalesces the buffers into one record.
    stream_.async_write_some(buffers, on_strand(std::move(handler)));
  }

  void teardown(beast::role_type role, done_handler handler) override {
    using beast::websocket::async_teardown;
    async_teardown(role, stream_, on_strand(std::move(handler)));
  }

private:
  /// Every handler of a session runs on the connection's strand, the stream's executor.
  /// Saying so explicitly also spares Asio 1.81's any_completion_executor, which cannot
  /// be required to be non-blocking (Beast's teardown posts its completion).
  template <class Handler>
  auto on_strand(Handler handler) {
    return asio::bind_executor(stream_.get_executor(), std::move(handler));
  }

  Stream stream_;
};

} // namespace

std::unique_ptr<transport> make_transport(asio::ip::tcp::socket sock, ssl::context* tls) {
  if (tls)
    return std::make_unique<transport_for<tls_stream>>(tls_stream{std::move(sock), *tls});
  return std::make_unique<transport_for<plain_stream>>(plain_stream{std::move(sock)});
}

} // namespace broker::internal
