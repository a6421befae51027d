#pragma once

// fanout_client: one process that opens N subscriber connections and one publisher
// connection to a pub/sub server and measures the fan-out (bench/README.md, "Fan-out").
// The same driver runs against a broker node's WebSocket API (fanout_ws.cc), Redis
// (baseline_redis.cc) and NATS (baseline_nats.cc); only the codec differs, so the three
// are measured by the same I/O loop, pacing and flow control.
//
// Threads: one. Everything runs on one Asio io_context: subscribers' reads, the
// publisher's writes, the timers. The counters need no synchronization.
//
// A run, step by step:
//   1. Connect the N subscribers (at most `connect_parallel` handshakes at a time) and the
//      publisher; a connection is ready when its codec says so (the server confirmed the
//      subscription: WebSocket ack, Redis subscribe reply, NATS PONG after SUB).
//   2. Latency phase: publish `latency_rate` messages/s for `latency_seconds`, each
//      stamped with its send time; every delivery records now - stamp. Then wait until
//      every subscriber has the last one.
//   3. Throughput phase: publish as fast as flow control allows for `seconds`: at most
//      `window` messages beyond the slowest subscriber. Deliveries record their latency
//      too ("under load"). Then wait until every subscriber has the last one.
//   4. Print the RESULT line (fanout_stats.hh) and exit 0; exit 1 on any error or timeout.
// Subscribers check that sequence numbers arrive without gaps.

#include "fanout_stats.hh"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace fanout {

/// Receives what a codec parsed.
class codec_sink {
public:
  virtual ~codec_sink() = default;

  /// The server confirmed the connection (and its subscription).
  virtual void ready() = 0;

  /// One published payload arrived.
  virtual void message(std::string_view payload) = 0;

  /// The server refused something or closed; the run fails with `what`.
  virtual void fail(std::string what) = 0;
};

/// A connection's protocol: the bytes to send, and the parsing of what comes back.
class codec {
public:
  virtual ~codec() = default;

  /// Appends what to send right after the TCP connection is up.
  virtual void start(std::string& out) = 0;

  /// Parses complete frames at the start of [data, data + size), reporting them to `sink`
  /// and appending any replies (pongs, the next handshake step) to `out`. Returns the
  /// bytes consumed; an incomplete frame stays for the next call.
  virtual size_t feed(const char* data, size_t size, codec_sink& sink, std::string& out) = 0;

  /// Appends one publication of `payload` (publisher connections only).
  virtual void publish(std::string_view payload, std::string& out) = 0;
};

/// Whether a connection subscribes or publishes.
enum class role { subscriber, publisher };

/// Command-line settings of one run.
struct client_options {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  size_t subscribers = 1;
  double latency_rate = 0;     ///< Messages/s in the latency phase (0: default_latency_rate).
  double latency_seconds = 1;
  double seconds = 2;          ///< Throughput phase.
  size_t window = 0;           ///< Messages in flight per subscriber (0: default_window).
  size_t burst = 32;           ///< Messages per publisher write in the throughput phase.
  size_t connect_parallel = 64; ///< Handshakes in progress at once.
  double timeout = 120;        ///< Give up after this many seconds in total.
  std::string variant;         ///< Protocol-specific (see each program's --help).
};

/// Makes the codec of one connection.
using codec_factory = std::function<std::unique_ptr<codec>(role, const client_options&)>;

/// Parses the command line, runs (see the file comment), returns the exit code.
/// `system` names the server in the RESULT line; `variants` lists the accepted --variant
/// values, the first being the default; `variant_help` explains them for --help.
int run_client(int argc, char** argv, const char* system,
               const std::vector<std::string>& variants, const char* variant_help,
               codec_factory make_codec);

} // namespace fanout
