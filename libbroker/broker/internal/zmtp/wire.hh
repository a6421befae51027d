#pragma once

// ZMTP 3.x on the wire (doc/protocol/zeromq.md; section numbers below are that page's): the
// greeting, frame headers and the command bodies every mechanism shares. Pure functions over
// bytes; no state, no sockets, safe from any thread.
//
// Who uses what:
//   - `session` (session.hh) parses the peer's greeting with `parse_greeting()`, reads frame
//     headers with `parse_frame_header()` and the commands with the `parse_*` functions.
//   - Everything we send is built here: `make_greeting()`, `append_frame_header()`,
//     `append_command()` and the command bodies (`ready_body()`, `ping_body()`, ...).
//   - Errors are values (`error`): a code and a sentence naming what was wrong, e.g.
//     "greeting: signature byte 0 is 0x01, not 0xff (not a ZMTP peer)".

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace broker::internal::zmtp {

// -- errors -----------------------------------------------------------------------------------

/// What went wrong on a connection; `error::reason` says it in a sentence.
enum class errc : uint8_t {
  none,
  bad_greeting,            ///< Not a ZMTP greeting (signature, filler).
  unsupported_version,     ///< ZMTP 1.0 or 2.0: we speak 3.0 and 3.1 only.
  mechanism_mismatch,      ///< The peer's security mechanism is not ours.
  malformed_frame,         ///< Reserved flag bits, a data frame where a command belongs, ...
  message_too_large,       ///< A frame or message over limits::max_message_size.
  too_many_frames,         ///< A multipart message over limits::max_frames.
  malformed_command,       ///< A command body that does not parse.
  unexpected_command,      ///< A valid command in the wrong state.
  incompatible_peer,       ///< Socket-Type the peer may not have with ours.
  peer_error,              ///< The peer sent ERROR.
  crypto_failure,          ///< A CURVE box did not open (wrong key or forged bytes).
  bad_nonce,               ///< A CURVE short nonce did not increase.
  access_denied,           ///< The CURVE client key is not allowed.
  flood,                   ///< The peer made us queue more control output than allowed.
  heartbeat_timeout,       ///< The caller saw no traffic within the heartbeat timeout.
  peer_closed,             ///< The connection ended before or during the handshake.
};

/// The code's name, e.g. "bad_greeting".
const char* to_string(errc code) noexcept;

/// An error with the sentence that names the offending bytes.
struct error {
  errc code = errc::none;
  std::string reason;

  explicit operator bool() const noexcept { return code != errc::none; }
};

// -- socket types and mechanisms --------------------------------------------------------------

/// The socket types we are (xpub, xsub) and those our peers may be (§6).
enum class socket_type : uint8_t { pub, sub, xpub, xsub, other };

/// The Socket-Type property value, e.g. "XPUB".
const char* to_string(socket_type type) noexcept;

/// Parses a Socket-Type property value; unknown names give socket_type::other.
socket_type parse_socket_type(std::string_view name) noexcept;

/// Whether a peer of type `peer` may talk to us as `ours`: XPUB with SUB or XSUB, XSUB with
/// PUB or XPUB (and PUB, SUB likewise).
bool compatible(socket_type ours, socket_type peer) noexcept;

/// The security mechanisms we speak.
enum class mechanism : uint8_t { null, curve };

/// "NULL" or "CURVE".
const char* to_string(mechanism mech) noexcept;

// -- greeting (§2) ----------------------------------------------------------------------------

inline constexpr size_t greeting_size = 64;

/// What a peer's greeting says.
struct greeting {
  uint8_t major = 3;
  uint8_t minor = 1;
  std::string mechanism; ///< Without the NUL padding, e.g. "NULL".
  bool as_server = false;
};

/// Our 64-byte greeting: version 3.1, `mech`, the as-server flag.
std::string make_greeting(mechanism mech, bool as_server);

/// Checks the first `bytes.size()` bytes of a peer greeting (any prefix, for early errors):
/// returns an error as soon as the prefix shows a non-ZMTP peer or version 1.0/2.0.
error check_greeting_prefix(std::string_view bytes);

/// Parses a complete 64-byte greeting.
error parse_greeting(std::string_view bytes, greeting& out);

// -- frames (§3) ------------------------------------------------------------------------------

inline constexpr uint8_t flag_more = 0x01;
inline constexpr uint8_t flag_long = 0x02;
inline constexpr uint8_t flag_command = 0x04;
inline constexpr uint8_t flags_reserved = 0xf8;

/// Longest frame header: flags + 8-byte size.
inline constexpr size_t max_frame_header_size = 9;

/// Writes a frame header (short form up to 255 bytes, long above) into `out`, which holds at
/// least max_frame_header_size bytes; returns its length (2 or 9).
size_t write_frame_header(char* out, bool more, bool command, uint64_t size) noexcept;

/// Appends a frame header to `out`.
void append_frame_header(std::string& out, bool more, bool command, uint64_t size);

/// A parsed frame header.
struct frame_header {
  uint8_t flags = 0;
  uint64_t size = 0;
  size_t header_size = 0; ///< 2 or 9.

  bool more() const noexcept { return flags & flag_more; }
  bool command() const noexcept { return flags & flag_command; }
};

/// Outcome of parse_frame_header().
enum class parse_status : uint8_t { ok, need_more, failed };

/// Parses the header at the start of `in`: need_more when it is incomplete, failed (with
/// `err` set) for reserved flag bits or a size that does not fit 63 bits.
parse_status parse_frame_header(std::string_view in, frame_header& out, error& err);

// -- commands (§4) ----------------------------------------------------------------------------

/// Appends one command frame: header, name length, name, `data`.
void append_command(std::string& out, std::string_view name, std::string_view data);

/// A command body split into its name and data.
struct command {
  std::string_view name;
  std::string_view data;
};

/// Splits a command frame body; fails for an empty body or a name longer than the body.
error parse_command(std::string_view body, command& out);

/// Metadata properties (READY, CURVE INITIATE): name/value pairs in wire order.
using properties = std::vector<std::pair<std::string, std::string>>;

/// Appends one property: name length (1 byte), name, value length (4 bytes BE), value.
void append_property(std::string& out, std::string_view name, std::string_view value);

/// Parses a property list, which must fill `data` exactly; names are 1-255 bytes.
error parse_properties(std::string_view data, properties& out);

/// The value of property `name` (compared ignoring ASCII case), or nullptr.
const std::string* find_property(const properties& props, std::string_view name) noexcept;

/// ERROR data: reason length (1 byte) and reason (at most 255 bytes, longer is cut).
std::string error_data(std::string_view reason);

/// Parses ERROR data into `reason`.
error parse_error_data(std::string_view data, std::string& reason);

/// Longest PING context (ZMTP 3.1).
inline constexpr size_t max_ping_context = 16;

/// PING data: TTL in deciseconds (2 bytes BE) and up to 16 bytes of context.
std::string ping_data(uint16_t ttl_deciseconds, std::string_view context);

/// Parses PING data; fails below 2 bytes or with more than 16 bytes of context.
error parse_ping_data(std::string_view data, uint16_t& ttl_deciseconds,
                      std::string_view& context);

} // namespace broker::internal::zmtp
