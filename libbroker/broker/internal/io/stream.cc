#include "broker/internal/io/stream.hh"

#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <sys/socket.h>

namespace broker::internal {

stream::stream(socket_type sock, boost::asio::ssl::context* tls) : sock_(std::move(sock)) {
  if (tls)
    tls_ = std::make_unique<boost::asio::ssl::stream<socket_type&>>(sock_, *tls);
}

std::string stream::remote_name() const {
  error_code ec;
  auto ep = sock_.remote_endpoint(ec);
  if (ec)
    return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

bool stream::write_now(gather_buffer& buf, error_code& ec) {
  auto fd = sock_.native_handle();
  while (!buf.done()) {
    size_t count = 0;
    auto* iov = buf.iov(count);
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = std::min<size_t>(count, IOV_MAX);
    ++send_calls_;
    auto n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        ec = error_code{errno, boost::system::system_category()};
      return false;
    }
    buf.consume(static_cast<size_t>(n));
  }
  return true;
}

void stream::close() noexcept {
  error_code ignored;
  sock_.shutdown(socket_type::shutdown_both, ignored);
  sock_.close(ignored);
}

} // namespace broker::internal
