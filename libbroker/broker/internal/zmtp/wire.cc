#include "broker/internal/zmtp/wire.hh"

#include <cstdio>

namespace broker::internal::zmtp {

namespace {

std::string hex_byte(uint8_t x) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", x);
  return buf;
}

uint64_t read_u64(const char* p) noexcept {
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i)
    x = (x << 8) | static_cast<uint8_t>(p[i]);
  return x;
}

uint32_t read_u32(const char* p) noexcept {
  uint32_t x = 0;
  for (int i = 0; i < 4; ++i)
    x = (x << 8) | static_cast<uint8_t>(p[i]);
  return x;
}

bool iequal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = a[i] >= 'A' && a[i] <= 'Z' ? a[i] + 32 : a[i];
    auto y = b[i] >= 'A' && b[i] <= 'Z' ? b[i] + 32 : b[i];
    if (x != y)
      return false;
  }
  return true;
}

error fail(errc code, std::string reason) {
  return error{code, std::move(reason)};
}

} // namespace

const char* to_string(errc code) noexcept {
  switch (code) {
    case errc::none: return "none";
    case errc::bad_greeting: return "bad_greeting";
    case errc::unsupported_version: return "unsupported_version";
    case errc::mechanism_mismatch: return "mechanism_mismatch";
    case errc::malformed_frame: return "malformed_frame";
    case errc::message_too_large: return "message_too_large";
    case errc::too_many_frames: return "too_many_frames";
    case errc::malformed_command: return "malformed_command";
    case errc::unexpected_command: return "unexpected_command";
    case errc::incompatible_peer: return "incompatible_peer";
    case errc::peer_error: return "peer_error";
    case errc::crypto_failure: return "crypto_failure";
    case errc::bad_nonce: return "bad_nonce";
    case errc::access_denied: return "access_denied";
    case errc::flood: return "flood";
    case errc::heartbeat_timeout: return "heartbeat_timeout";
    case errc::peer_closed: return "peer_closed";
  }
  return "unknown";
}

const char* to_string(socket_type type) noexcept {
  switch (type) {
    case socket_type::pub: return "PUB";
    case socket_type::sub: return "SUB";
    case socket_type::xpub: return "XPUB";
    case socket_type::xsub: return "XSUB";
    case socket_type::other: break;
  }
  return "OTHER";
}

socket_type parse_socket_type(std::string_view name) noexcept {
  // ZMTP compares socket types exactly (libzmq too): "xpub" is not a socket type.
  if (name == "PUB")
    return socket_type::pub;
  if (name == "SUB")
    return socket_type::sub;
  if (name == "XPUB")
    return socket_type::xpub;
  if (name == "XSUB")
    return socket_type::xsub;
  return socket_type::other;
}

bool compatible(socket_type ours, socket_type peer) noexcept {
  switch (ours) {
    case socket_type::pub:
    case socket_type::xpub:
      return peer == socket_type::sub || peer == socket_type::xsub;
    case socket_type::sub:
    case socket_type::xsub:
      return peer == socket_type::pub || peer == socket_type::xpub;
    case socket_type::other:
      break;
  }
  return false;
}

const char* to_string(mechanism mech) noexcept {
  return mech == mechanism::curve ? "CURVE" : "NULL";
}

// -- greeting ---------------------------------------------------------------------------------

std::string make_greeting(mechanism mech, bool as_server) {
  std::string out(greeting_size, '\0');
  // Signature: 0xff, 8 bytes of padding, 0x7f. libzmq writes the padding as a 64-bit length
  // of 1 so that ZMTP 1.0 peers read an empty identity frame; we do the same.
  out[0] = '\xff';
  out[8] = '\x01';
  out[9] = '\x7f';
  out[10] = 3; // major
  out[11] = 1; // minor
  std::string_view name = to_string(mech);
  out.replace(12, name.size(), name);
  out[32] = as_server ? 1 : 0;
  return out;
}

error check_greeting_prefix(std::string_view bytes) {
  if (!bytes.empty() && static_cast<uint8_t>(bytes[0]) != 0xff)
    return fail(errc::unsupported_version,
                "greeting: byte 0 is " + hex_byte(bytes[0])
                  + ", not 0xff: a ZMTP 1.0 peer or not ZMTP at all");
  if (bytes.size() > 9 && (bytes[9] & 0x01) == 0)
    return fail(errc::unsupported_version,
                "greeting: byte 9 is " + hex_byte(bytes[9])
                  + " (low bit clear): a ZMTP 1.0 peer, we speak 3.x");
  if (bytes.size() > 9 && static_cast<uint8_t>(bytes[9]) != 0x7f)
    return fail(errc::bad_greeting,
                "greeting: signature byte 9 is " + hex_byte(bytes[9]) + ", not 0x7f");
  if (bytes.size() > 10 && static_cast<uint8_t>(bytes[10]) < 3)
    return fail(errc::unsupported_version,
                "greeting: the peer speaks ZMTP " + std::to_string(bytes[10] + 1)
                  + ".0 (revision " + std::to_string(bytes[10]) + "), we speak 3.x");
  return {};
}

error parse_greeting(std::string_view bytes, greeting& out) {
  if (bytes.size() != greeting_size)
    return fail(errc::bad_greeting, "greeting: " + std::to_string(bytes.size())
                                      + " bytes, not 64");
  if (auto err = check_greeting_prefix(bytes))
    return err;
  out.major = static_cast<uint8_t>(bytes[10]);
  out.minor = static_cast<uint8_t>(bytes[11]);
  auto mech = bytes.substr(12, 20);
  auto end = mech.find('\0');
  auto name = mech.substr(0, end);
  if (name.empty())
    return fail(errc::bad_greeting, "greeting: empty mechanism name");
  // The name is NUL-padded: nothing but NULs may follow the first NUL.
  if (end != std::string_view::npos && mech.find_first_not_of('\0', end) != mech.npos)
    return fail(errc::bad_greeting, "greeting: mechanism field has bytes after its NUL padding");
  for (auto c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
          || c == '.' || c == '+'))
      return fail(errc::bad_greeting, "greeting: mechanism name has the byte "
                                        + hex_byte(c) + " (ZMTP allows A-Z, 0-9, -_.+)");
  out.mechanism = std::string{name};
  auto as_server = static_cast<uint8_t>(bytes[32]);
  if (as_server > 1)
    return fail(errc::bad_greeting, "greeting: as-server byte is " + hex_byte(as_server)
                                      + ", not 0 or 1");
  out.as_server = as_server == 1;
  // The filler (bytes 33-63) is ignored, as the spec says receivers must.
  return {};
}

// -- frames -----------------------------------------------------------------------------------

size_t write_frame_header(char* out, bool more, bool command, uint64_t size) noexcept {
  uint8_t flags = (more ? flag_more : 0) | (command ? flag_command : 0);
  if (size <= 255) {
    out[0] = static_cast<char>(flags);
    out[1] = static_cast<char>(size);
    return 2;
  }
  out[0] = static_cast<char>(flags | flag_long);
  for (int i = 0; i < 8; ++i)
    out[1 + i] = static_cast<char>(size >> (56 - 8 * i));
  return 9;
}

void append_frame_header(std::string& out, bool more, bool command, uint64_t size) {
  char buf[max_frame_header_size];
  out.append(buf, write_frame_header(buf, more, command, size));
}

parse_status parse_frame_header(std::string_view in, frame_header& out, error& err) {
  if (in.empty())
    return parse_status::need_more;
  auto flags = static_cast<uint8_t>(in[0]);
  if (flags & flags_reserved) {
    err = fail(errc::malformed_frame,
               "frame flags " + hex_byte(flags) + " set reserved bits (only MORE 0x01, "
                 "LONG 0x02 and COMMAND 0x04 exist)");
    return parse_status::failed;
  }
  if (flags & flag_long) {
    if (in.size() < 9)
      return parse_status::need_more;
    auto size = read_u64(in.data() + 1);
    if (size >> 63) {
      err = fail(errc::malformed_frame, "long frame size has its top bit set");
      return parse_status::failed;
    }
    out = frame_header{flags, size, 9};
    return parse_status::ok;
  }
  if (in.size() < 2)
    return parse_status::need_more;
  out = frame_header{flags, static_cast<uint8_t>(in[1]), 2};
  return parse_status::ok;
}

// -- commands ---------------------------------------------------------------------------------

void append_command(std::string& out, std::string_view name, std::string_view data) {
  append_frame_header(out, false, true, 1 + name.size() + data.size());
  out += static_cast<char>(name.size());
  out.append(name);
  out.append(data);
}

error parse_command(std::string_view body, command& out) {
  if (body.empty())
    return fail(errc::malformed_command, "empty command frame");
  auto len = static_cast<uint8_t>(body[0]);
  if (len == 0)
    return fail(errc::malformed_command, "command with an empty name");
  if (body.size() < 1u + len)
    return fail(errc::malformed_command,
                "command name of " + std::to_string(len) + " bytes in a frame of "
                  + std::to_string(body.size()));
  out.name = body.substr(1, len);
  out.data = body.substr(1 + len);
  return {};
}

void append_property(std::string& out, std::string_view name, std::string_view value) {
  out += static_cast<char>(name.size());
  out.append(name);
  auto n = static_cast<uint32_t>(value.size());
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>(n >> (24 - 8 * i));
  out.append(value);
}

error parse_properties(std::string_view data, properties& out) {
  out.clear();
  size_t pos = 0;
  while (pos < data.size()) {
    auto name_len = static_cast<uint8_t>(data[pos]);
    if (name_len == 0)
      return fail(errc::malformed_command,
                  "metadata: empty property name at offset " + std::to_string(pos));
    if (data.size() - pos - 1 < name_len + 4u)
      return fail(errc::malformed_command,
                  "metadata: property at offset " + std::to_string(pos) + " is truncated");
    auto name = data.substr(pos + 1, name_len);
    pos += 1 + name_len;
    auto value_len = read_u32(data.data() + pos);
    pos += 4;
    if (value_len > data.size() - pos)
      return fail(errc::malformed_command,
                  "metadata: value of '" + std::string{name} + "' claims "
                    + std::to_string(value_len) + " bytes, "
                    + std::to_string(data.size() - pos) + " remain");
    out.emplace_back(std::string{name}, std::string{data.substr(pos, value_len)});
    pos += value_len;
  }
  return {};
}

const std::string* find_property(const properties& props, std::string_view name) noexcept {
  for (auto& [key, value] : props)
    if (iequal(key, name))
      return &value;
  return nullptr;
}

std::string error_data(std::string_view reason) {
  reason = reason.substr(0, 255);
  std::string out;
  out += static_cast<char>(reason.size());
  out.append(reason);
  return out;
}

error parse_error_data(std::string_view data, std::string& reason) {
  if (data.empty())
    return fail(errc::malformed_command, "ERROR without a reason length");
  auto len = static_cast<uint8_t>(data[0]);
  if (data.size() - 1 < len)
    return fail(errc::malformed_command, "ERROR reason of " + std::to_string(len)
                                           + " bytes, " + std::to_string(data.size() - 1)
                                           + " present");
  reason.assign(data.substr(1, len));
  return {};
}

std::string ping_data(uint16_t ttl_deciseconds, std::string_view context) {
  std::string out;
  out += static_cast<char>(ttl_deciseconds >> 8);
  out += static_cast<char>(ttl_deciseconds & 0xff);
  out.append(context.substr(0, max_ping_context));
  return out;
}

error parse_ping_data(std::string_view data, uint16_t& ttl_deciseconds,
                      std::string_view& context) {
  if (data.size() < 2)
    return fail(errc::malformed_command,
                "PING with " + std::to_string(data.size()) + " bytes, needs a 2-byte TTL");
  if (data.size() - 2 > max_ping_context)
    return fail(errc::malformed_command, "PING context of " + std::to_string(data.size() - 2)
                                           + " bytes, at most 16 allowed");
  ttl_deciseconds = static_cast<uint16_t>((static_cast<uint8_t>(data[0]) << 8)
                                          | static_cast<uint8_t>(data[1]));
  context = data.substr(2);
  return {};
}

} // namespace broker::internal::zmtp
