#pragma once

// zmtp::session: one ZMTP 3.x connection as a state machine, bytes in, events and bytes out
// (doc/protocol/zeromq.md). No sockets, no threads, no clock: the caller owns all three.
//
// Ownership: one session per TCP connection, used by whoever reads and writes that socket
// (one strand); nothing is shared. Frames handed to write_message() by reference must stay
// alive until the caller's write completes, as for gather_buffer::ref().
//
// Flow:
//   1. Construct with a session_config (our socket type, whether we accepted the connection,
//      mechanism and keys, limits). The greeting is queued at once: drain the output.
//   2. feed(bytes, events) with every chunk read from the socket; it appends events:
//        ready        handshake done; peer() has the peer's metadata (Socket-Type, Identity,
//                     CURVE client key, ZMTP version)
//        message      a complete multipart message from the peer
//        subscribe    a prefix the peer subscribes to (XPUB side; message form 0x01+prefix
//                     or the ZMTP 3.1 SUBSCRIBE command), unsubscribe likewise (0x00, CANCEL)
//        pong         the peer answered our PING (context in `data`)
//        failed       the connection is dead; `error` names why. Flush the output (it may
//                     hold an ERROR command for the peer), then close the socket.
//      feed() may queue output (READY, WELCOME, PONG, ...) at any time: drain it after each
//      feed() with flush(sink) or take_output().
//   3. Once ready: write_message(frames, n, sink) encodes one outgoing multipart message.
//      NULL: it copies the frame headers and refs the frame bytes (nothing copied per
//      receiver); CURVE: it seals each frame for this connection. It first moves pending
//      control output into the sink, so wire order is encoding order (CURVE nonces need it).
//      subscribe()/unsubscribe() (XSUB side) and ping() queue control output likewise.
//   4. Timers are the caller's: call ping() every heartbeat interval; if nothing arrives
//      within the timeout, call timed_out(). peer_ttl() is the TTL the peer asked for in its
//      last PING. When the socket closes, call peer_closed() for an error that says which
//      handshake step the peer gave up in (e.g. a CURVE server that refused our key).
//
// Sinks: any object with copy(std::string_view) and ref(std::string_view), such as
// io/gather.hh's gather_buffer; string_sink below collects into one string (tests, TLS).

#include "broker/internal/zmtp/curve.hh"
#include "broker/internal/zmtp/wire.hh"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::zmtp {

/// Bounds on what one peer can make us hold (doc/protocol/zeromq.md §8).
struct limits {
  /// Bytes of all frames of one multipart message together.
  size_t max_message_size = 64 * 1024 * 1024;
  /// Frames of one multipart message.
  size_t max_frames = 64;
  /// Bytes of one command frame (READY metadata, SUBSCRIBE topics, CURVE INITIATE).
  size_t max_command_size = 64 * 1024;
  /// Control output (PONGs, ERROR) queued and not drained before we call it a flood.
  size_t max_pending_output = 1024 * 1024;
};

/// What a session is and speaks.
struct session_config {
  /// Our socket type: xpub or xsub (pub and sub work too).
  socket_type type = socket_type::xpub;
  /// True if we accepted the connection: the CURVE server; the as-server greeting flag.
  bool server = true;
  mechanism mech = mechanism::null;
  /// CURVE server: our long-term key pair; CURVE client: the client's.
  keypair curve_keys;
  /// CURVE client: the server's long-term public key.
  key curve_server_key{};
  /// CURVE server: decides which client keys may connect; empty allows all.
  authorize_fn authorize;
  /// XSUB side: send subscriptions as 0x01/0x00 messages even to ZMTP 3.1 peers (libzmq's
  /// XSUB does so for forwarded subscriptions); otherwise 3.1 peers get SUBSCRIBE/CANCEL.
  bool subscriptions_as_messages = false;
  limits lim;
};

/// A multipart message: the frames' bytes back to back, and where each frame ends.
struct multipart {
  std::string bytes;
  std::vector<size_t> ends;
  /// The message as an unencrypted (NULL) session writes it, headers and bodies, set by
  /// encode_plain(): the same bytes for every NULL receiver, so a forwarder encodes an
  /// event once and each receiver copies or references this. Empty until encoded. The
  /// bytes live in plain_block, which the messages encoded together share: their
  /// encodings lie back to back there, and a receiver writes a run of them as one piece.
  std::string_view plain;
  std::shared_ptr<const std::string> plain_block;

  size_t size() const noexcept { return ends.size(); }
  std::string_view frame(size_t i) const noexcept {
    auto begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view{bytes}.substr(begin, ends[i] - begin);
  }
};

/// Sets msg.plain to the message in ZMTP framing without encryption (what write_message()
/// writes under NULL); empty for a message without frames.
void encode_plain(multipart& msg);

/// encode_plain() for `n` messages at once, back to back in shared blocks of up to
/// plain_block_bytes (a message that lives on keeps at most that much alive).
void encode_plain(multipart* const* msgs, size_t n);

/// Where encode_plain() closes a block.
constexpr size_t plain_block_bytes = 16 * 1024;

/// One thing that happened on the connection.
struct event {
  enum class kind : uint8_t { ready, message, subscribe, unsubscribe, pong, failed };
  kind what = kind::ready;
  multipart msg;     ///< kind::message
  std::string data;  ///< subscribe/unsubscribe: the prefix; pong: the context
  error err;         ///< kind::failed
};

/// What the handshake told us about the peer.
struct peer_info {
  uint8_t major = 0;
  uint8_t minor = 0;
  socket_type type = socket_type::other;
  std::string identity;
  properties metadata;
  bool has_client_key = false; ///< CURVE server side: the client's long-term key is known.
  key client_key{};
};

/// Collects a sink's output into one string.
struct string_sink {
  std::string out;
  void copy(std::string_view bytes) { out.append(bytes); }
  void ref(std::string_view bytes) { out.append(bytes); }
};

class session {
public:
  explicit session(session_config cfg);
  ~session();
  session(session&&) noexcept;
  session& operator=(session&&) noexcept;
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// Consumes bytes from the socket, appends events. Returns false once failed.
  bool feed(std::string_view bytes, std::vector<event>& events);

  /// Convenience: feed() with a fresh event list.
  std::vector<event> feed(std::string_view bytes);

  /// Whether the handshake completed (and the session did not fail since).
  bool ready() const noexcept { return state_ == state::ready; }

  /// Whether the session failed.
  bool failed() const noexcept { return state_ == state::failed; }

  /// The error that ended the session, if any.
  const error& failure() const noexcept { return failure_; }

  /// The peer's greeting and handshake metadata (complete once ready()).
  const peer_info& peer() const noexcept { return peer_; }

  // -- output ---------------------------------------------------------------------------------

  /// Whether control output (greeting, handshake, PONG, ...) waits to be written.
  bool has_output() const noexcept { return !out_.empty(); }

  /// Takes the pending control output.
  std::string take_output();

  /// Moves the pending control output into `sink`.
  template <class Sink>
  void flush(Sink& sink) {
    if (!out_.empty()) {
      sink.copy(out_);
      out_.clear();
    }
  }

  /// Encodes one multipart message into `sink` after any pending control output. Returns
  /// false (and writes nothing) unless ready() and count > 0.
  template <class Sink>
  bool write_message(const std::string_view* frames, size_t count, Sink& sink) {
    if (!ready() || count == 0)
      return false;
    flush(sink);
    if (cipher_ == nullptr) {
      char header[max_frame_header_size];
      for (size_t i = 0; i < count; ++i) {
        auto n = write_frame_header(header, i + 1 < count, false, frames[i].size());
        sink.copy(std::string_view{header, n});
        sink.ref(frames[i]);
      }
    } else {
      seal_frames(frames, count);
      sink.copy(scratch_);
    }
    return true;
  }

  /// Whether write_message() writes frames as they are (NULL), i.e. a message's plain
  /// encoding (encode_plain()) may be written instead, after flush().
  bool writes_plain() const noexcept { return cipher_ == nullptr; }

  /// XSUB side: queues a subscription to `prefix`; false unless ready().
  bool subscribe(std::string_view prefix) { return send_subscription(true, prefix); }

  /// XSUB side: queues the cancellation of `prefix`; false unless ready().
  bool unsubscribe(std::string_view prefix) { return send_subscription(false, prefix); }

  /// Queues a PING (TTL in deciseconds, 0: none; context up to 16 bytes). False unless
  /// ready() and the peer speaks ZMTP 3.1 (3.0 has no PING).
  bool ping(uint16_t ttl_deciseconds, std::string_view context = {});

  /// The TTL (deciseconds) of the peer's last PING: close if nothing arrives for that long.
  uint16_t peer_ttl() const noexcept { return peer_ttl_; }

  /// Unknown commands received after the handshake (ignored, as libzmq does).
  uint64_t ignored_commands() const noexcept { return ignored_commands_; }

  // -- the caller's observations --------------------------------------------------------------

  /// The caller's heartbeat timer expired: fails the session and returns its error.
  const error& timed_out(uint64_t silent_ms);

  /// The peer closed the connection: fails the session (unless it already failed) with an
  /// error that says in which step; returns the session's error.
  const error& peer_closed();

private:
  enum class state : uint8_t { greeting, handshake, ready, failed };
  enum class step : uint8_t {
    null_ready,        // NULL: waiting for READY
    client_welcome,    // CURVE client: waiting for WELCOME
    client_ready,      // CURVE client: waiting for READY
    server_hello,      // CURVE server: waiting for HELLO
    server_initiate,   // CURVE server: waiting for INITIATE
  };

  bool fail(error err);
  bool on_greeting();
  bool on_frame(const frame_header& hdr, std::string_view body);
  bool on_handshake_command(std::string_view body);
  bool on_ready_metadata(std::string_view metadata);
  bool on_traffic(bool more, bool command, std::string_view body);
  bool on_command(std::string_view body);
  bool deliver();
  bool send_subscription(bool subscribe, std::string_view prefix);
  void send_command(std::string_view name, std::string_view data);
  std::string our_metadata() const;
  void seal_frames(const std::string_view* frames, size_t count);
  bool check_output();

  session_config cfg_;
  state state_ = state::greeting;
  step step_ = step::null_ready;
  error failure_;
  peer_info peer_;
  std::string in_;        // unparsed input
  size_t in_pos_ = 0;     // first unparsed byte of in_
  std::string out_;       // control output not yet drained
  std::string scratch_;   // sealed frames, opened payloads
  multipart partial_;     // the incoming message being assembled
  /// Size of the last message delivered (bytes, frames): the next one's reservation, so a
  /// run of similar messages is assembled without growing (capped, see on_traffic()).
  size_t last_bytes_ = 0;
  size_t last_frames_ = 0;
  std::vector<event>* events_ = nullptr;
  std::unique_ptr<curve_client> client_;
  std::unique_ptr<curve_server> server_;
  curve_cipher* cipher_ = nullptr; // set once CURVE is established
  uint16_t peer_ttl_ = 0;
  uint64_t ignored_commands_ = 0;
};

} // namespace broker::internal::zmtp
