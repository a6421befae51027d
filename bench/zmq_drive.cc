// zmq-drive: Zeek nodes on libzmq that load a ZeroMQ forwarder (libzmq's proxy, or
// broker-node): 1 publisher -> N subscribers, 4-frame events as Zeek's ZeroMQ backend
// sends them (topic, node id, "broker-bin-v1", payload). The driver of
// bench/zmq_forwarder.py (bench/README.md), the same program against every forwarder.
//
// Sockets as Zeek sets them (doc/protocol/zeromq.md §1): the publisher's XPUB with
// XPUB_VERBOSE, XPUB_NODROP, SNDHWM 1000, connected to the forwarder's XSUB port; each
// subscriber an XSUB with RCVHWM 1000, connected to its XPUB port, subscribed to
// "zeek/bench/" in message form. Ready when the publisher's XPUB has reported each
// subscriber's own ready topic, subscribed after the prefix (so the forwarder has them all).
//
// Threads: the main thread publishes and measures; one receiver thread polls the N XSUBs
// and counts per subscriber; libzmq's I/O threads (--io-threads). Flow control: at most
// --window messages beyond the slowest subscriber that is read (so a forwarder with bounded
// queues does not drop because the driver lags); a blocked send (NODROP at the high-water
// mark) is retried every 100 ms until the phase ends.
//
// Modes:
//   fanout  latency phase (a fixed rate of --latency-rate deliveries/s, every delivery
//           timed from the send time in the payload's first 8 bytes), then a throughput
//           phase of --seconds: delivered events/s, and the CPU (all threads,
//           /proc/<pid>/task/*/schedstat) of the forwarder (--forwarder-pid) and of this
//           driver over the same window;
//   stall   a throughput phase with every subscriber read (A), then subscriber 0 is no
//           longer read; after --fill seconds a second phase (B): share = the others'
//           rate in B / their rate in A.
// Output: one line "RESULT key=value ..." on stdout.

#include <zmq.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

const char topic[] = "zeek/bench/ev";
const char prefix[] = "zeek/bench/";
const char ready_prefix[] = "zeek/bench-ready/";
const char node_id[] = "bench-publisher";
const char format[] = "broker-bin-v1";
constexpr size_t latency_buckets = 1000000; // 1 µs each, up to 1 s

struct options {
  std::string host = "127.0.0.1";
  int xsub_port = 0;
  int xpub_port = 0;
  size_t subscribers = 8;
  size_t size = 64;
  std::string mode = "fanout";
  double seconds = 2;
  double latency_seconds = 1;
  double latency_rate = 20000; // deliveries per second
  double fill = 2;
  size_t window = 500;
  int io_threads = 1;
  int forwarder_pid = 0;
  double timeout = 30;
  std::string curve_server_key; ///< Z85; set: every socket is a CURVE client of it
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "zmq-drive: %s: %s\n", what.c_str(), zmq_strerror(zmq_errno()));
  std::exit(1);
}

/// `seconds` as the clock's duration.
clock_type::duration secs(double seconds) {
  return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
}

uint64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           clock_type::now().time_since_epoch())
    .count();
}

/// CPU time of every thread of `pid` (0: this process) in seconds, from schedstat.
double cpu_seconds(int pid) {
  std::string dir = pid ? "/proc/" + std::to_string(pid) + "/task" : "/proc/self/task";
  double total = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.')
        continue;
      std::string path = dir + "/" + e->d_name + "/schedstat";
      if (FILE* f = std::fopen(path.c_str(), "r")) {
        unsigned long long ns = 0;
        if (std::fscanf(f, "%llu", &ns) == 1)
          total += ns / 1e9;
        std::fclose(f);
      }
    }
    closedir(d);
  }
  return total;
}

struct shared {
  size_t n = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> received;
  std::atomic<bool> stop{false};
  std::atomic<bool> record{false};
  std::atomic<int> stalled{-1};
  std::vector<uint64_t> latency = std::vector<uint64_t>(latency_buckets, 0);
  std::atomic<uint64_t> malformed{0};
};

void receive_loop(shared* s, std::vector<void*> subs) {
  std::vector<zmq_pollitem_t> items;
  std::vector<size_t> index;
  int built_for = -2;
  zmq_msg_t part;
  zmq_msg_init(&part);
  while (!s->stop.load(std::memory_order_relaxed)) {
    int stalled = s->stalled.load(std::memory_order_relaxed);
    if (stalled != built_for) {
      items.clear();
      index.clear();
      for (size_t i = 0; i < subs.size(); ++i)
        if (static_cast<int>(i) != stalled) {
          items.push_back({subs[i], 0, ZMQ_POLLIN, 0});
          index.push_back(i);
        }
      built_for = stalled;
    }
    if (zmq_poll(items.data(), static_cast<int>(items.size()), 10) <= 0)
      continue;
    bool record = s->record.load(std::memory_order_relaxed);
    for (size_t k = 0; k < items.size(); ++k) {
      if (!(items[k].revents & ZMQ_POLLIN))
        continue;
      void* sock = items[k].socket;
      uint64_t got = 0;
      for (int m = 0; m < 256; ++m) {
        if (zmq_msg_recv(&part, sock, ZMQ_DONTWAIT) < 0)
          break;
        int parts = 1;
        while (zmq_msg_more(&part)) {
          zmq_msg_recv(&part, sock, 0);
          ++parts;
        }
        // `part` is now the payload.
        if (parts != 4 || zmq_msg_size(&part) < 8) {
          s->malformed.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (record) {
          uint64_t sent;
          std::memcpy(&sent, zmq_msg_data(&part), 8);
          uint64_t us = (now_ns() - sent) / 1000;
          ++s->latency[std::min<uint64_t>(us, latency_buckets - 1)];
        }
        ++got;
      }
      if (got)
        s->received[index[k]].fetch_add(got, std::memory_order_relaxed);
    }
  }
  zmq_msg_close(&part);
}

struct driver {
  options opt;
  void* ctx = nullptr;
  void* pub = nullptr;
  std::vector<void*> subs;
  shared st;
  std::vector<char> payload;
  uint64_t sent = 0;
  uint64_t blocked_retries = 0;

  uint64_t total(bool skip_stalled) const {
    uint64_t sum = 0;
    int stalled = st.stalled.load();
    for (size_t i = 0; i < st.n; ++i)
      if (!skip_stalled || static_cast<int>(i) != stalled)
        sum += st.received[i].load(std::memory_order_relaxed);
    return sum;
  }

  uint64_t slowest() const {
    uint64_t low = UINT64_MAX;
    int stalled = st.stalled.load();
    for (size_t i = 0; i < st.n; ++i)
      if (static_cast<int>(i) != stalled)
        low = std::min<uint64_t>(low, st.received[i].load(std::memory_order_relaxed));
    return low == UINT64_MAX ? sent : low;
  }

  void setup() {
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
      lim.rlim_cur = lim.rlim_max;
      setrlimit(RLIMIT_NOFILE, &lim);
    }
    ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_IO_THREADS, opt.io_threads);
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, static_cast<int>(opt.subscribers + 64));
    pub = zmq_socket(ctx, ZMQ_XPUB);
    int one = 1, hwm = 1000, zero = 0, timeout_ms = 100;
    // CURVE: one client key pair for every socket (as Zeek's nodes share one).
    char curve_pub[41] = {0}, curve_sec[41] = {0};
    if (!opt.curve_server_key.empty() && zmq_curve_keypair(curve_pub, curve_sec) != 0)
      die("zmq_curve_keypair");
    auto curve = [&](void* s) {
      if (opt.curve_server_key.empty())
        return;
      if (zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, opt.curve_server_key.c_str(), 40) != 0
          || zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, curve_pub, 40) != 0
          || zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, curve_sec, 40) != 0)
        die("CURVE client options");
    };
    curve(pub);
    zmq_setsockopt(pub, ZMQ_XPUB_VERBOSE, &one, sizeof(one));
    zmq_setsockopt(pub, ZMQ_XPUB_NODROP, &one, sizeof(one));
    zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof(hwm));
    zmq_setsockopt(pub, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(pub, ZMQ_SNDTIMEO, &timeout_ms, sizeof(timeout_ms));
    std::string base = "tcp://" + opt.host + ":";
    if (zmq_connect(pub, (base + std::to_string(opt.xsub_port)).c_str()) != 0)
      die("connect the publisher");
    // Each subscriber subscribes to the benchmark prefix, then to a ready topic of its own
    // on the same connection: once the publisher's XPUB reports every ready topic, the
    // forwarder has every subscription to the prefix. (Counting reports of the prefix
    // itself is not enough: an XSUB replays each distinct prefix once to a connection that
    // attaches late, so duplicates can be folded into one.)
    std::string sub_msg = std::string("\x01") + prefix;
    for (size_t i = 0; i < opt.subscribers; ++i) {
      void* s = zmq_socket(ctx, ZMQ_XSUB);
      if (!s)
        die("socket " + std::to_string(i));
      zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof(hwm));
      zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
      curve(s);
      if (zmq_connect(s, (base + std::to_string(opt.xpub_port)).c_str()) != 0)
        die("connect subscriber " + std::to_string(i));
      std::string ready = std::string("\x01") + ready_prefix + std::to_string(i) + "/";
      zmq_send(s, sub_msg.data(), sub_msg.size(), 0);
      zmq_send(s, ready.data(), ready.size(), 0);
      subs.push_back(s);
    }
    std::vector<bool> is_ready(opt.subscribers, false);
    size_t seen = 0;
    auto deadline = clock_type::now() + secs(opt.timeout);
    char buf[512];
    const size_t rp = std::strlen(ready_prefix);
    while (seen < opt.subscribers) {
      zmq_pollitem_t item{pub, 0, ZMQ_POLLIN, 0};
      if (clock_type::now() > deadline) {
        std::fprintf(stderr, "zmq-drive: the publisher saw %zu of %zu subscribers ready\n", seen,
                     opt.subscribers);
        std::exit(1);
      }
      if (zmq_poll(&item, 1, 100) <= 0)
        continue;
      int len = zmq_recv(pub, buf, sizeof(buf) - 1, ZMQ_DONTWAIT);
      if (len < static_cast<int>(rp + 2) || buf[0] != 1
          || std::memcmp(buf + 1, ready_prefix, rp) != 0)
        continue;
      buf[len] = 0;
      size_t i = std::strtoul(buf + 1 + rp, nullptr, 10);
      if (i < opt.subscribers && !is_ready[i]) {
        is_ready[i] = true;
        ++seen;
      }
    }
    st.n = opt.subscribers;
    st.received.reset(new std::atomic<uint64_t>[st.n]);
    for (size_t i = 0; i < st.n; ++i)
      st.received[i] = 0;
    payload.assign(std::max<size_t>(opt.size, 8), 'x');
  }

  /// Sends one event; false if the phase ended while the send was blocked.
  bool publish_one(clock_type::time_point end) {
    uint64_t ts = now_ns();
    std::memcpy(payload.data(), &ts, 8);
    struct frame {
      const void* data;
      size_t size;
    } frames[] = {{topic, sizeof(topic) - 1},
                  {node_id, sizeof(node_id) - 1},
                  {format, sizeof(format) - 1},
                  {payload.data(), payload.size()}};
    for (int i = 0; i < 4; ++i) {
      while (zmq_send(pub, frames[i].data, frames[i].size, i < 3 ? ZMQ_SNDMORE : 0) < 0) {
        if (zmq_errno() != EAGAIN)
          die("send");
        ++blocked_retries;
        if (i == 0 && clock_type::now() >= end)
          return false;
      }
    }
    ++sent;
    return true;
  }

  /// Publishes as fast as flow control allows until `end`.
  void flood(clock_type::time_point end) {
    size_t half = std::max<size_t>(opt.window / 2, 1);
    while (clock_type::now() < end) {
      if (sent % half == 0)
        while (sent > slowest() + opt.window && clock_type::now() < end)
          std::this_thread::sleep_for(std::chrono::microseconds(20));
      for (size_t i = 0; i < half && clock_type::now() < end; ++i)
        if (!publish_one(end))
          return;
    }
  }

  struct window {
    double secs, fwd_cpu, drv_cpu;
    uint64_t delivered;
  };

  window measure(double seconds, bool skip_stalled) {
    auto t0 = clock_type::now();
    double f0 = opt.forwarder_pid ? cpu_seconds(opt.forwarder_pid) : 0;
    double d0 = cpu_seconds(0);
    uint64_t r0 = total(skip_stalled);
    flood(t0 + secs(seconds));
    uint64_t r1 = total(skip_stalled);
    double f1 = opt.forwarder_pid ? cpu_seconds(opt.forwarder_pid) : 0;
    double d1 = cpu_seconds(0);
    double took = std::chrono::duration<double>(clock_type::now() - t0).count();
    return {took, f1 - f0, d1 - d0, r1 - r0};
  }

  void latency_phase(double* p50, double* p99) {
    double msgs_per_s = std::max(1.0, opt.latency_rate / opt.subscribers);
    auto start = clock_type::now();
    auto warm = start + std::chrono::milliseconds(200);
    auto end = warm + secs(opt.latency_seconds);
    uint64_t k = 0;
    while (true) {
      auto due = start + secs(k / msgs_per_s);
      auto now = clock_type::now();
      if (now >= end)
        break;
      if (now >= warm)
        st.record = true;
      if (due > now)
        std::this_thread::sleep_for(due - now);
      publish_one(end);
      ++k;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    st.record = false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    uint64_t count = 0;
    for (auto c : st.latency)
      count += c;
    *p50 = *p99 = -1;
    uint64_t acc = 0;
    for (size_t us = 0; us < latency_buckets && count; ++us) {
      acc += st.latency[us];
      if (*p50 < 0 && acc * 2 >= count)
        *p50 = us;
      if (*p99 < 0 && acc * 100 >= count * 99) {
        *p99 = us;
        break;
      }
    }
  }
};

void usage() {
  std::fprintf(stderr,
               "usage: zmq-drive --xsub-port P --xpub-port Q [--subscribers N] [--size B]\n"
               "  [--mode fanout|stall] [--seconds S] [--latency-seconds S]\n"
               "  [--latency-rate DELIVERIES_PER_S] [--fill S] [--window W]\n"
               "  [--io-threads T] [--forwarder-pid PID] [--host H] [--timeout S]\n"
               "  [--curve-server-key Z85]\n");
  std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
  driver d;
  options& o = d.opt;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc)
      usage();
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--xsub-port") o.xsub_port = std::atoi(v.c_str());
    else if (k == "--xpub-port") o.xpub_port = std::atoi(v.c_str());
    else if (k == "--subscribers") o.subscribers = std::strtoul(v.c_str(), nullptr, 10);
    else if (k == "--size") o.size = std::strtoul(v.c_str(), nullptr, 10);
    else if (k == "--mode") o.mode = v;
    else if (k == "--seconds") o.seconds = std::atof(v.c_str());
    else if (k == "--latency-seconds") o.latency_seconds = std::atof(v.c_str());
    else if (k == "--latency-rate") o.latency_rate = std::atof(v.c_str());
    else if (k == "--fill") o.fill = std::atof(v.c_str());
    else if (k == "--window") o.window = std::strtoul(v.c_str(), nullptr, 10);
    else if (k == "--io-threads") o.io_threads = std::atoi(v.c_str());
    else if (k == "--forwarder-pid") o.forwarder_pid = std::atoi(v.c_str());
    else if (k == "--host") o.host = v;
    else if (k == "--timeout") o.timeout = std::atof(v.c_str());
    else if (k == "--curve-server-key") o.curve_server_key = v;
    else usage();
  }
  if (!o.xsub_port || !o.xpub_port || o.subscribers == 0
      || (o.mode != "fanout" && o.mode != "stall") || (o.mode == "stall" && o.subscribers < 2)
      || (!o.curve_server_key.empty() && o.curve_server_key.size() != 40))
    usage();
  d.setup();
  std::thread receiver(receive_loop, &d.st, d.subs);
  if (o.mode == "fanout") {
    double p50 = -1, p99 = -1;
    if (o.latency_seconds > 0)
      d.latency_phase(&p50, &p99);
    d.flood(clock_type::now() + std::chrono::milliseconds(300)); // warm-up
    auto w = d.measure(o.seconds, false);
    std::printf("RESULT mode=fanout n=%zu size=%zu seconds=%.3f published=%llu delivered=%llu "
                "rate=%.0f fwd_cpu_s=%.4f drv_cpu_s=%.4f fwd_ns_per_delivery=%.1f "
                "drv_ns_per_delivery=%.1f fwd_cpu_pct=%.1f p50_us=%.0f p99_us=%.0f "
                "blocked_retries=%llu malformed=%llu\n",
                o.subscribers, o.size, w.secs, (unsigned long long)d.sent,
                (unsigned long long)w.delivered, w.delivered / w.secs, w.fwd_cpu, w.drv_cpu,
                w.delivered ? 1e9 * w.fwd_cpu / w.delivered : -1.0,
                w.delivered ? 1e9 * w.drv_cpu / w.delivered : -1.0, 100 * w.fwd_cpu / w.secs,
                p50, p99, (unsigned long long)d.blocked_retries,
                (unsigned long long)d.st.malformed.load());
  } else {
    d.flood(clock_type::now() + std::chrono::milliseconds(300)); // warm-up
    // Phase A: every subscriber read; the rate of subscribers 1..N-1 only, like B.
    uint64_t others0 = 0;
    auto a_start = clock_type::now();
    for (size_t i = 1; i < d.st.n; ++i)
      others0 += d.st.received[i].load();
    auto a = d.measure(o.seconds, false);
    uint64_t others1 = 0;
    for (size_t i = 1; i < d.st.n; ++i)
      others1 += d.st.received[i].load();
    double a_secs = std::chrono::duration<double>(clock_type::now() - a_start).count();
    double rate_a = (others1 - others0) / a_secs / (d.st.n - 1);
    d.st.stalled = 0;
    d.flood(clock_type::now() + secs(o.fill));
    auto b = d.measure(o.seconds, true);
    double rate_b = b.delivered / b.secs / (d.st.n - 1);
    std::printf("RESULT mode=stall n=%zu size=%zu seconds=%.3f rate_a=%.0f rate_b=%.0f "
                "share=%.3f fwd_cpu_pct_a=%.1f fwd_cpu_pct_b=%.1f published=%llu "
                "blocked_retries=%llu stalled_received=%llu\n",
                o.subscribers, o.size, b.secs, rate_a, rate_b,
                rate_a > 0 ? rate_b / rate_a : 0.0, 100 * a.fwd_cpu / a.secs,
                100 * b.fwd_cpu / b.secs, (unsigned long long)d.sent,
                (unsigned long long)d.blocked_retries,
                (unsigned long long)d.st.received[0].load());
  }
  std::fflush(stdout);
  d.st.stop = true;
  receiver.join();
  // Sockets may hold unsent messages for a stalled forwarder: end without zmq_ctx_term().
  std::_Exit(0);
}
