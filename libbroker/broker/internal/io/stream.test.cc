// stream::write_now(): a gather buffer of more than IOV_MAX pieces, larger than the
// socket's buffer, reaches the other end complete and in order over loopback TCP.

#include "broker/internal/io/stream.hh"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <climits>
#include <string>
#include <vector>

using namespace broker::internal;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

TEST_CASE("write_now sends more than IOV_MAX pieces in order, resuming when the socket "
          "was full",
          "[stream]") {
  asio::io_context ctx;
  tcp::acceptor acceptor{ctx, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}};
  // Small socket buffers (the accepted socket inherits the acceptor's), so that the
  // socket fills long before the buffer is written.
  acceptor.set_option(asio::socket_base::receive_buffer_size{16 * 1024});
  tcp::socket client{ctx};
  client.open(tcp::v4());
  client.set_option(asio::socket_base::send_buffer_size{16 * 1024});
  client.connect(acceptor.local_endpoint());
  tcp::socket server = acceptor.accept();
  stream out{std::move(client), nullptr};
  REQUIRE_FALSE(out.secure());
  // Small copied headers between large shared payloads: about 4 MB in 3 * IOV_MAX + 17
  // pieces, far more than the socket buffers, so write_now() must stop and resume.
  constexpr size_t n = 3 * IOV_MAX + 17;
  std::vector<std::string> payloads;
  payloads.reserve(n);
  gather_buffer buf;
  std::string expected;
  for (size_t i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      auto header = "<" + std::to_string(i) + ">";
      buf.copy(header);
      expected += header;
    } else {
      payloads.emplace_back(2600, static_cast<char>('a' + i % 26));
      payloads.back() += std::to_string(i);
      buf.ref(payloads.back());
      expected += payloads.back();
    }
  }
  REQUIRE(buf.pieces() == n);
  std::string received;
  std::vector<char> chunk(64 * 1024);
  auto read_some = [&] {
    auto k = server.read_some(asio::buffer(chunk));
    received.append(chunk.data(), k);
  };
  size_t full = 0;
  stream::error_code ec;
  while (!out.write_now(buf, ec)) {
    REQUIRE_FALSE(ec);
    ++full;
    REQUIRE(full < expected.size()); // Each round makes progress.
    read_some();
  }
  while (received.size() < expected.size())
    read_some();
  CHECK(received.size() == expected.size());
  CHECK((received == expected)); // Not decomposed: 4 MB in a failure message helps nobody.
  CHECK(buf.done());
  CHECK(full > 0);
  // At most IOV_MAX pieces per sendmsg(): at least four calls for this many pieces.
  CHECK(out.send_calls() >= (n + IOV_MAX - 1) / IOV_MAX);
  out.close();
}
