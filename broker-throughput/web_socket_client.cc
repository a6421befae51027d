#include "web_socket_client.hh"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <optional>

namespace broker_throughput {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

/// The one path of the API (doc/protocol/websocket.md §2).
constexpr std::string_view api_path = "/v1/messages/json";

/// Start of the ack frame (§4.2) and of error frames (§8); the server's output is compact
/// with a fixed key order, so a prefix identifies the frame.
constexpr std::string_view ack_prefix = "{\"type\":\"ack\"";

/// How long a blocking send runs before it asks its stop predicate again.
constexpr auto stop_check_interval = std::chrono::milliseconds{50};

/// Bound on the closing handshake.
constexpr auto close_timeout = std::chrono::seconds{2};

broker::error unavailable(const std::string& url, const beast::error_code& ec) {
  return broker::error{broker::ec::peer_unavailable, url + ": " + ec.message()};
}

std::string_view text_of(const beast::flat_buffer& buf) {
  auto data = buf.data();
  return {static_cast<const char*>(data.data()), data.size()};
}

} // namespace

struct web_socket_client::impl {
  net::io_context ioc;
  websocket::stream<beast::tcp_stream> ws{ioc};
  beast::flat_buffer buf;
  std::string url;
  bool reading = false;          ///< An async_read is pending.
  beast::error_code read_error;  ///< Set when the read loop stopped.
  const message_handler* on_message = nullptr;
  bool closed = false;
  bool broken = false; ///< No closing handshake is possible any more.

  /// Runs the io_context until `done` or `timeout`; then cancels what is pending.
  /// Returns false on timeout.
  bool run_until(const bool& done, std::chrono::milliseconds timeout) {
    ioc.restart();
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done && !ioc.stopped() && std::chrono::steady_clock::now() < deadline)
      ioc.run_one_until(deadline);
    if (done)
      return true;
    beast::get_lowest_layer(ws).cancel();
    ioc.restart();
    ioc.run();
    return false;
  }

  void arm_read() {
    reading = true;
    ws.async_read(buf, [this](beast::error_code ec, size_t) {
      reading = false;
      if (ec) {
        read_error = ec;
        return;
      }
      if (on_message != nullptr)
        (*on_message)(text_of(buf));
      buf.consume(buf.size());
      arm_read();
    });
  }
};

web_socket_client::web_socket_client(std::unique_ptr<impl> ptr) : impl_(std::move(ptr)) {
}

web_socket_client::~web_socket_client() {
  close();
}

broker::expected<std::unique_ptr<web_socket_client>>
web_socket_client::connect(const std::string& host, uint16_t port, std::string_view filter,
                           std::chrono::milliseconds timeout) {
  auto st = std::make_unique<impl>();
  auto authority = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":"
                   + std::to_string(port);
  st->url = "ws://" + authority + std::string{api_path};
  beast::error_code ec;
  tcp::resolver resolver{st->ioc};
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec)
    return unavailable(st->url, ec);
  auto& stream = beast::get_lowest_layer(st->ws);
  // tcp_stream's expiry covers every async step of the opening handshake.
  stream.expires_after(timeout);
  bool done = false;
  stream.async_connect(endpoints, [&](beast::error_code err, const tcp::endpoint&) {
    ec = err;
    if (err)
      return done = true, void();
    stream.socket().set_option(tcp::no_delay{true});
    st->ws.async_handshake(authority, std::string{api_path}, [&](beast::error_code err) {
      ec = err;
      if (err)
        return done = true, void();
      st->ws.text(true);
      st->ws.async_write(net::buffer(filter.data(), filter.size()),
                         [&](beast::error_code err, size_t) {
                           ec = err;
                           if (err)
                             return done = true, void();
                           st->ws.async_read(st->buf, [&](beast::error_code err, size_t) {
                             ec = err;
                             done = true;
                           });
                         });
    });
  });
  st->ioc.run();
  if (!done || ec)
    return unavailable(st->url, ec ? ec : beast::error::timeout);
  auto answer = std::string{text_of(st->buf)};
  st->buf.consume(st->buf.size());
  if (answer.compare(0, ack_prefix.size(), ack_prefix) != 0)
    return broker::error{broker::ec::invalid_message,
                         st->url + ": expected an ack, got " + answer};
  stream.expires_never();
  st->ws.auto_fragment(false);
  return std::unique_ptr<web_socket_client>{new web_socket_client{std::move(st)}};
}

const std::string& web_socket_client::url() const noexcept {
  return impl_->url;
}

broker::error web_socket_client::send(const std::vector<std::string_view>& texts,
                                      const stop_predicate& stop) {
  auto& st = *impl_;
  size_t next = 0;
  bool done = texts.empty();
  beast::error_code ec;
  std::function<void()> write_next = [&] {
    st.ws.async_write(net::buffer(texts[next].data(), texts[next].size()),
                      [&](beast::error_code err, size_t) {
                        if (err) {
                          ec = err;
                          done = true;
                        } else if (++next == texts.size()) {
                          done = true;
                        } else {
                          write_next();
                        }
                      });
  };
  if (!done)
    write_next();
  st.ioc.restart();
  while (!done) {
    // run_for returns at the interval while the write is still waiting for the socket.
    st.ioc.run_for(stop_check_interval);
    if (!done && stop && stop()) {
      beast::get_lowest_layer(st.ws).cancel();
      st.ioc.restart();
      st.ioc.run();
      st.broken = true; // A write cut off mid-frame leaves the stream unusable.
      return {};
    }
  }
  if (ec) {
    st.broken = true;
    return unavailable(st.url, ec);
  }
  return {};
}

broker::error web_socket_client::receive_for(std::chrono::milliseconds timeout,
                                             const message_handler& on_message) {
  auto& st = *impl_;
  if (st.read_error)
    return unavailable(st.url, st.read_error);
  st.on_message = &on_message;
  if (!st.reading)
    st.arm_read();
  st.ioc.restart();
  st.ioc.run_for(timeout);
  st.on_message = nullptr;
  if (st.read_error)
    return unavailable(st.url, st.read_error);
  return {};
}

void web_socket_client::close() {
  if (!impl_ || impl_->closed)
    return;
  auto& st = *impl_;
  st.closed = true;
  beast::error_code ec;
  if (st.ws.is_open() && !st.broken && !st.read_error) {
    bool done = false;
    beast::get_lowest_layer(st.ws).expires_after(close_timeout);
    st.ws.async_close(websocket::close_code::normal, [&](beast::error_code) { done = true; });
    st.on_message = nullptr;
    st.run_until(done, close_timeout);
  }
  beast::get_lowest_layer(st.ws).socket().close(ec);
}

} // namespace broker_throughput
