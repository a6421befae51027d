#pragma once

// http_transport: the byte stream below the HTTP/WebSocket server, plain TCP (ws://) or TLS
// (wss://), behind one type.
//
// Beast's HTTP and WebSocket code is costly to compile. Instantiated over erased_stream, it
// exists once; only transport_for<> in http_transport.cc knows the two concrete streams.
// The price is one virtual call and one type-erased handler per socket operation.
//
// Owner: one session, on its strand (the socket's executor); no locking.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace boost::asio::ssl {
class context;
} // namespace boost::asio::ssl

namespace broker::internal {

/// A connection's byte stream, plain or TLS, behind virtual calls. Every completion runs
/// on the connection's strand.
class transport {
public:
  using io_handler =
    boost::asio::any_completion_handler<void(boost::system::error_code, size_t)>;
  using done_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;

  virtual ~transport() = default;

  /// The TCP stream at the bottom (for timeouts, addresses and closing).
  virtual boost::beast::tcp_stream& tcp() noexcept = 0;

  /// True for TLS, which needs handshake() before anything else.
  virtual bool secure() const noexcept = 0;

  /// The server side of the TLS handshake (completes at once for plain TCP).
  virtual void handshake(done_handler handler) = 0;

  virtual void read_some(boost::asio::mutable_buffer buffer, io_handler handler) = 0;

  /// Pre: `buffers` stays valid until `handler` runs.
  virtual void write_some(const std::vector<boost::asio::const_buffer>& buffers,
                          io_handler handler) = 0;

  /// Ends the connection after a WebSocket close (Beast's teardown for the stream type:
  /// TLS close_notify first for wss://).
  virtual void teardown(boost::beast::role_type role, done_handler handler) = 0;
};

/// Wraps an accepted socket: TLS with `tls` (not yet handshaken), plain TCP if null.
/// Pre: `tls` outlives the transport.
std::unique_ptr<transport> make_transport(boost::asio::ip::tcp::socket sock,
                                          boost::asio::ssl::context* tls);

/// An AsyncStream over a transport, for Beast's HTTP and WebSocket code.
class erased_stream {
public:
  using executor_type = boost::asio::any_io_executor;
  using next_layer_type = boost::beast::tcp_stream;

  explicit erased_stream(std::unique_ptr<transport> impl) : impl_(std::move(impl)) {}

  executor_type get_executor() noexcept { return impl_->tcp().get_executor(); }

  /// The TCP stream (the TLS layer in between is reachable only through impl()), so that
  /// beast::get_lowest_layer() finds the socket.
  boost::beast::tcp_stream& next_layer() noexcept { return impl_->tcp(); }

  transport& impl() noexcept { return *impl_; }

  template <class MutableBuffers, class ReadHandler>
  auto async_read_some(const MutableBuffers& buffers, ReadHandler&& handler) {
    // Reading into the first non-empty buffer only is a valid read_some.
    boost::asio::mutable_buffer first;
    for (auto i = boost::asio::buffer_sequence_begin(buffers);
         i != boost::asio::buffer_sequence_end(buffers); ++i)
      if (boost::asio::mutable_buffer b{*i}; b.size() > 0) {
        first = b;
        break;
      }
    return boost::asio::async_initiate<ReadHandler, void(boost::system::error_code, size_t)>(
      [this](auto h, boost::asio::mutable_buffer b) { impl_->read_some(b, std::move(h)); },
      handler, first);
  }

  template <class ConstBuffers, class WriteHandler>
  auto async_write_some(const ConstBuffers& buffers, WriteHandler&& handler) {
    // Beast never has two writes on one stream in flight, so one member vector suffices.
    wbufs_.clear();
    for (auto i = boost::asio::buffer_sequence_begin(buffers);
         i != boost::asio::buffer_sequence_end(buffers); ++i)
      if (boost::asio::const_buffer b{*i}; b.size() > 0)
        wbufs_.push_back(b);
    return boost::asio::async_initiate<WriteHandler, void(boost::system::error_code, size_t)>(
      [this](auto h) { impl_->write_some(wbufs_, std::move(h)); }, handler);
  }

private:
  std::unique_ptr<transport> impl_;
  std::vector<boost::asio::const_buffer> wbufs_;
};

/// Beast's teardown hook for erased_stream (found by argument-dependent lookup).
template <class TeardownHandler>
void async_teardown(boost::beast::role_type role, erased_stream& stream,
                    TeardownHandler&& handler) {
  stream.impl().teardown(role,
                         transport::done_handler{std::forward<TeardownHandler>(handler)});
}

} // namespace broker::internal
