#include "broker/internal/peering/wire.hh"

#include "broker/internal/codec/bin.hh"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <iterator>
#include <limits>

namespace broker::internal::wire {

namespace {

// -- big-endian primitives --------------------------------------------------------------------

void put_u8(std::string& out, uint8_t x) {
  out.push_back(static_cast<char>(x));
}

void put_u16(std::string& out, uint16_t x) {
  char buf[] = {static_cast<char>(x >> 8), static_cast<char>(x)};
  out.append(buf, sizeof(buf));
}

void put_u32(std::string& out, uint32_t x) {
  char buf[] = {static_cast<char>(x >> 24), static_cast<char>(x >> 16),
                static_cast<char>(x >> 8), static_cast<char>(x)};
  out.append(buf, sizeof(buf));
}

void put_u64(std::string& out, uint64_t x) {
  put_u32(out, static_cast<uint32_t>(x >> 32));
  put_u32(out, static_cast<uint32_t>(x));
}

void put_id(std::string& out, const endpoint_id& id) {
  out.append(reinterpret_cast<const char*>(id.bytes().data()), id.bytes().size());
}

uint64_t get_be(const char* p, size_t n) noexcept {
  uint64_t result = 0;
  for (size_t i = 0; i < n; ++i)
    result = (result << 8) | static_cast<uint8_t>(p[i]);
  return result;
}

endpoint_id get_id(const char* p) noexcept {
  endpoint_id::bytes_type bytes;
  std::memcpy(bytes.data(), p, bytes.size());
  return endpoint_id{bytes};
}

/// Bounds-checked cursor over a payload. Every read returns false on truncation and then
/// leaves the position unspecified (callers give up on the first failure).
class cursor {
public:
  cursor(std::string_view in, size_t pos) noexcept : in_(in), pos_(pos) {}

  size_t remaining() const noexcept { return in_.size() - pos_; }
  size_t position() const noexcept { return pos_; }

  bool u8(uint8_t& x) noexcept { return fixed(1, x); }
  bool u32(uint32_t& x) noexcept { return fixed(4, x); }

  bool id(endpoint_id& x) noexcept {
    if (remaining() < endpoint_id::bytes_type{}.size())
      return false;
    x = get_id(in_.data() + pos_);
    pos_ += endpoint_id::bytes_type{}.size();
    return true;
  }

  bool varbyte(uint32_t& x) noexcept { return bin::read_varbyte(in_, pos_, x); }

  bool bytes(size_t n, std::string_view& x) noexcept {
    if (remaining() < n)
      return false;
    x = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }

private:
  template <class T>
  bool fixed(size_t n, T& x) noexcept {
    if (remaining() < n)
      return false;
    x = static_cast<T>(get_be(in_.data() + pos_, n));
    pos_ += n;
    return true;
  }

  std::string_view in_;
  size_t pos_;
};

// -- frames -----------------------------------------------------------------------------------

/// Reserves the length prefix; finish_frame() fills it in once the payload is written.
size_t begin_frame(std::string& out) {
  auto start = out.size();
  put_u32(out, 0);
  return start;
}

/// Writes `len` as the big-endian length prefix at `start`.
void put_u32_at(std::string& out, size_t start, size_t len) {
  assert(len <= std::numeric_limits<uint32_t>::max());
  for (size_t i = 0; i < length_prefix_size; ++i)
    out[start + i] = static_cast<char>(len >> (8 * (length_prefix_size - 1 - i)));
}

void finish_frame(std::string& out, size_t start) {
  put_u32_at(out, start, out.size() - start - length_prefix_size);
}

// -- filters ----------------------------------------------------------------------------------

bool strictly_ascending(const filter_type& xs) {
  auto not_less = [](const topic& x, const topic& y) { return !(x < y); };
  return std::adjacent_find(xs.begin(), xs.end(), not_less) == xs.end();
}

void append_sorted_filter(std::string& out, const filter_type& xs) {
  assert(xs.size() <= std::numeric_limits<uint32_t>::max());
  bin::write_varbyte(static_cast<uint32_t>(xs.size()), out);
  for (const auto& x : xs) {
    assert(x.view().size() <= std::numeric_limits<uint32_t>::max());
    bin::write_varbyte(static_cast<uint32_t>(x.view().size()), out);
    out.append(x.view());
  }
}

/// Reads varbyte(n) and n entries at the cursor. Returns what went wrong, or nullptr.
const char* read_filter(cursor& in, filter_type& out) {
  uint32_t count = 0;
  if (!in.varbyte(count))
    return "truncated filter count";
  // Every entry needs at least its length byte: this bounds the allocation by the input.
  if (count > in.remaining())
    return "filter count exceeds the payload";
  out.clear();
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = 0;
    std::string_view str;
    if (!in.varbyte(len))
      return "truncated filter entry length";
    if (!in.bytes(len, str))
      return "filter entry runs past the end";
    out.emplace_back(str);
  }
  return nullptr;
}

// -- handshake decoding -----------------------------------------------------------------------

using decoded = expected<handshake_message>;

decoded parse_failure(std::string_view what) {
  return decoded{ec::invalid_message, "failed to parse " + std::string{what}};
}

decoded wrong_magic() {
  return decoded{ec::wrong_magic_number, "wrong magic number"};
}

decoded decode_hello(cursor& in) {
  uint32_t magic = 0;
  hello_msg msg;
  if (!in.u32(magic) || !in.id(msg.sender) || !in.u8(msg.min_version)
      || !in.u8(msg.max_version))
    return parse_failure("hello_msg");
  if (magic != magic_number)
    return wrong_magic();
  if (msg.min_version > protocol_version || msg.max_version < protocol_version)
    return decoded{ec::peer_incompatible, "unsupported versions offered"};
  return handshake_message{msg};
}

decoded decode_probe(cursor& in) {
  uint32_t magic = 0;
  if (!in.u32(magic))
    return parse_failure("probe_msg");
  if (magic != magic_number)
    return wrong_magic();
  return handshake_message{probe_msg{}};
}

decoded decode_version_select(cursor& in) {
  uint32_t magic = 0;
  version_select_msg msg;
  if (!in.u32(magic) || !in.id(msg.sender) || !in.u8(msg.version))
    return parse_failure("version_select_msg");
  if (magic != magic_number)
    return wrong_magic();
  if (msg.version != protocol_version)
    return decoded{ec::peer_incompatible, "unsupported version selected"};
  return handshake_message{msg};
}

decoded decode_drop_conn(cursor& in) {
  uint32_t magic = 0;
  uint8_t code = 0;
  uint32_t len = 0;
  std::string_view description;
  drop_conn_msg msg;
  if (!in.u32(magic) || !in.id(msg.sender) || !in.u8(code) || !in.varbyte(len)
      || !in.bytes(len, description))
    return parse_failure("drop_conn_msg");
  if (magic != magic_number)
    return wrong_magic();
  // Broker answers an unknown code with its own drop_conn, echoing the description.
  if (code > max_known_error_code)
    return decoded{ec::unspecified, std::string{description}};
  msg.code = static_cast<ec>(code);
  msg.description = description;
  return handshake_message{std::move(msg)};
}

template <class Message>
decoded decode_filter_message(cursor& in, std::string_view name) {
  Message msg;
  if (read_filter(in, msg.filter) != nullptr)
    return parse_failure(name);
  return handshake_message{std::move(msg)};
}

// -- handshake encoding -----------------------------------------------------------------------

void put_body(std::string& out, const hello_msg& x) {
  put_u32(out, magic_number);
  put_id(out, x.sender);
  put_u8(out, x.min_version);
  put_u8(out, x.max_version);
}

void put_body(std::string& out, const probe_msg&) {
  put_u32(out, magic_number);
}

void put_body(std::string& out, const version_select_msg& x) {
  put_u32(out, magic_number);
  put_id(out, x.sender);
  put_u8(out, x.version);
}

void put_body(std::string& out, const drop_conn_msg& x) {
  auto code = static_cast<uint8_t>(x.code);
  if (code > max_known_error_code)
    code = static_cast<uint8_t>(ec::unspecified);
  put_u32(out, magic_number);
  put_id(out, x.sender);
  put_u8(out, code);
  assert(x.description.size() <= std::numeric_limits<uint32_t>::max());
  bin::write_varbyte(static_cast<uint32_t>(x.description.size()), out);
  out.append(x.description);
}

void put_body(std::string& out, const originator_syn_msg& x) {
  append_filter(out, x.filter);
}

void put_body(std::string& out, const responder_syn_ack_msg& x) {
  append_filter(out, x.filter);
}

void put_body(std::string&, const originator_ack_msg&) {
  // The tag is the whole message.
}

// -- node messages ----------------------------------------------------------------------------

constexpr size_t max_frame_payload = std::numeric_limits<uint32_t>::max();

bool known_node_type(uint8_t type) noexcept {
  return (type >= static_cast<uint8_t>(message_type::data)
          && type <= static_cast<uint8_t>(message_type::pong))
         || type == static_cast<uint8_t>(message_type::data_ext);
}

/// Writes length, header and topic; the caller appends the rest and calls finish_frame().
size_t begin_node_message(std::string& out, const endpoint_id& sender,
                          const endpoint_id& receiver, message_type type, uint16_t ttl,
                          std::string_view topic) {
  assert(topic.size() <= max_topic_size);
  auto start = begin_frame(out);
  put_id(out, sender);
  put_id(out, receiver);
  put_u8(out, static_cast<uint8_t>(type));
  put_u16(out, ttl);
  put_u16(out, static_cast<uint16_t>(topic.size()));
  out.append(topic);
  return start;
}

error check_sizes(std::string_view topic, size_t rest) {
  if (topic.size() > max_topic_size)
    return error{ec::invalid_topic, "topic of " + std::to_string(topic.size())
                                      + " bytes exceeds the maximum of 65535"};
  if (rest > max_frame_payload - header_size - topic.size())
    return error{ec::serialization_failed, "node message exceeds 2^32-1 bytes"};
  return {};
}

void append_control(std::string& out, const endpoint_id& sender, const endpoint_id& receiver,
                    message_type type, std::string_view payload) {
  auto start = begin_node_message(out, sender, receiver, type, default_ttl, control_topic);
  out.append(payload);
  finish_frame(out, start);
}

} // namespace

// -- message types ----------------------------------------------------------------------------

std::string_view to_string(message_type x) noexcept {
  switch (x) {
    case message_type::data:
      return "data";
    case message_type::command:
      return "command";
    case message_type::routing_update:
      return "routing_update";
    case message_type::ping:
      return "ping";
    case message_type::pong:
      return "pong";
    case message_type::hello:
      return "hello";
    case message_type::probe:
      return "probe";
    case message_type::version_select:
      return "version_select";
    case message_type::drop_conn:
      return "drop_conn";
    case message_type::originator_syn:
      return "originator_syn";
    case message_type::responder_syn_ack:
      return "responder_syn_ack";
    case message_type::originator_ack:
      return "originator_ack";
    case message_type::data_ext:
      return "data_ext";
  }
  return "invalid";
}

// -- framing ----------------------------------------------------------------------------------

void append_frame_header(std::string& out, uint32_t len) {
  put_u32(out, len);
}

frame_reader::frame_reader(uint32_t max_frame_size) : max_frame_size_(max_frame_size) {
  // nop
}

void frame_reader::feed(std::string_view bytes) {
  // Compact only once the consumed prefix is at least as large as the unread rest: each
  // moved byte is then paid for by a consumed one, so feeding stays linear overall.
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > 0 && pos_ >= buf_.size() - pos_) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

frame_reader::result frame_reader::next() {
  size_t used = 0;
  auto res = parse(std::string_view{buf_}.substr(pos_), used);
  pos_ += used; // A failure leaves the failed frame unread.
  return res;
}

frame_reader::result frame_reader::next(std::string_view bytes, size_t& used) {
  used = 0;
  bool first_failure = !failure_;
  auto res = parse(bytes, used);
  if (res.kind == status::failed && first_failure) {
    buf_.assign(bytes.substr(used)); // For unread(): the diagnosis looks at these bytes.
    pos_ = 0;
  }
  return res;
}

frame_reader::result frame_reader::parse(std::string_view bytes, size_t& used) {
  if (failure_)
    return {status::failed, {}, failure_};
  for (;;) {
    auto rest = bytes.size() - used;
    if (rest < length_prefix_size)
      return {};
    auto len = static_cast<uint32_t>(get_be(bytes.data() + used, length_prefix_size));
    auto handshake = phase_ == phase::handshake;
    if (len == 0) {
      if (handshake)
        return fail(error{ec::invalid_message, "empty frame during the handshake"});
      used += length_prefix_size; // doc/protocol/peering.md §1: operation skips empty frames
      continue;
    }
    auto limit = handshake ? max_handshake_frame_size : max_frame_size_;
    if (len > limit)
      return fail(error{ec::invalid_message, "frame of " + std::to_string(len)
                                               + " bytes exceeds the limit of "
                                               + std::to_string(limit)});
    if (rest - length_prefix_size < len)
      return {};
    auto payload = bytes.substr(used + length_prefix_size, len);
    used += length_prefix_size + len;
    started_ = true;
    return {status::frame, payload, {}};
  }
}

frame_reader::result frame_reader::fail(error err) {
  failure_ = std::move(err);
  return {status::failed, {}, failure_};
}

foreign_protocol recognize_foreign(std::string_view x) noexcept {
  auto starts_with = [x](std::string_view prefix) {
    return x.substr(0, prefix.size()) == prefix;
  };
  // A TLS record: content type change_cipher_spec (0x14), alert, handshake or application
  // data (0x17), then the major version 3.
  if (x.size() >= 2 && x[0] >= 0x14 && x[0] <= 0x17 && x[1] == 0x03)
    return foreign_protocol::tls;
  if (starts_with("HTTP/"))
    return foreign_protocol::http_response;
  for (auto method : {"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH ",
                      "CONNECT ", "TRACE "})
    if (starts_with(method))
      return foreign_protocol::http_request;
  return foreign_protocol::unknown;
}

std::string first_line(std::string_view bytes) {
  constexpr size_t max_size = 60;
  std::string result;
  for (auto c : bytes) {
    if (c == '\r' || c == '\n' || result.size() == max_size)
      break;
    result += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return result;
}

// -- filters ----------------------------------------------------------------------------------

void append_filter(std::string& out, const filter_type& xs) {
  if (strictly_ascending(xs)) {
    append_sorted_filter(out, xs);
    return;
  }
  auto copy = xs;
  std::sort(copy.begin(), copy.end());
  copy.erase(std::unique(copy.begin(), copy.end()), copy.end());
  append_sorted_filter(out, copy);
}

expected<filter_type> decode_filter(std::string_view bytes) {
  cursor in{bytes, 0};
  filter_type result;
  if (auto what = read_filter(in, result))
    return error{ec::invalid_message, what};
  if (in.remaining() != 0)
    return error{ec::invalid_message, "trailing bytes after filter"};
  return result;
}

// -- phase 1 and 2 ----------------------------------------------------------------------------

message_type type_of(const handshake_message& x) noexcept {
  static constexpr message_type types[] = {
    message_type::hello,          message_type::probe,
    message_type::version_select, message_type::drop_conn,
    message_type::originator_syn, message_type::responder_syn_ack,
    message_type::originator_ack,
  };
  static_assert(std::size(types) == std::variant_size_v<handshake_message>);
  return types[x.index()];
}

void append_frame(std::string& out, const handshake_message& x) {
  auto start = begin_frame(out);
  put_u8(out, static_cast<uint8_t>(type_of(x)));
  std::visit([&out](const auto& msg) { put_body(out, msg); }, x);
  finish_frame(out, start);
}

std::string make_frame(const handshake_message& x) {
  std::string out;
  append_frame(out, x);
  return out;
}

expected<handshake_message> decode_handshake(std::string_view payload) {
  if (payload.empty())
    return decoded{ec::invalid_message, "invalid message type tag"};
  cursor in{payload, 1};
  switch (static_cast<message_type>(static_cast<uint8_t>(payload[0]))) {
    case message_type::hello:
      return decode_hello(in);
    case message_type::probe:
      return decode_probe(in);
    case message_type::version_select:
      return decode_version_select(in);
    case message_type::drop_conn:
      return decode_drop_conn(in);
    case message_type::originator_syn:
      return decode_filter_message<originator_syn_msg>(in, "v1::originator_syn_msg");
    case message_type::responder_syn_ack:
      return decode_filter_message<responder_syn_ack_msg>(in, "v1::responder_syn_ack_msg");
    case message_type::originator_ack:
      return handshake_message{originator_ack_msg{}};
    default:
      return decoded{ec::invalid_message, "invalid message type tag"};
  }
}

// -- phase 3 ----------------------------------------------------------------------------------

expected<node_message_view> decode_node_message(std::string_view payload) {
  if (payload.size() < header_size)
    return error{ec::invalid_message, "message too short"};
  const char* p = payload.data();
  auto type = static_cast<uint8_t>(p[32]);
  if (!known_node_type(type))
    return error{ec::invalid_message, "invalid message type " + std::to_string(type)};
  auto topic_len = static_cast<size_t>(get_be(p + 35, 2));
  if (topic_len > payload.size() - header_size)
    return error{ec::invalid_message, "invalid topic size"};
  node_message_view result;
  result.sender = get_id(p);
  result.receiver = get_id(p + 16);
  result.type = static_cast<message_type>(type);
  result.ttl = static_cast<uint16_t>(get_be(p + 33, 2));
  result.topic = payload.substr(header_size, topic_len);
  result.payload = payload.substr(header_size + topic_len);
  return result;
}

error append_node_message(std::string& out, const endpoint_id& sender,
                          const endpoint_id& receiver, message_type type, uint16_t ttl,
                          std::string_view topic, std::string_view payload) {
  if (auto err = check_sizes(topic, payload.size()))
    return err;
  auto start = begin_node_message(out, sender, receiver, type, ttl, topic);
  out.append(payload);
  finish_frame(out, start);
  return {};
}

error append_node_message_head(std::string& out, const endpoint_id& sender,
                               const endpoint_id& receiver, message_type type, uint16_t ttl,
                               std::string_view topic, size_t payload_size) {
  if (auto err = check_sizes(topic, payload_size))
    return err;
  auto start = begin_node_message(out, sender, receiver, type, ttl, topic);
  put_u32_at(out, start, out.size() - start - length_prefix_size + payload_size);
  return {};
}

void append_relayed(std::string& out, const node_message_view& msg, const endpoint_id& sender,
                    uint16_t ttl) {
  auto start = begin_node_message(out, sender, msg.receiver, msg.type, ttl, msg.topic);
  out.append(msg.payload);
  finish_frame(out, start);
}

void append_routing_update(std::string& out, const endpoint_id& sender,
                           const endpoint_id& receiver, const filter_type& filter) {
  auto start = begin_node_message(out, sender, receiver, message_type::routing_update,
                                  default_ttl, control_topic);
  append_filter(out, filter);
  finish_frame(out, start);
}

void append_ping(std::string& out, const endpoint_id& sender, const endpoint_id& receiver,
                 std::string_view payload) {
  append_control(out, sender, receiver, message_type::ping, payload);
}

void append_pong(std::string& out, const endpoint_id& own, const node_message_view& ping) {
  auto payload = ping.payload == ext_probe_query ? ext_probe_answer : ping.payload;
  append_control(out, own, ping.sender, message_type::pong, payload);
}

std::string make_bye_payload(uint64_t id) {
  std::string out = "BYE";
  for (size_t i = 0; i < sizeof(id); ++i)
    out.push_back(static_cast<char>(id >> (8 * i)));
  return out;
}

bool is_bye(std::string_view payload) noexcept {
  return payload.size() == bye_payload_size && payload.substr(0, 3) == "BYE";
}

// -- extension origin-v1 ----------------------------------------------------------------------

expected<extended_data> decode_extended_data(std::string_view payload) {
  if (payload.size() < extension_header_size)
    return error{ec::invalid_message, "extension header too short"};
  extended_data result;
  result.origin = get_id(payload.data());
  result.sequence = get_be(payload.data() + 16, 8);
  result.hops = static_cast<uint8_t>(payload[24]);
  result.value = payload.substr(extension_header_size);
  return result;
}

error append_extended_data_head(std::string& out, const endpoint_id& sender,
                                const endpoint_id& receiver, uint16_t ttl,
                                std::string_view topic, const extended_data& ext) {
  if (auto err = check_sizes(topic, extension_header_size + ext.value.size()))
    return err;
  auto start = begin_node_message(out, sender, receiver, message_type::data_ext, ttl, topic);
  put_id(out, ext.origin);
  put_u64(out, ext.sequence);
  put_u8(out, ext.hops);
  put_u32_at(out, start, out.size() - start - length_prefix_size + ext.value.size());
  return {};
}

error append_extended_data(std::string& out, const endpoint_id& sender,
                           const endpoint_id& receiver, uint16_t ttl, std::string_view topic,
                           const extended_data& ext) {
  if (auto err = check_sizes(topic, extension_header_size + ext.value.size()))
    return err;
  auto start = begin_node_message(out, sender, receiver, message_type::data_ext, ttl, topic);
  put_id(out, ext.origin);
  put_u64(out, ext.sequence);
  put_u8(out, ext.hops);
  out.append(ext.value);
  finish_frame(out, start);
  return {};
}

} // namespace broker::internal::wire
