#pragma once

// io_runtime: the endpoint's one I/O runtime (doc/architecture.md, "Threads"): the Boost.Asio
// io_context, the threads that run it, and the TLS context. Peerings and the HTTP/WebSocket server
// both run on it; neither owns it.
//
// Ownership: the endpoint creates it first and stops it last, after peerings and servers
// closed their connections. stop() joins the threads; pending handlers are destroyed with
// the io_context.
//
// TLS (doc/peering.md, "TLS"), decided once from broker.ssl.* and broker.disable-ssl:
//   - disable-ssl: plain TCP (and ws://);
//   - any broker.ssl.* option: mutually authenticated TLS >= 1.2, like Broker's certificate
//     mode; a broken setup (unreadable file, wrong passphrase) is an error that names the
//     option, reported by every listen or dial;
//   - neither: Broker's default, TLS 1.2 with anonymous ECDH (AECDH-AES256-SHA, P-384),
//     which encrypts but authenticates no one; a warning says so once.

#include "broker/error.hh"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace boost::asio {
class io_context;
namespace ssl {
class context;
} // namespace ssl
} // namespace boost::asio

namespace broker {
class configuration;
} // namespace broker

namespace broker::internal {

/// How connections are secured (see the file comment).
enum class tls_mode : uint8_t { plain, anonymous, verified };

std::string_view to_string(tls_mode x) noexcept;

class logger;

class io_runtime {
public:
  /// Builds the TLS context from `cfg` and starts `broker.io-threads` threads. Everything
  /// on this runtime logs through `log` (the endpoint's logger); null: default_logger().
  explicit io_runtime(const configuration& cfg, std::shared_ptr<const logger> log = nullptr);
  ~io_runtime();

  io_runtime(const io_runtime&) = delete;
  io_runtime& operator=(const io_runtime&) = delete;

  boost::asio::io_context& context() noexcept;

  tls_mode mode() const noexcept;

  /// The TLS context for new connections (null for plain TCP). Fails with the setup
  /// error if broker.ssl.* is broken; warns once about anonymous TLS.
  expected<boost::asio::ssl::context*> tls();

  /// The endpoint's logger (logger.hh), shared by its peerings and servers.
  const logger& get_logger() const noexcept;

  /// True if the calling thread runs the io_context.
  bool on_io_thread() const noexcept;

  /// Stops the io_context and joins its threads. Idempotent; never call from an I/O thread.
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace broker::internal
