// The driver of fanout_client.hh: connections, phases, pacing and flow control.

#include "fanout_client.hh"

#include "bench_util.hh"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fanout {

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;

/// Read buffer of a subscriber: large for few connections (long bursts per read), small
/// for many (memory), never below what one frame needs.
size_t read_buffer_size(size_t subscribers) {
  return std::clamp<size_t>((64u << 20) / std::max<size_t>(subscribers, 1), 4096, 65536);
}

/// The publisher stops filling its output buffer at this size until the write completes.
constexpr size_t publisher_buffer_limit = 64 * 1024;

class driver;

/// One TCP connection with its codec; reports parsed frames to the driver.
struct connection final : codec_sink {
  connection(driver& d, net::io_context& ioc, size_t index, role r, std::unique_ptr<codec> c,
             size_t buffer_size)
    : owner(d), index(index), what(r), sock(ioc), proto(std::move(c)), buf(buffer_size) {}

  void ready() override;
  void message(std::string_view payload) override;
  void fail(std::string reason) override;

  driver& owner;
  size_t index;
  role what;
  tcp::socket sock;
  std::unique_ptr<codec> proto;
  std::vector<char> buf; ///< Bytes read and not yet parsed: [0, filled).
  size_t filled = 0;
  std::string out;       ///< Appended while a write is in progress.
  std::string writing;   ///< The buffer of the write in progress.
  bool write_pending = false;
  bool is_ready = false;
  uint64_t last_seq = 0; ///< Highest sequence number received.
};

enum class phase { connecting, latency, latency_drain, throughput, throughput_drain, done };

const char* to_string(phase p) {
  switch (p) {
    case phase::connecting: return "connecting";
    case phase::latency: return "latency";
    case phase::latency_drain: return "latency drain";
    case phase::throughput: return "throughput";
    case phase::throughput_drain: return "throughput drain";
    case phase::done: return "done";
  }
  return "?";
}

class driver {
public:
  driver(const client_options& o, const char* system, const codec_factory& make)
    : opts_(o), endpoint_(net::ip::make_address(o.host), o.port), tick_(ioc_),
      deadline_(ioc_) {
    result_.system = system;
    result_.mode = o.variant;
    result_.receivers = o.subscribers;
    result_.latency_rate = o.latency_rate;
    result_.window = o.window;
    window_ = o.window;
    step_ = std::max<size_t>(1, window_ / 2);
    auto bufsize = read_buffer_size(o.subscribers);
    pub_ = std::make_unique<connection>(*this, ioc_, o.subscribers, role::publisher,
                                        make(role::publisher, o), 65536);
    subs_.reserve(o.subscribers);
    for (size_t i = 0; i < o.subscribers; ++i)
      subs_.push_back(std::make_unique<connection>(*this, ioc_, i, role::subscriber,
                                                   make(role::subscriber, o), bufsize));
  }

  int run() {
    cpu_at_start_ = bench::cpu_seconds();
    deadline_.expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(opts_.timeout)));
    deadline_.async_wait([this](error_code ec) {
      if (!ec)
        fail("timeout after " + std::to_string(opts_.timeout) + " s in phase "
             + to_string(phase_) + ": " + std::to_string(ready_) + " connections ready, "
             + std::to_string(reached_) + " of " + std::to_string(subs_.size())
             + " subscribers at sequence " + std::to_string(checkpoint_));
    });
    connect_started_ = now_ns();
    connect(*pub_);
    ioc_.run();
    return exit_code_;
  }

  void on_ready(connection& c) {
    c.is_ready = true;
    ++ready_;
    if (c.what == role::subscriber)
      --connecting_;
    connect_more();
    if (ready_ == subs_.size() + 1) {
      std::fprintf(stderr, "# %zu subscribers connected in %.2f s\n", subs_.size(),
                   static_cast<double>(now_ns() - connect_started_) / 1e9);
      start_latency_phase();
    }
  }

  void on_message(connection& c, std::string_view payload) {
    stamp s;
    if (!parse_payload(payload, s)) {
      c.fail("unexpected payload: " + std::string{payload.substr(0, 80)});
      return;
    }
    if (c.what != role::subscriber)
      return;
    auto now = now_ns();
    if (s.seq <= c.last_seq) {
      c.fail("sequence " + std::to_string(s.seq) + " after " + std::to_string(c.last_seq));
      return;
    }
    result_.lost += s.seq - c.last_seq - 1;
    auto previous = c.last_seq;
    c.last_seq = s.seq;
    auto delay = now > s.sent_ns ? now - s.sent_ns : 0;
    if (s.what == kind::latency) {
      result_.latency.record(delay);
    } else if (s.what == kind::throughput) {
      result_.loaded.record(delay);
      ++result_.delivered;
      last_delivery_ns_ = now;
    }
    if (previous < checkpoint_ && s.seq >= checkpoint_ && ++reached_ == subs_.size())
      on_checkpoint();
  }

  void on_writable() {
    if (phase_ == phase::throughput)
      pump();
  }

  void fail(const std::string& what) {
    if (phase_ == phase::done)
      return;
    phase_ = phase::done;
    std::fprintf(stderr, "error: %s\n", what.c_str());
    std::printf("FAILED system=%s mode=%s N=%zu reason=%s\n", result_.system.c_str(),
                result_.mode.c_str(), subs_.size(), what.c_str());
    std::fflush(stdout);
    exit_code_ = 1;
    ioc_.stop();
  }

  void flush(connection& c) {
    if (c.write_pending || c.out.empty() || phase_ == phase::done)
      return;
    c.writing.swap(c.out);
    c.out.clear();
    c.write_pending = true;
    net::async_write(c.sock, net::buffer(c.writing), [this, &c](error_code ec, size_t) {
      c.write_pending = false;
      c.writing.clear();
      if (ec) {
        c.fail("write: " + ec.message());
        return;
      }
      if (c.what == role::publisher)
        on_writable();
      flush(c);
    });
  }

private:
  void connect(connection& c) {
    c.sock.async_connect(endpoint_, [this, &c](error_code ec) {
      if (ec) {
        c.fail("connect: " + ec.message());
        return;
      }
      c.sock.set_option(tcp::no_delay{true});
      c.proto->start(c.out);
      flush(c);
      read(c);
    });
  }

  /// Starts handshakes until connect_parallel are in progress (publisher first).
  void connect_more() {
    if (!pub_->is_ready)
      return;
    while (next_ < subs_.size() && connecting_ < opts_.connect_parallel) {
      ++connecting_;
      connect(*subs_[next_++]);
    }
  }

  void read(connection& c) {
    c.sock.async_read_some(net::buffer(c.buf.data() + c.filled, c.buf.size() - c.filled),
                           [this, &c](error_code ec, size_t n) {
                             if (phase_ == phase::done)
                               return;
                             if (ec) {
                               c.fail("read: " + ec.message());
                               return;
                             }
                             c.filled += n;
                             auto used = c.proto->feed(c.buf.data(), c.filled, c, c.out);
                             if (phase_ == phase::done)
                               return;
                             if (used > 0 && used < c.filled)
                               std::memmove(c.buf.data(), c.buf.data() + used, c.filled - used);
                             c.filled -= used;
                             if (c.filled == c.buf.size()) // One frame larger than the buffer.
                               c.buf.resize(c.buf.size() * 2);
                             flush(c);
                             read(c);
                           });
  }

  void publish(kind k, bool ack = false) {
    char payload[payload_size];
    format_payload(payload, stamp{now_ns(), ++seq_, k, ack});
    pub_->proto->publish(std::string_view{payload, payload_size}, pub_->out);
  }

  void start_latency_phase() {
    auto rate = opts_.latency_rate;
    latency_total_ = static_cast<uint64_t>(rate * opts_.latency_seconds + 0.5);
    if (latency_total_ == 0) {
      start_throughput_phase();
      return;
    }
    phase_ = phase::latency;
    interval_ = std::chrono::nanoseconds{static_cast<int64_t>(1e9 / rate)};
    latency_start_ = std::chrono::steady_clock::now();
    tick_.expires_at(latency_start_);
    tick_.async_wait([this](error_code ec) { on_tick(ec); });
  }

  void on_tick(error_code ec) {
    if (ec || phase_ != phase::latency)
      return;
    publish(kind::latency);
    flush(*pub_);
    if (++latency_sent_ == latency_total_) {
      phase_ = phase::latency_drain;
      set_checkpoint(seq_);
      return;
    }
    tick_.expires_at(latency_start_ + interval_ * static_cast<int64_t>(latency_sent_));
    tick_.async_wait([this](error_code ec) { on_tick(ec); });
  }

  void start_throughput_phase() {
    phase_ = phase::throughput;
    base_ = seq_;
    first_throughput_seq_ = seq_ + 1;
    throughput_start_ns_ = now_ns();
    throughput_end_ns_ = throughput_start_ns_ + static_cast<uint64_t>(opts_.seconds * 1e9);
    if (subs_.empty()) {
      pump_ingest();
      return;
    }
    set_checkpoint(base_ + step_);
    if (phase_ == phase::throughput)
      pump();
  }

  /// Ingest (no subscribers): publishes as fast as the server reads, i.e. while the
  /// socket takes more; the sent count at the end includes what the kernel still buffers.
  void pump_ingest() {
    auto& out = pub_->out;
    while (out.size() < publisher_buffer_limit && now_ns() < throughput_end_ns_)
      for (size_t i = 0; i < opts_.burst; ++i)
        publish(kind::throughput);
    flush(*pub_);
    if (now_ns() >= throughput_end_ns_ && phase_ == phase::throughput) {
      result_.sent = seq_ - first_throughput_seq_ + 1;
      last_delivery_ns_ = now_ns();
      finish();
    }
  }

  /// Publishes what flow control allows: up to `window_` beyond the slowest subscriber.
  void pump() {
    if (subs_.empty()) {
      pump_ingest();
      return;
    }
    auto& out = pub_->out;
    // Partial bursts too: the next checkpoint (base_ + step_) must always get published.
    while (out.size() < publisher_buffer_limit && seq_ < base_ + window_) {
      if (now_ns() >= throughput_end_ns_)
        break;
      auto n = std::min<uint64_t>(opts_.burst, base_ + window_ - seq_);
      for (uint64_t i = 0; i < n; ++i)
        publish(kind::throughput);
    }
    flush(*pub_);
    if (now_ns() >= throughput_end_ns_ && phase_ == phase::throughput) {
      phase_ = phase::throughput_drain;
      result_.sent = seq_ - first_throughput_seq_ + 1;
      set_checkpoint(seq_);
    }
  }

  /// Waits for every subscriber to reach `seq`; calls on_checkpoint() when they have.
  void set_checkpoint(uint64_t seq) {
    checkpoint_ = seq;
    reached_ = 0;
    for (auto& s : subs_)
      if (s->last_seq >= seq)
        ++reached_;
    if (reached_ == subs_.size())
      on_checkpoint();
  }

  void on_checkpoint() {
    switch (phase_) {
      case phase::latency_drain:
        start_throughput_phase();
        break;
      case phase::throughput:
        base_ = checkpoint_;
        // The next checkpoint may already be reached; set_checkpoint() recurses at most
        // until it is ahead of what was published.
        set_checkpoint(base_ + step_);
        if (phase_ == phase::throughput)
          pump();
        break;
      case phase::throughput_drain:
        finish();
        break;
      default:
        break;
    }
  }

  void finish() {
    phase_ = phase::done;
    result_.seconds = static_cast<double>(last_delivery_ns_ - throughput_start_ns_) / 1e9;
    result_.cpu_seconds = bench::cpu_seconds() - cpu_at_start_;
    result_.complete = result_.lost == 0 && result_.delivered == result_.sent * subs_.size();
    if (subs_.empty())
      result_.delivered = result_.sent; // Ingest: the rate is what the server took in.
    result_.print();
    exit_code_ = result_.complete ? 0 : 1;
    ioc_.stop();
  }

  client_options opts_;
  net::io_context ioc_{1};
  tcp::endpoint endpoint_;
  std::unique_ptr<connection> pub_;
  std::vector<std::unique_ptr<connection>> subs_;
  phase phase_ = phase::connecting;
  size_t next_ = 0;       ///< Next subscriber to connect.
  size_t connecting_ = 0; ///< Subscriber handshakes in progress.
  size_t ready_ = 0;      ///< Connections ready, publisher included.
  uint64_t seq_ = 0;      ///< Last sequence number published.
  uint64_t checkpoint_ = 0;
  size_t reached_ = 0;    ///< Subscribers whose last_seq >= checkpoint_.
  uint64_t base_ = 0;     ///< Every subscriber has everything up to here.
  size_t window_ = 0;
  size_t step_ = 1;
  uint64_t latency_total_ = 0;
  uint64_t latency_sent_ = 0;
  std::chrono::steady_clock::time_point latency_start_;
  std::chrono::nanoseconds interval_{0};
  uint64_t first_throughput_seq_ = 0;
  uint64_t throughput_start_ns_ = 0;
  uint64_t throughput_end_ns_ = 0;
  uint64_t last_delivery_ns_ = 0;
  uint64_t connect_started_ = 0;
  double cpu_at_start_ = 0;
  net::steady_timer tick_;
  net::steady_timer deadline_;
  run_result result_;
  int exit_code_ = 1;
};

void connection::ready() {
  if (!is_ready)
    owner.on_ready(*this);
}

void connection::message(std::string_view payload) {
  owner.on_message(*this, payload);
}

void connection::fail(std::string reason) {
  owner.fail((what == role::publisher ? std::string{"publisher: "}
                                      : "subscriber " + std::to_string(index) + ": ")
             + reason);
}

const char* usage_text =
  "usage: %s --port P [--host H] [--subscribers N] [--seconds S] [--latency-rate R]\n"
  "          [--latency-seconds S] [--window W] [--burst B] [--connect-parallel C]\n"
  "          [--timeout S] [--variant V]\n"
  "One publisher and N subscriber connections to the server at H:P (default 127.0.0.1)\n"
  "measure fan-out: a latency phase at R messages/s (default: 1000, at most 20000/N),\n"
  "then S seconds (default 2) as fast as flow control allows, with at most W messages\n"
  "(default: 256, at most 256000/N, at least 16) in flight per subscriber. Prints one\n"
  "RESULT line; exit 1 on errors, lost messages or timeout (default 120 s).\n"
  "With --subscribers 0 (ingest) there is no latency phase, and the publisher sends as\n"
  "fast as the server reads for S seconds; the rate counts what the socket took.\n";

} // namespace

int run_client(int argc, char** argv, const char* system,
               const std::vector<std::string>& variants, const char* variant_help,
               codec_factory make_codec) {
  bench::raise_fd_limit();
  client_options o;
  o.variant = variants.front();
  auto usage = [&](int code) {
    std::fprintf(code == 0 ? stdout : stderr, usage_text, argv[0]);
    std::fprintf(code == 0 ? stdout : stderr, "%s", variant_help);
    std::exit(code);
  };
  auto num = [&](int& i) {
    if (i + 1 >= argc)
      usage(2);
    char* end = nullptr;
    auto x = std::strtod(argv[++i], &end);
    if (*end != '\0' || x < 0)
      usage(2);
    return x;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h")
      usage(0);
    else if (arg == "--host" && i + 1 < argc)
      o.host = argv[++i];
    else if (arg == "--port")
      o.port = static_cast<uint16_t>(num(i));
    else if (arg == "--subscribers")
      o.subscribers = static_cast<size_t>(num(i));
    else if (arg == "--seconds")
      o.seconds = num(i);
    else if (arg == "--latency-rate")
      o.latency_rate = num(i);
    else if (arg == "--latency-seconds")
      o.latency_seconds = num(i);
    else if (arg == "--window")
      o.window = static_cast<size_t>(num(i));
    else if (arg == "--burst")
      o.burst = static_cast<size_t>(num(i));
    else if (arg == "--connect-parallel")
      o.connect_parallel = static_cast<size_t>(num(i));
    else if (arg == "--timeout")
      o.timeout = num(i);
    else if (arg == "--variant" && i + 1 < argc)
      o.variant = argv[++i];
    else
      usage(2);
  }
  if (o.port == 0 || o.burst == 0 || o.connect_parallel == 0
      || std::find(variants.begin(), variants.end(), o.variant) == variants.end())
    usage(2);
  if (o.latency_rate == 0)
    o.latency_rate = o.subscribers == 0 ? 0 : default_latency_rate(o.subscribers);
  if (o.window == 0)
    o.window = default_window(o.subscribers);
  o.burst = std::min(o.burst, o.window);
  driver d{o, system, make_codec};
  return d.run();
}

} // namespace fanout
