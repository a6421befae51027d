#pragma once

// The byte-level codec of Broker's native peering protocol (doc/protocol/peering.md; section
// numbers below are that page's): framing, the phase-1/2 handshake messages, filters and the
// phase-3 node messages. Pure functions and one incremental frame reader; no sockets, no
// threads, no CAF.
//
// Ownership: every function here is stateless and safe from any thread. A `frame_reader`
// belongs to one connection and is used by whoever reads that connection's socket.
//
// Flow on one connection (the transport drives it; `handshake` decides what to send):
//   1. The transport feeds raw socket bytes into a `frame_reader`, or lets it take frames
//      straight from its own read buffer (next(bytes, used): connection.cc reads into the
//      I/O thread's buffer, net/channel.hh). Handshake phase: frames of at most 64 KiB, an
//      empty frame is an error.
//   2. Each complete payload goes to `decode_handshake()` (the `handshake` class does this).
//      A decode failure carries the exact drop_conn code and text Broker would send.
//   3. When the handshake completes, the transport calls `frame_reader::enter_operation()`.
//      Bytes already buffered past the last handshake frame are parsed as phase-3 frames.
//   4. Each phase-3 payload goes to `decode_node_message()`. A failure there drops only that
//      frame (§5.6); a framing failure from the reader ends the connection.
//   5. Output is appended to a caller-owned `std::string` as complete frames (length prefix
//      included): `append_frame()`, `append_node_message()` and the helpers below.
//
// Extension "origin-v1" (ours, never sent to Broker; §7): loop-free multi-hop between our
// nodes.
//   - Negotiation, after the handshake, invisible to Broker: each side of a peering sends a
//     ping with the payload `ext_probe_query`, once it has answered the peer's first
//     phase-3 frame or after a short quiet spell (a Broker peer that pings first gets its
//     pong first), unless the peer's own probe came first. Our nodes
//     answer that ping with a pong carrying `ext_probe_answer`; Broker answers every ping
//     with a pong echoing its payload byte for byte (§5.5). So a side learns that its
//     peer speaks origin-v1 from the peer's own probe or from the changed answer, and that
//     it is a Broker node from the echo. Filters, the handshake and the version range stay
//     exactly as Broker expects. Until it knows, a side sends no data (at most one round
//     trip; a peer that keeps sending frames for two probe windows without answering
//     counts as Broker; a silent link counts as nothing: connection.cc, arm_probe_timer()).
//   - Extended data frame, type `data_ext` (0x81), sent only to peers that speak origin-v1:
//       header (37 bytes, as for type 1) · topic · origin endpoint_id (16 bytes)
//       · sequence u64 BE · hop count u8 · value bytes exactly as in a type-1 frame
//     (origin, sequence) identifies a publication network-wide; hops counts relays so far.

#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/topic.hh"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace broker::internal::wire {

// -- constants --------------------------------------------------------------------------------

/// ASCII "ZEEK", the first field of hello, probe, version_select and drop_conn.
inline constexpr uint32_t magic_number = 0x5A45454B;

/// The only protocol version; we send hello with min = max = 1.
inline constexpr uint8_t protocol_version = 1;

/// Size of the big-endian length in front of every frame.
inline constexpr size_t length_prefix_size = 4;

/// Default receive limit for a phase-3 frame payload (§1: 64 MiB; Broker's is 2^31 - 5).
inline constexpr uint32_t default_max_frame_size = 64u * 1024u * 1024u;

/// Receive limit for a handshake frame payload (§1; Broker has none).
inline constexpr uint32_t max_handshake_frame_size = 64u * 1024u;

/// The ttl of control frames and Broker's ttl on every frame (§5.1). A received ttl never
/// makes us drop a frame; it only limits relaying (§6).
inline constexpr uint16_t default_ttl = 16;

/// Size of a node message header: sender, receiver, type, ttl, topic_len.
inline constexpr size_t header_size = 37;

/// Largest topic a node message can carry (16-bit topic_len).
inline constexpr size_t max_topic_size = 0xFFFF;

/// The topic of routing_update, ping and pong frames.
inline constexpr std::string_view control_topic = "<$>";

/// Highest drop_conn code Broker recognises (§3.5, §10).
inline constexpr uint8_t max_known_error_code = 40;

/// Ping payload that asks whether the peer speaks origin-v1 (see the header comment).
inline constexpr std::string_view ext_probe_query = "BRKEXT?origin-v1";

/// Pong payload with which our nodes answer ext_probe_query (Broker echoes the query).
inline constexpr std::string_view ext_probe_answer = "BRKEXT!origin-v1";

/// Bytes between the topic and the value in a data_ext frame: origin, sequence, hops.
inline constexpr size_t extension_header_size = 16 + 8 + 1;

/// Size of a BYE ping payload: "BYE" and an 8-byte id.
inline constexpr size_t bye_payload_size = 11;

/// Message type codes (§2) plus our extension.
enum class message_type : uint8_t {
  data = 1,
  command = 2,
  routing_update = 3,
  ping = 4,
  pong = 5,
  hello = 6,
  probe = 7,
  version_select = 8,
  drop_conn = 9,
  originator_syn = 10,
  responder_syn_ack = 11,
  originator_ack = 12,
  data_ext = 0x81, ///< Extension origin-v1; only to peers that speak it.
};

/// The name of `x` in §2, e.g. "version_select"; "invalid" for other values.
std::string_view to_string(message_type x) noexcept;

// -- framing ----------------------------------------------------------------------------------

/// Appends the 4-byte big-endian frame length.
void append_frame_header(std::string& out, uint32_t len);

/// Splits a byte stream into frame payloads. Feed socket bytes in any chunking; pull frames
/// with next() until it returns need_more. Starts in the handshake phase.
class frame_reader {
public:
  /// Which rules apply to the next frame (§1).
  enum class phase : uint8_t {
    handshake, ///< Limit max_handshake_frame_size; an empty frame is an error.
    operation, ///< Limit from the constructor; empty frames are skipped.
  };

  /// What next() found.
  enum class status : uint8_t { frame, need_more, failed };

  /// One result of next(). `payload` (status frame) points into the reader and stays valid
  /// until the next call to feed(). `err` (status failed) names the framing error.
  struct result {
    status kind = status::need_more;
    std::string_view payload;
    error err;
  };

  /// `max_frame_size` is the phase-3 receive limit.
  explicit frame_reader(uint32_t max_frame_size = default_max_frame_size);

  /// Appends received bytes. Cheap: consumed bytes are dropped lazily (amortised O(1) per byte).
  void feed(std::string_view bytes);

  /// Extracts the next complete frame. A framing error is sticky: every later call returns
  /// the same failure, and the connection must close (without drop_conn).
  result next();

  /// Like next(), from bytes the caller holds (the reader's own buffer stays empty): the
  /// next frame at the start of `bytes`, `used` the bytes it took (empty frames skipped
  /// included; 0 when it needs more). The payload points into `bytes`. After a framing
  /// error the reader keeps the failed frame and what followed it (unread()).
  result next(std::string_view bytes, size_t& used);

  /// Switches to phase-3 rules; frames still buffered are read under them.
  void enter_operation() noexcept { phase_ = phase::operation; }

  /// The current phase.
  phase current_phase() const noexcept { return phase_; }

  /// Bytes received but not yet returned as frames.
  size_t buffered() const noexcept { return buf_.size() - pos_; }

  /// Those bytes (after a framing error: the frame that failed and what followed it).
  std::string_view unread() const noexcept { return std::string_view{buf_}.substr(pos_); }

  /// True until next() returned the first frame.
  bool at_start() const noexcept { return !started_; }

private:
  result parse(std::string_view bytes, size_t& used);
  result fail(error err);

  std::string buf_;
  size_t pos_ = 0;
  uint32_t max_frame_size_;
  phase phase_ = phase::handshake;
  bool started_ = false;
  error failure_;
};

/// Another protocol, recognised from the first bytes of a stream that does not frame as
/// the peering protocol (a handshake frame above 64 KiB is what TLS and HTTP look like).
enum class foreign_protocol : uint8_t {
  unknown,       ///< Nothing we recognise.
  tls,           ///< A TLS record (`16 03 01 ...`, a ClientHello): the peer speaks TLS.
  http_request,  ///< `GET / HTTP/1.1`: an HTTP client (a browser, a WebSocket client).
  http_response, ///< `HTTP/1.1 400 Bad Request`: an HTTP server answered our hello.
};

/// Which protocol `first_bytes` (the start of a stream) belongs to, if we know it.
foreign_protocol recognize_foreign(std::string_view first_bytes) noexcept;

/// For messages: the first line of `bytes`, printable ASCII only (others as '?'), at most
/// 60 characters.
std::string first_line(std::string_view bytes);

// -- filters (§4) ----------------------------------------------------------------------------

/// Appends varbyte(n) and n length-prefixed topics, sorted ascending and without duplicates
/// (sorting a copy only when `xs` is not already in that form).
void append_filter(std::string& out, const filter_type& xs);

/// Decodes a filter that must fill `bytes` exactly (a routing_update payload). Rejects a count
/// larger than the bytes can hold, an entry running past the end and trailing bytes.
/// Entries are returned as received (no sorting).
expected<filter_type> decode_filter(std::string_view bytes);

// -- phase 1 and 2 (§3, §4) ------------------------------------------------------------------

/// hello (6): sent by the dialer, and by a node that must become responder.
struct hello_msg {
  endpoint_id sender;
  uint8_t min_version = protocol_version;
  uint8_t max_version = protocol_version;
};

/// probe (7): sent by the acceptor first; no effect.
struct probe_msg {};

/// version_select (8): sent by the originator.
struct version_select_msg {
  endpoint_id sender;
  uint8_t version = protocol_version;
};

/// drop_conn (9): aborts the handshake with a Broker error code (0-40) and a text.
struct drop_conn_msg {
  endpoint_id sender;
  ec code = ec::unspecified;
  std::string description;
};

/// originator_syn (10): the originator's filter.
struct originator_syn_msg {
  filter_type filter;
};

/// responder_syn_ack (11): the responder's filter.
struct responder_syn_ack_msg {
  filter_type filter;
};

/// originator_ack (12): concludes the handshake.
struct originator_ack_msg {};

/// Any phase-1/2 message.
using handshake_message =
  std::variant<hello_msg, probe_msg, version_select_msg, drop_conn_msg, originator_syn_msg,
               responder_syn_ack_msg, originator_ack_msg>;

/// The message type code of `x`.
message_type type_of(const handshake_message& x) noexcept;

/// Appends a complete frame (length, tag, body). The magic number is always ours. A drop_conn
/// code above max_known_error_code is written as 1 (unspecified): Broker would reject it.
void append_frame(std::string& out, const handshake_message& x);

/// Convenience: one complete frame as a fresh string.
std::string make_frame(const handshake_message& x);

/// Decodes and validates one handshake payload (tag byte first) the way Broker does. On
/// failure the error's code and message are exactly the drop_conn code and description to
/// answer with (§3.5), e.g. {wrong_magic_number, "wrong magic number"}; a drop_conn
/// with an unknown code yields {unspecified, <its description>}. Trailing bytes are ignored.
expected<handshake_message> decode_handshake(std::string_view payload);

// -- phase 3 (§5) -----------------------------------------------------------------------------

/// A decoded node message. Views point into the frame payload passed to the decoder.
struct node_message_view {
  endpoint_id sender;   ///< The last hop.
  endpoint_id receiver; ///< Nil for broadcasts.
  message_type type = message_type::data;
  uint16_t ttl = default_ttl;
  std::string_view topic;
  std::string_view payload; ///< Everything after the topic, uninterpreted.
};

/// Parses the header of a phase-3 payload. Accepts types 1-5 and data_ext. Errors
/// (ec::invalid_message): "message too short", "invalid topic size", "invalid message type N".
/// They concern only this frame: drop it and keep the connection.
expected<node_message_view> decode_node_message(std::string_view payload);

/// Appends length prefix, header, topic and payload. Pre: `type` is a phase-3 type (1-5, or
/// data_ext, for which append_extended_data() is the usual call). Fails with ec::invalid_topic
/// for a topic longer than max_topic_size and ec::serialization_failed if the frame length
/// would not fit in 32 bits; `out` is unchanged then.
[[nodiscard]] error append_node_message(std::string& out, const endpoint_id& sender,
                                        const endpoint_id& receiver, message_type type,
                                        uint16_t ttl, std::string_view topic,
                                        std::string_view payload);

/// Appends a node-message frame without its last `payload_size` bytes, which the caller
/// sends right behind (a gathered write references a shared payload instead of copying
/// it). The length prefix covers them. Errors as for append_node_message().
[[nodiscard]] error append_node_message_head(std::string& out, const endpoint_id& sender,
                                             const endpoint_id& receiver, message_type type,
                                             uint16_t ttl, std::string_view topic,
                                             size_t payload_size);

/// Re-emits a received frame with a new sender (us) and ttl; receiver, type, topic and the
/// payload bytes are copied verbatim, so the value is never re-encoded.
void append_relayed(std::string& out, const node_message_view& msg, const endpoint_id& sender,
                    uint16_t ttl = default_ttl);

/// Appends routing_update(sender -> receiver) carrying `filter` (topic "<$>", default ttl).
void append_routing_update(std::string& out, const endpoint_id& sender,
                           const endpoint_id& receiver, const filter_type& filter);

/// Appends a ping (topic "<$>", default ttl) with an arbitrary payload.
void append_ping(std::string& out, const endpoint_id& sender, const endpoint_id& receiver,
                 std::string_view payload);

/// Appends the pong answering `ping`: sender = `own`, receiver = the ping's sender, topic
/// "<$>", default ttl, payload byte-identical (§5.5), except that our answer to an
/// ext_probe_query ping is ext_probe_answer.
void append_pong(std::string& out, const endpoint_id& own, const node_message_view& ping);

/// The 11-byte BYE ping payload: 'B' 'Y' 'E' and `id` in little-endian order (as Broker on x86).
std::string make_bye_payload(uint64_t id);

/// True if `payload` is a BYE token (11 bytes starting with "BYE").
bool is_bye(std::string_view payload) noexcept;

// -- extension origin-v1 ----------------------------------------------------------------------

/// The part of a data_ext payload after the topic.
struct extended_data {
  endpoint_id origin;        ///< The node that published the value.
  uint64_t sequence = 0;     ///< Per-origin publication counter.
  uint8_t hops = 0;          ///< Relays so far.
  std::string_view value;    ///< The value bytes, exactly as in a type-1 payload.
};

/// Splits a data_ext payload (node_message_view::payload). Fails (ec::invalid_message,
/// "extension header too short") if fewer than extension_header_size bytes are present. The
/// value is not checked; it goes to the value codec like a type-1 payload.
expected<extended_data> decode_extended_data(std::string_view payload);

/// Appends a data_ext frame without its value bytes (`ext.value` gives only their size),
/// which the caller sends right behind. Errors as for append_node_message().
[[nodiscard]] error append_extended_data_head(std::string& out, const endpoint_id& sender,
                                              const endpoint_id& receiver, uint16_t ttl,
                                              std::string_view topic,
                                              const extended_data& ext);

/// Appends a complete data_ext frame. Errors as for append_node_message().
[[nodiscard]] error append_extended_data(std::string& out, const endpoint_id& sender,
                                         const endpoint_id& receiver, uint16_t ttl,
                                         std::string_view topic, const extended_data& ext);

} // namespace broker::internal::wire
