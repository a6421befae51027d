#include "broker/internal/net/channel.hh"

#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace broker::internal;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

/// A channel speaking lines: every '\n'-terminated line is a frame. A line "barrier" raises
/// the barrier; every line is echoed back (through ctrl_, the way control frames go).
class line_channel : public channel {
public:
  explicit line_channel(tcp::socket sock)
    : channel(std::make_unique<stream>(std::move(sock), nullptr)) {}

  void start() { read_more(); }
  void lift() { core_caught_up(); }
  void stop() {
    mark_closed();
    conn_->close();
  }

  std::vector<std::string> lines;
  std::string error;
  size_t max_carry = 0; ///< Largest carry buffer seen while decoding.

  size_t carry_capacity() const noexcept { return rx_.capacity(); }
  size_t write_capacity() const noexcept { return buffer_bytes() - rx_.capacity(); }

private:
  size_t decode(char* data, size_t size) override {
    max_carry = std::max(max_carry, rx_.capacity());
    size_t pos = 0;
    while (!barrier_) {
      auto end = std::string_view{data + pos, size - pos}.find('\n');
      if (end == std::string_view::npos)
        break;
      std::string line{data + pos, end};
      pos += end + 1;
      lines.push_back(line);
      if (line.size() < 100)
        ctrl_ += line + "\n";
      if (line == "barrier")
        raise_barrier();
    }
    return pos;
  }

  void on_read_error(const boost::system::error_code& ec) override {
    error = ec.message();
    mark_closed();
    conn_->close();
  }

  bool fill(gather_buffer& out) override {
    out.copy(ctrl_);
    ctrl_.clear();
    return !out.empty();
  }

  void on_write_error(const boost::system::error_code& ec) override { error = ec.message(); }

  void detach() override {}
};

/// A line_channel on one end of a loopback connection, the other end a plain socket, and
/// one thread running the io_context.
struct fixture {
  asio::io_context ioc;
  /// Keeps run() going while the channel waits for nothing (e.g. behind a barrier).
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  tcp::socket client{ioc};
  std::shared_ptr<line_channel> ch;
  std::thread runner;

  fixture() {
    tcp::acceptor acc{ioc, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}};
    client.connect(acc.local_endpoint());
    tcp::socket server{asio::make_strand(ioc)};
    acc.accept(server);
    ch = std::make_shared<line_channel>(std::move(server));
    asio::post(ioc, [c = ch] { c->start(); });
    runner = std::thread{[this] { ioc.run(); }};
  }

  ~fixture() {
    // Closing ends the channel's pending operations; then the io_context runs out of work.
    asio::post(ioc, [c = ch] { c->stop(); });
    ch.reset();
    boost::system::error_code ignored;
    client.close(ignored);
    work.reset();
    runner.join();
  }

  void send(std::string_view bytes) {
    asio::write(client, asio::buffer(bytes.data(), bytes.size()));
  }

  /// Runs `f` on the io_context's thread and returns its result.
  template <class F>
  auto on_io(F f) {
    std::promise<decltype(f())> p;
    auto fut = p.get_future();
    asio::post(ioc, [&] { p.set_value(f()); });
    return fut.get();
  }

  bool wait_lines(size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (on_io([this] { return ch->lines.size(); }) >= n)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    return false;
  }

  std::string read_echo(size_t n) {
    std::string out(n, '\0');
    asio::read(client, asio::buffer(out));
    return out;
  }
};

} // namespace

TEST_CASE("a partial frame is carried to the next read", "[channel]") {
  fixture f;
  f.send("hel");
  std::this_thread::sleep_for(std::chrono::milliseconds{20});
  f.send("lo\nwor");
  std::this_thread::sleep_for(std::chrono::milliseconds{20});
  f.send("ld\n");
  REQUIRE(f.wait_lines(2));
  CHECK(f.on_io([&] { return f.ch->lines; }) == std::vector<std::string>{"hello", "world"});
  CHECK(f.read_echo(12) == "hello\nworld\n");
  // Only the partial frames were kept, in a small buffer.
  CHECK(f.on_io([&] { return f.ch->max_carry; }) <= carry_buffer::reserve);
}

TEST_CASE("an idle channel holds no read buffer and small write buffers", "[channel]") {
  fixture f;
  std::string many;
  for (int i = 0; i < 2000; ++i)
    many += "line " + std::to_string(i) + "\n";
  f.send(many);
  REQUIRE(f.wait_lines(2000));
  f.read_echo(many.size());
  // The write loop drained: what the echo needed is given back.
  for (int i = 0; i < 100 && f.on_io([&] { return f.ch->write_capacity(); }) > 4096; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  CHECK(f.on_io([&] { return f.ch->carry_capacity(); }) == 0);
  CHECK(f.on_io([&] { return f.ch->write_capacity(); }) <= 4096);
}

TEST_CASE("a frame larger than the thread's buffer is assembled, then released", "[channel]") {
  fixture f;
  std::string big(3 * channel::thread_buffer_size, 'x');
  f.send(big + "\nshort\n");
  REQUIRE(f.wait_lines(2));
  CHECK(f.on_io([&] { return f.ch->lines[0].size(); }) == big.size());
  CHECK(f.on_io([&] { return f.ch->lines[1]; }) == "short");
  CHECK(f.on_io([&] { return f.ch->max_carry; }) >= big.size());
  CHECK(f.on_io([&] { return f.ch->carry_capacity(); }) == 0);
}

TEST_CASE("frames behind a barrier wait until the core caught up", "[channel]") {
  fixture f;
  f.send("a\nbarrier\nb\nc\n");
  REQUIRE(f.wait_lines(2));
  std::this_thread::sleep_for(std::chrono::milliseconds{30});
  CHECK(f.on_io([&] { return f.ch->lines.size(); }) == 2u);
  f.send("d\n"); // Not read while the barrier stands.
  std::this_thread::sleep_for(std::chrono::milliseconds{30});
  CHECK(f.on_io([&] { return f.ch->lines.size(); }) == 2u);
  f.ch->lift();
  REQUIRE(f.wait_lines(5));
  CHECK(f.on_io([&] { return f.ch->lines; })
        == std::vector<std::string>{"a", "barrier", "b", "c", "d"});
}

TEST_CASE("the peer's close reaches on_read_error as end of file", "[channel]") {
  fixture f;
  f.send("x\n");
  REQUIRE(f.wait_lines(1));
  f.client.shutdown(tcp::socket::shutdown_send);
  for (int i = 0; i < 200 && f.on_io([&] { return f.ch->error; }).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  CHECK(f.on_io([&] { return f.ch->error; }) == asio::error::make_error_code(asio::error::eof).message());
}
