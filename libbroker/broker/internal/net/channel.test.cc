#include "broker/internal/net/channel.hh"

#include "broker/data.hh"
#include "broker/message.hh"

#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace broker;
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

/// What a queue_channel turns on, as a peering does.
struct queue_options {
  std::chrono::microseconds delay{0}; ///< Write coalescing (0: off).
  size_t limit = 1;                   ///< The burst that is never held.
  bool through = false;               ///< Write-through.
};

/// A channel with a send queue of messages, each written as its topic and a newline. Every
/// line read is a frame the peer sent (heard()).
class queue_channel : public queued_channel<data_message> {
public:
  queue_channel(tcp::socket sock, queue_options opts)
    : queued_channel(std::make_unique<stream>(std::move(sock), nullptr)) {
    if (opts.delay.count() > 0)
      enable_hold(opts.delay, opts.limit);
    if (opts.through)
      enable_write_through();
    set_queue(std::make_shared<basic_send_queue<data_message>>(256, overflow_policy::drop_newest));
  }

  void start() {
    std::weak_ptr<channel> weak = shared_from_this();
    out_->on_ready([weak] {
      if (auto c = weak.lock())
        c->schedule_write();
    });
    read_more();
    write_more(); // Drains the empty queue: arms write-through.
  }

  void stop() {
    auto guard = lock_writes();
    mark_closed();
    conn_->close();
  }

  /// Pushes a message whose line is `text` (any thread; the queue may call schedule_write()).
  void push(const std::string& text) {
    data_message x{text, data{1}};
    out_->push(&x, nullptr, 1);
  }

  std::vector<std::string> lines; ///< On the I/O thread.
  std::atomic<int> writes{0};     ///< Data writes (fill() and fill_through() that had data).
  std::atomic<bool> wrote_elsewhere{false}; ///< A data write ran off the I/O thread.
  std::thread::id io_thread;      ///< Set by start().

private:
  size_t decode(char* data, size_t size) override {
    size_t pos = 0;
    for (;;) {
      auto end = std::string_view{data + pos, size - pos}.find('\n');
      if (end == std::string_view::npos)
        return pos;
      lines.emplace_back(data + pos, end);
      pos += end + 1;
      heard();
    }
  }

  void on_read_error(const boost::system::error_code&) override {
    stop();
  }

  bool fill(gather_buffer& out) override {
    out.copy(ctrl_);
    ctrl_.clear();
    take(out);
    return !out.empty();
  }

  take_result take(gather_buffer& out) {
    std::optional<filter_type> announcement;
    if (!out_->take(batch_, announcement))
      return take_result::closed;
    if (batch_.empty())
      return take_result::idle;
    for (auto& x : batch_) {
      out.copy(x.topic());
      out.copy("\n");
    }
    wrote_data();
    ++writes;
    if (std::this_thread::get_id() != io_thread)
      wrote_elsewhere = true;
    return take_result::ready;
  }

  bool may_write_through() override { return true; }

  take_result fill_through(gather_buffer& out) override { return take(out); }

  void on_write_error(const boost::system::error_code&) override {}

  void detach() override {}
};

/// A channel on one end of a loopback connection, the other end a plain socket, and one
/// thread running the io_context.
template <class Channel>
struct basic_fixture {
  asio::io_context ioc;
  /// Keeps run() going while the channel waits for nothing (e.g. behind a barrier).
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  tcp::socket client{ioc};
  std::shared_ptr<Channel> ch;
  std::thread runner;

  template <class... Ts>
  explicit basic_fixture(Ts&&... xs) {
    tcp::acceptor acc{ioc, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}};
    client.connect(acc.local_endpoint());
    tcp::socket server{asio::make_strand(ioc)};
    acc.accept(server);
    ch = std::make_shared<Channel>(std::move(server), std::forward<Ts>(xs)...);
    runner = std::thread{[this] { ioc.run(); }};
    on_io([this] {
      set_io_thread(*ch);
      ch->start();
      return 0;
    });
  }

  static void set_io_thread(line_channel&) {}
  static void set_io_thread(queue_channel& c) { c.io_thread = std::this_thread::get_id(); }

  ~basic_fixture() {
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
    return wait_count([this] { return ch->lines.size(); }, n);
  }

  /// Waits until `f()` (run on the I/O thread) reaches `n`.
  template <class F>
  bool wait_count(F f, size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (on_io(f) >= n)
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

  /// Whether `n` bytes arrive at the client within `ms` milliseconds (appended to `got`).
  bool arrives(size_t n, int ms, std::string& got) {
    client.non_blocking(true);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{ms};
    char buf[256];
    while (got.size() < n && std::chrono::steady_clock::now() < deadline) {
      boost::system::error_code ec;
      auto k = client.read_some(asio::buffer(buf), ec);
      if (ec == asio::error::would_block) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
        continue;
      }
      if (ec)
        break;
      got.append(buf, k);
    }
    client.non_blocking(false);
    return got.size() >= n;
  }

  /// Keeps the I/O thread busy until the returned promise is set (the strand cannot run).
  std::shared_ptr<std::promise<void>> block_io() {
    auto release = std::make_shared<std::promise<void>>();
    std::promise<void> entered;
    auto running = entered.get_future();
    asio::post(ioc, [release, &entered] {
      entered.set_value();
      release->get_future().wait();
    });
    running.wait();
    return release;
  }
};

using fixture = basic_fixture<line_channel>;
using queue_fixture = basic_fixture<queue_channel>;

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

// -- write-through and coalescing (what a peering turns on) ---------------------------------

TEST_CASE("write-through: the routing thread writes while the strand cannot run",
          "[channel]") {
  queue_fixture f{queue_options{{}, 1, true}};
  auto release = f.block_io();
  f.ch->push("ping");
  std::string got;
  CHECK(f.arrives(5, 1000, got)); // Written by this thread: the I/O thread is busy.
  CHECK(got == "ping\n");
  CHECK(f.ch->writes_through() == 1u);
  CHECK(f.ch->wrote_elsewhere);
  release->set_value();
  // Again, and in order, while the strand is free.
  f.ch->push("a");
  f.ch->push("b");
  got.clear();
  CHECK(f.arrives(4, 1000, got));
  CHECK(got == "a\nb\n");
  CHECK(f.ch->writes_through() == 3u);
}

TEST_CASE("without write-through a message waits for the strand", "[channel]") {
  queue_fixture f{queue_options{}};
  auto release = f.block_io();
  f.ch->push("ping");
  std::string got;
  CHECK_FALSE(f.arrives(5, 50, got));
  release->set_value();
  CHECK(f.arrives(5, 1000, got));
  CHECK(got == "ping\n");
  CHECK(f.ch->writes_through() == 0u);
  CHECK_FALSE(f.ch->wrote_elsewhere);
}

TEST_CASE("coalescing holds a stream, and lets an exchange and a burst go at once",
          "[channel]") {
  using namespace std::chrono_literals;
  queue_fixture f{queue_options{std::chrono::microseconds{1000ms}, 4, false}};
  std::string got;
  // The first write goes at once (nothing written yet); the next is held for the delay.
  f.ch->push("a");
  CHECK(f.arrives(2, 1000, got));
  f.ch->push("b");
  CHECK_FALSE(f.arrives(4, 100, got));
  f.ch->push("c");
  CHECK(f.arrives(6, 3000, got));
  CHECK(got == "a\nb\nc\n");
  CHECK(f.ch->writes == 2); // b and c went out together.
  // An exchange: the peer spoke since our last write, so the answer is not held.
  f.send("hello\n");
  REQUIRE(f.wait_count([&] { return f.ch->lines.size(); }, 1));
  got.clear();
  f.ch->push("answer");
  CHECK(f.arrives(7, 500, got));
  // A held write goes once the peer speaks.
  got.clear();
  f.ch->push("held");
  CHECK_FALSE(f.arrives(5, 50, got));
  f.send("again\n");
  CHECK(f.arrives(5, 500, got));
  // A burst of `limit` messages goes at once, without waiting for the delay.
  got.clear();
  for (auto x : {"1", "2", "3", "4"})
    f.ch->push(x);
  CHECK(f.arrives(8, 500, got));
  CHECK(got == "1\n2\n3\n4\n");
}

TEST_CASE("write-through leaves a held stream to the strand", "[channel]") {
  using namespace std::chrono_literals;
  queue_fixture f{queue_options{std::chrono::microseconds{1000ms}, 4, true}};
  std::string got;
  f.ch->push("a"); // Nothing written yet: not held, written through.
  CHECK(f.arrives(2, 1000, got));
  CHECK(f.ch->writes_through() == 1u);
  f.ch->push("b"); // A stream: the strand holds it, nobody writes it through.
  CHECK_FALSE(f.arrives(4, 100, got));
  CHECK(f.arrives(4, 3000, got));
  CHECK(got == "a\nb\n");
  CHECK(f.ch->writes_through() == 1u);
  // The peer spoke: the answer is written through again.
  f.send("ping\n");
  REQUIRE(f.wait_count([&] { return f.ch->lines.size(); }, 1));
  got.clear();
  f.ch->push("pong");
  CHECK(f.arrives(5, 1000, got));
  CHECK(f.ch->writes_through() == 2u);
}
