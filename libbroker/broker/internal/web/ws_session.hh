#pragma once

// ws_session: one WebSocket client of the JSON API v1 (doc/protocol/websocket.md §3-§8).
//
// Owner: the session runs on its connection's strand; the server's session table and the
// handlers of pending operations keep it alive. Other threads reach it only through posts
// gated by the server (send queue ready, room in a sink, the core's attach answer,
// shutdown). The skeleton (reading into the I/O thread's buffer, routing, the attach as a
// barrier, gathered writes) is net/channel.hh; this class is the WebSocket protocol on it.
//
// Flow:
//   1. http_session validated the upgrade; the session writes the 101 response (and
//      processes frames that came with the request).
//   2. A client whose X-Application-Name is invalid gets an error frame
//      (invalid_application_name, as from Zeek's server) and close 1008 right after the
//      101. The first message (text or binary: Zeek's clients send binary frames) must be
//      a JSON array of topic strings; otherwise an error frame naming what was wrong, then
//      close 1008. The session posts core_state::add_client() and sends the ack
//      only after the core ran it, so anything published after the ack reaches the client.
//   3. Input in batches, run to completion: each read takes what the socket has; every
//      complete frame is decoded on the strand, straight from the I/O thread's buffer, and the
//      strand routes all data messages of the read itself (core/net_input.hh). Binary
//      messages count as text (answers are always text, as from Zeek). Bad input gets an
//      error frame naming the field and the problem, is counted
//      (broker_web_socket_rejected_inputs_total) and logged at most once a second per
//      server; the connection stays open. While a `block` sink lacks room, or while many
//      control frames wait to be written, the session stops reading (TCP back-pressure).
//      Budgets end the session with an error naming the option: more subscriptions than
//      broker.web-socket.max-subscriptions, more unread control output than
//      broker.max-pending-control-bytes.
//   4. Output in gathered writes: control frames (101, ack, errors, pongs, close) and every
//      message the core queued go out in one system call, each message as its cached frame
//      shared by all clients (message_impl::ws_frame()); the first client to write a
//      run of messages encodes their frames back to back (encode_ws_frames()), and a
//      run of adjacent frames is one piece of the write. On overflow under `disconnect` the
//      client gets a backpressure_overflow error frame, then close 1000.
//   4b. Pings: one timer per server ticks every broker.web-socket.ping-interval for all
//      attached clients (server_impl::start_pings()). A client we heard nothing from
//      since the last tick gets a ping, and once it answered, one every interval (as from
//      Zeek's server); a client that sends on its own gets none. One that stays silent for
//      an interval after a ping (while we could write to it and were reading from it) is
//      closed with 1001 and counted as a ping timeout. The first ping goes out one to two
//      intervals after a client's last message, the verdict one interval later.
//   4c. Access control (doc/security.md), if http_session admitted the client with an
//      identity: its subscriptions are checked before the core gets them (narrowed or
//      refused prefixes: error frames `access_denied` right after the ack); the router
//      asks access_ once per run of what it publishes (a refused rule: one error frame);
//      deliveries are checked under filtered prefixes. After a reload: new subscriptions
//      for the core, or close 1008 if the identity was revoked.
//   5. Closing: a client's close frame is answered with the same code; a violation of the
//      protocol with 1002/1003/1007/1009. After our own close frame the session waits for
//      the client's (bounded), then ends. The core learns of the end once the client's last
//      message was routed.

#include "broker/internal/codec/json.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/core/send_queue.hh"
#include "broker/internal/core/net_input.hh"
#include "broker/internal/net/channel.hh"
#include "broker/internal/security/connection_access.hh"
#include "broker/internal/web/ws_frame.hh"

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace broker::internal {

namespace json {
class decoder;
} // namespace json

class server_impl;

class ws_session : public queued_channel<data_message> {
public:
  /// `response` is the 101 answer to send first; `early` holds bytes that arrived behind
  /// the upgrade request. `app` is the client's X-Application-Name (empty if it sent none).
  /// `access`: the client's access control (null: none).
  ws_session(std::shared_ptr<server_impl> srv, std::unique_ptr<stream> conn,
             std::string response, std::string_view early, std::string app = {},
             std::unique_ptr<security::connection_access> access = nullptr);
  ~ws_session();

  ws_session(const ws_session&) = delete;
  ws_session& operator=(const ws_session&) = delete;

  /// Sends the 101 response and starts reading. Pre: the server tracks the session. A
  /// non-empty `app_error` says why the X-Application-Name is invalid: the session then
  /// only rejects the client.
  void start(const std::string& app_error = {});

  /// Sends close 1000 after the frames already taken from the queue (any thread).
  void close_for_shutdown();

  /// Ends the session at once (any thread).
  void abort();

  /// A tick of the server's ping sweep (any thread): each interval, a silent client gets a
  /// ping, and one that stayed silent since the last ping is closed (see 4b above).
  void ping_tick();

private:
  enum class phase : uint8_t { awaiting_filter, attaching, attached };

  std::shared_ptr<ws_session> self() {
    return std::static_pointer_cast<ws_session>(shared_from_this());
  }

  /// Writes through the endpoint's logger (defined in server.cc).
  void log(log_level level, std::string_view component, std::string_view message) const;

  // -- reading (channel hooks and the frames)
  size_t decode(char* data, size_t size) override;
  void on_read_error(const boost::system::error_code& ec) override;
  bool hold_input() const noexcept override;
  void on_caught_up() override;
  void on_first_message(std::string_view text);
  /// A data message from the client; `dec` is the I/O thread's decoder (decode()).
  void on_text(std::string_view text, json::decoder& dec);
  void reject_input(const std::string& context);
  /// "client <id> (<address>:<port>[, app <name>])" for log lines.
  std::string describe() const;

  // -- access control
  void on_routed() override; // Checks for access notices and reloads.
  void check_access();
  void tell_access(const std::vector<std::string>& notices);

  // -- liveness
  void on_ping_tick();

  // -- the timer of the handshake and closing phases (created on demand)
  boost::asio::steady_timer& timer();
  void drop_timer();

  // -- writing (channel hooks)
  bool fill(gather_buffer& out) override;
  bool after_write() override;
  void on_drained() override;
  void on_write_error(const boost::system::error_code& ec) override;
  void queue_control(std::string frame);
  /// Queues a close frame behind what is pending. `final`: end the session once it is
  /// written (a reply to the client's close, or a protocol failure); otherwise wait for
  /// the client's answer (bounded).
  void close_with(uint16_t code, std::string reason, bool final = false);

  // -- ending
  void finish(peer_end why, std::string reason, bool limit = false);
  void detach() override;
  void close_transport();
  void end_transport();

  std::shared_ptr<server_impl> srv_;
  /// One timer for the phases that need one, in turn: the deadline for the subscriptions,
  /// then the close handshake (and TLS's close_notify). Every handler checks the state it
  /// was armed for, so a stale expiry does nothing. Null in between: an attached client
  /// holds no timer (120 bytes, and a pending wait of 144); the server's ping sweep ticks
  /// for it.
  std::unique_ptr<boost::asio::steady_timer> timer_;
  ws::reader reader_;
  std::string address_;

  // Attachment to the core.
  endpoint_id client_id_ = endpoint_id::random();
  std::unique_ptr<security::connection_access> access_; ///< Null without access control.
  /// About the subscriptions, sent after the ack (null: none; rare, so not inline).
  std::unique_ptr<std::vector<std::string>> access_notices_;

  // Input.
  size_t inputs_ = 0; ///< Data messages received, for "input #N" in error frames.

  // Output. Closing: a close frame waits behind the queue (close_pending_), then went out
  // (close_sent_); close_reason_ is its reason, and after finish() the detach's.
  std::string close_reason_;

  /// X-Application-Name, or null if the client sent none (most do not: not inline).
  std::unique_ptr<const std::string> app_;

  // The small fields together (no padding between them): the session object stays in a
  // smaller allocation class (doc/performance.md, idle connections).
  uint16_t port_ = 0;
  uint16_t close_code_ = 0;
  phase phase_ = phase::awaiting_filter;
  bool registered_ = false; ///< add_client() is posted: the end must detach the client.
  /// The end, told to the core once the input is routed (with close_reason_).
  peer_end detach_why_ = peer_end::removed;
  bool detach_limit_ = false; ///< The end was a budget's.
  bool close_pending_ = false;
  bool close_is_final_ = false;
  bool close_sent_ = false;
  /// The last write that carried anything carried data. If it carried only control
  /// frames (the 101 and the ack, a ping, a pong), the drained write loop gives the write
  /// buffers back (on_drained()): an idle client keeps none.
  bool last_write_data_ = false;

  // Liveness (pings).
  bool heard_since_tick_ = false; ///< Bytes arrived since the last tick.
  bool ping_pending_ = false; ///< A ping went out and nothing came back since.
  peer_end close_end_ = peer_end::removed; ///< How the core hears of a close we started.
  bool transport_closed_ = false; ///< end_transport() ran.
};

} // namespace broker::internal
