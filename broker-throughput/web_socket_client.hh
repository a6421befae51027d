#pragma once

// A small blocking client of Broker's WebSocket JSON API v1 (doc/protocol/websocket.md), built on
// Boost.Beast. The Beast code lives in web_socket_client.cc alone (pimpl), because a Beast
// translation unit is slow to compile and nothing else needs its headers.
//
// Session (§4): connect() opens ws://host:port/v1/messages/json, sends the filter (a JSON
// array of topic prefixes, "[]" to only publish) and waits for the ack. Afterwards send()
// publishes data messages and receive_for() reads what the server delivers.
//
// Threads: one thread at a time. Every call that may block for long asks a stop predicate
// (or runs for a bounded time), so the caller stays responsive to signals.

#include <broker/error.hh>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace broker_throughput {

/// See the file comment.
class web_socket_client {
public:
  /// Returns true when a blocking call should give up.
  using stop_predicate = std::function<bool()>;

  /// Called with each received text message (valid only during the call).
  using message_handler = std::function<void(std::string_view)>;

  ~web_socket_client();

  web_socket_client(const web_socket_client&) = delete;
  web_socket_client& operator=(const web_socket_client&) = delete;

  /// Connects, sends `filter` and waits for the ack, all within `timeout`. Errors:
  /// ec::peer_unavailable (cannot connect, HTTP upgrade refused, timeout) or
  /// ec::invalid_message (the server answered with an error frame or no ack).
  static broker::expected<std::unique_ptr<web_socket_client>>
  connect(const std::string& host, uint16_t port, std::string_view filter,
          std::chrono::milliseconds timeout);

  /// The URL connect() used.
  const std::string& url() const noexcept;

  /// Sends each text as one message, in order, and blocks until all are written (TCP
  /// pushes back when the server stops reading). Returns early, without an error, when
  /// `stop` returns true; the connection is then unusable. Errors: ec::peer_unavailable.
  broker::error send(const std::vector<std::string_view>& texts, const stop_predicate& stop);

  /// Reads messages for at most `timeout` and hands each to `on_message`. Errors:
  /// ec::peer_unavailable when the connection closed or failed.
  broker::error receive_for(std::chrono::milliseconds timeout, const message_handler& on_message);

  /// Sends a close frame and waits briefly for the server's; idempotent.
  void close();

private:
  struct impl;
  explicit web_socket_client(std::unique_ptr<impl> ptr);
  std::unique_ptr<impl> impl_;
};

} // namespace broker_throughput
