#pragma once

// stream: one connection's byte stream, plain TCP or TLS, for peerings and for the
// HTTP/WebSocket server alike.
//
// Owner: one connection, on its strand (the socket's executor); no locking. Every
// completion handler runs on that strand.
//
// Reading: async_read_some() on either transport.
// Writing, the hot path: a connection collects everything it has to send in a
// gather_buffer and writes it with write_now(). On plain TCP that is a non-blocking
// sendmsg() of up to IOV_MAX pieces at a time, straight from the shared message bytes, on
// the calling thread: no operation object, no completion handler, no copy. Only when the
// socket is full does the connection wait with async_wait_writable() and call write_now()
// again. TLS has to encrypt a copy anyway, so for TLS the connection linearizes the buffer
// and uses async_write_all().
//
// The Beast-style async_read_some/async_write_some templates let Beast's HTTP parser run
// on the same stream during the upgrade request.

#include "broker/internal/io/gather.hh"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace broker::internal {

class stream {
public:
  using socket_type = boost::asio::ip::tcp::socket;
  using executor_type = socket_type::executor_type;
  using error_code = boost::system::error_code;

  /// Wraps a connected socket; TLS with `tls` (not yet handshaken) unless it is null.
  /// Pre: `tls` outlives the stream.
  stream(socket_type sock, boost::asio::ssl::context* tls);

  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  bool secure() const noexcept { return tls_ != nullptr; }

  /// OpenSSL's connection (null for plain TCP): for the peer's certificate after the
  /// handshake (security/x509_names.hh).
  ssl_st* native_tls() noexcept { return tls_ ? tls_->native_handle() : nullptr; }

  socket_type& socket() noexcept { return sock_; }

  executor_type get_executor() noexcept { return sock_.get_executor(); }

  /// "address:port" of the remote side, or "?" if unknown.
  std::string remote_name() const;

  /// The TLS handshake in the given role; completes at once for plain TCP.
  template <class Handler>
  void async_handshake(bool client, Handler&& handler) {
    using boost::asio::ssl::stream_base;
    if (tls_)
      tls_->async_handshake(client ? stream_base::client : stream_base::server,
                            std::forward<Handler>(handler));
    else
      boost::asio::post(sock_.get_executor(),
                        [h = std::forward<Handler>(handler)]() mutable { h(error_code{}); });
  }

  /// Reads what is available (at least one byte) into `buffers`.
  template <class MutableBuffers, class Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    if (tls_)
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    else
      sock_.async_read_some(buffers, std::forward<Handler>(handler));
  }

  /// For Beast's HTTP writer (the upgrade response and plain HTTP answers).
  template <class ConstBuffers, class Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    if (tls_)
      tls_->async_write_some(buffers, std::forward<Handler>(handler));
    else
      sock_.async_write_some(buffers, std::forward<Handler>(handler));
  }

  /// Plain TCP only: writes as much of `buf` as the socket takes now. Returns true when
  /// all of it is written; false when the socket is full (wait for writability) or on an
  /// error (then `ec` is set).
  bool write_now(gather_buffer& buf, error_code& ec);

  /// Plain TCP only: calls `handler(ec)` once the socket can take more bytes.
  template <class Handler>
  void async_wait_writable(Handler&& handler) {
    sock_.async_wait(socket_type::wait_write, std::forward<Handler>(handler));
  }

  /// Writes all of `bytes` (which must stay alive until `handler(ec, n)` runs).
  template <class Handler>
  void async_write_all(const std::string& bytes, Handler&& handler) {
    if (tls_)
      boost::asio::async_write(*tls_, boost::asio::buffer(bytes),
                               std::forward<Handler>(handler));
    else
      boost::asio::async_write(sock_, boost::asio::buffer(bytes),
                               std::forward<Handler>(handler));
  }

  /// Sends TLS close_notify (without waiting for the peer's); nothing for plain TCP.
  template <class Handler>
  void async_shutdown(Handler&& handler) {
    if (tls_)
      tls_->async_shutdown(std::forward<Handler>(handler));
    else
      boost::asio::post(sock_.get_executor(),
                        [h = std::forward<Handler>(handler)]() mutable { h(error_code{}); });
  }

  /// Closes the socket (pending operations complete with operation_aborted).
  void close() noexcept;

  /// Number of send system calls so far (gathered writes count once per call).
  uint64_t send_calls() const noexcept { return send_calls_; }

private:
  socket_type sock_;
  /// Allocated for TLS only: a plain connection does not carry the TLS stream's ~360 bytes.
  std::unique_ptr<boost::asio::ssl::stream<socket_type&>> tls_;
  uint64_t send_calls_ = 0;
};

} // namespace broker::internal
