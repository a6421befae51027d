#include "broker/internal/web/ws_frame.hh"

#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace broker::internal::ws {

namespace {

/// After a large message, a buffer above this size is released once it is empty.
constexpr size_t shrink_threshold = 1024 * 1024;

uint16_t load_be16(const char* p) noexcept {
  auto u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>((u[0] << 8) | u[1]);
}

uint64_t load_be64(const char* p) noexcept {
  auto u = reinterpret_cast<const unsigned char*>(p);
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i)
    x = (x << 8) | u[i];
  return x;
}

constexpr uint64_t high_bits = 0x8080808080808080ull;

/// XORs the `n` bytes at `data` with the 4-byte `key` (RFC 6455 §5.3) and tells whether
/// any unmasked byte is >= 0x80, so that an all-ASCII text message (the common case) needs
/// no UTF-8 validation: one pass over the payload instead of two. 16 bytes at a time with
/// SSE2 (every x86-64 CPU); the last, partial block is done as one overlapping block whose
/// bytes are computed from the masked input before the loop writes any of them.
bool unmask(char* data, size_t n, const char* key) noexcept {
  uint32_t k32;
  std::memcpy(&k32, key, 4);
  size_t i = 0;
#if defined(__SSE2__)
  if (n >= 16) {
    // The key phase at the tail block's start: byte j of each lane is key[(t + j) % 4].
    auto t = n - 16;
    auto shift = 8 * static_cast<unsigned>(t % 4);
    auto tail_key = shift == 0 ? k32 : (k32 >> shift) | (k32 << (32 - shift));
    auto tail = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + t)),
                              _mm_set1_epi32(static_cast<int>(tail_key)));
    auto wide_key = _mm_set1_epi32(static_cast<int>(k32));
    auto seen = tail;
    for (; i + 16 <= n; i += 16) {
      auto p = reinterpret_cast<__m128i*>(data + i);
      auto x = _mm_xor_si128(_mm_loadu_si128(p), wide_key);
      _mm_storeu_si128(p, x);
      seen = _mm_or_si128(seen, x);
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(data + t), tail);
    return _mm_movemask_epi8(seen) != 0;
  }
#endif
  uint64_t wide = k32 | (uint64_t{k32} << 32);
  uint64_t seen = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t chunk;
    std::memcpy(&chunk, data + i, 8);
    chunk ^= wide;
    std::memcpy(data + i, &chunk, 8);
    seen |= chunk;
  }
  for (; i < n; ++i) {
    auto c = static_cast<unsigned char>(data[i]) ^ static_cast<unsigned char>(key[i % 4]);
    data[i] = static_cast<char>(c);
    seen |= c;
  }
  return (seen & high_bits) != 0;
}

} // namespace

bool is_valid_close_code(uint16_t code) noexcept {
  if (code >= 3000 && code <= 4999)
    return true; // Registered by libraries (3xxx) and private use (4xxx).
  switch (code) {
    case 1000: // normal
    case 1001: // going away
    case 1002: // protocol error
    case 1003: // unsupported data
    case 1007: // invalid payload data
    case 1008: // policy violation
    case 1009: // message too big
    case 1010: // mandatory extension
    case 1011: // internal error
    case 1012: // service restart
    case 1013: // try again later
    case 1014: // bad gateway
      return true;
    default:
      return false; // 1004-1006 and 1015 are reserved; below 1000 and above 4999 unused.
  }
}

bool is_valid_utf8(std::string_view bytes) noexcept {
  auto p = reinterpret_cast<const unsigned char*>(bytes.data());
  auto end = p + bytes.size();
  while (p < end) {
    // Fast path: ASCII 16 or 8 bytes at a time.
#if defined(__SSE2__)
    if (end - p >= 16
        && _mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))) == 0) {
      p += 16;
      continue;
    }
#endif
    if (end - p >= 8) {
      uint64_t chunk;
      std::memcpy(&chunk, p, 8);
      if ((chunk & high_bits) == 0) {
        p += 8;
        continue;
      }
    }
    auto c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t n;
    uint32_t min;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      n = 1, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, min = 0x10000, cp = c & 0x07;
    } else {
      return false;
    }
    if (static_cast<size_t>(end - p) <= n)
      return false;
    for (size_t i = 1; i <= n; ++i) {
      if ((p[i] & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    p += n + 1;
  }
  return true;
}

void append_header(std::string& out, opcode op, uint64_t payload_size) {
  char hdr[10];
  size_t n = 2;
  hdr[0] = static_cast<char>(0x80 | static_cast<uint8_t>(op));
  if (payload_size < 126) {
    hdr[1] = static_cast<char>(payload_size);
  } else if (payload_size <= 0xFFFF) {
    hdr[1] = 126;
    hdr[2] = static_cast<char>(payload_size >> 8);
    hdr[3] = static_cast<char>(payload_size & 0xFF);
    n = 4;
  } else {
    hdr[1] = 127;
    for (int i = 0; i < 8; ++i)
      hdr[2 + i] = static_cast<char>((payload_size >> (56 - 8 * i)) & 0xFF);
    n = 10;
  }
  out.append(hdr, n);
}

std::string make_frame(opcode op, std::string_view payload) {
  if (static_cast<uint8_t>(op) & 0x8)
    payload = payload.substr(0, max_control_payload);
  std::string result;
  result.reserve(payload.size() + 10);
  append_header(result, op, payload.size());
  result.append(payload.data(), payload.size());
  return result;
}

std::string make_close_frame(uint16_t code, std::string_view reason) {
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xFF));
  reason = reason.substr(0, max_control_payload - 2);
  // Cutting may split a multi-byte character; drop the partial one.
  while (!reason.empty() && !is_valid_utf8(reason))
    reason.remove_suffix(1);
  payload.append(reason.data(), reason.size());
  return make_frame(opcode::close, payload);
}

// -- reader -------------------------------------------------------------------------------

reader::reader(size_t max_message_size) : max_message_size_(max_message_size) {
}

reader::cold_state& reader::cold() {
  if (!cold_)
    cold_ = std::make_unique<cold_state>();
  return *cold_;
}

char* reader::prepare(size_t n) {
  auto& c = cold();
  if (c.pos == c.end) {
    c.pos = c.end = 0;
    if (c.buf.size() > shrink_threshold && c.buf.size() > n)
      std::string{}.swap(c.buf);
    if (c.fragments.empty() && c.fragments.capacity() > shrink_threshold)
      std::string{}.swap(c.fragments);
  } else if (c.pos > 0) {
    std::memmove(c.buf.data(), c.buf.data() + c.pos, c.end - c.pos);
    c.end -= c.pos;
    c.pos = 0;
  }
  if (c.buf.size() < c.end + n)
    c.buf.resize(c.end + n);
  return c.buf.data() + c.end;
}

void reader::feed(std::string_view bytes) {
  auto dst = prepare(bytes.size());
  std::memcpy(dst, bytes.data(), bytes.size());
  commit(bytes.size());
}

event reader::failure(uint16_t code, std::string_view why) {
  failed_ = true;
  fail_code_ = code;
  auto& reason = cold().fail_reason;
  reason = std::string{why};
  event result;
  result.kind = event::fail;
  result.code = code;
  result.payload = reason;
  return result;
}

event reader::next() {
  auto& c = cold();
  return next(c.buf.data(), c.end, c.pos);
}

event reader::next(char* data, size_t size, size_t& pos) {
  if (failed_) {
    event result;
    result.kind = event::fail;
    result.code = fail_code_;
    result.payload = cold_->fail_reason;
    return result;
  }
  if (cold_ && !in_message_ && cold_->buf.empty() && !cold_->fragments.empty())
    cold_.reset(); // The reassembled message handed out last time is done with.
  for (;;) {
    auto avail = size - pos;
    if (avail < 2)
      return {};
    const char* p = data + pos;
    auto b0 = static_cast<uint8_t>(p[0]);
    auto b1 = static_cast<uint8_t>(p[1]);
    bool fin = (b0 & 0x80) != 0;
    auto op = static_cast<uint8_t>(b0 & 0x0F);
    bool masked = (b1 & 0x80) != 0;
    uint64_t len = b1 & 0x7F;
    if ((b0 & 0x70) != 0)
      return failure(close_protocol_error, "reserved bits set (no extension negotiated)");
    bool control = (op & 0x8) != 0;
    switch (static_cast<opcode>(op)) {
      case opcode::continuation:
      case opcode::text:
      case opcode::binary:
      case opcode::close:
      case opcode::ping:
      case opcode::pong:
        break;
      default:
        return failure(close_protocol_error, "unknown opcode " + std::to_string(op));
    }
    if (control && !fin)
      return failure(close_protocol_error, "fragmented control frame");
    if (control && len > max_control_payload)
      return failure(close_protocol_error, "control frame longer than 125 bytes");
    if (op == static_cast<uint8_t>(opcode::continuation) && !in_message_)
      return failure(close_protocol_error, "continuation frame without a message");
    if ((op == static_cast<uint8_t>(opcode::text) || op == static_cast<uint8_t>(opcode::binary))
        && in_message_)
      return failure(close_protocol_error, "new message inside a fragmented message");
    size_t hdr = 2 + (len == 126 ? 2 : len == 127 ? 8 : 0) + (masked ? 4 : 0);
    if (avail < hdr)
      return {};
    if (len == 126) {
      len = load_be16(p + 2);
    } else if (len == 127) {
      len = load_be64(p + 2);
      if (len >> 63)
        return failure(close_protocol_error, "frame length with the top bit set");
    }
    if (!control) {
      auto before = in_message_ ? cold_->fragments.size() : 0;
      if (len > max_message_size_ || before + len > max_message_size_)
        return failure(close_too_big, "message exceeds " + std::to_string(max_message_size_)
                                        + " bytes");
    }
    if (avail - hdr < len)
      return {};
    char* payload = data + pos + hdr;
    auto n = static_cast<size_t>(len);
    // Unmasked client frames are accepted (as Broker does); their bytes are checked below.
    bool non_ascii = masked ? unmask(payload, n, payload - 4) : true;
    pos += hdr + n;
    std::string_view body{payload, n};
    event result;
    switch (static_cast<opcode>(op)) {
      case opcode::text:
      case opcode::binary:
        if (!fin) {
          cold().fragments.assign(body.data(), body.size());
          fragments_non_ascii_ = non_ascii;
          in_message_ = true;
          message_binary_ = op == static_cast<uint8_t>(opcode::binary);
          continue;
        }
        if (op == static_cast<uint8_t>(opcode::binary)) {
          result.kind = event::binary; // No UTF-8 rule: the JSON decoder judges the bytes.
        } else {
          if (non_ascii && !is_valid_utf8(body))
            return failure(close_invalid_payload, "text message is not valid UTF-8");
          result.kind = event::text;
        }
        result.payload = body;
        return result;
      case opcode::continuation:
        cold_->fragments.append(body.data(), body.size());
        fragments_non_ascii_ = fragments_non_ascii_ || non_ascii;
        if (!fin)
          continue;
        in_message_ = false;
        if (message_binary_) {
          result.kind = event::binary;
        } else {
          if (fragments_non_ascii_ && !is_valid_utf8(cold_->fragments))
            return failure(close_invalid_payload, "text message is not valid UTF-8");
          result.kind = event::text;
        }
        result.payload = cold_->fragments;
        // The view stays valid until the next call: it frees (caller's bytes) or reassigns
        // (own buffer) the fragments.
        return result;
      case opcode::ping:
        result.kind = event::ping;
        result.payload = body;
        return result;
      case opcode::pong:
        result.kind = event::pong;
        result.payload = body;
        return result;
      case opcode::close:
        if (n == 0) {
          result.kind = event::close;
          result.code = close_no_status;
          return result;
        }
        if (n == 1)
          return failure(close_protocol_error, "close frame with a one-byte payload");
        result.code = load_be16(payload);
        if (!is_valid_close_code(result.code))
          return failure(close_protocol_error,
                         "invalid close code " + std::to_string(result.code));
        result.payload = body.substr(2);
        if (!is_valid_utf8(result.payload))
          return failure(close_invalid_payload, "close reason is not valid UTF-8");
        result.kind = event::close;
        return result;
      default:
        break; // Unknown opcodes failed above.
    }
  }
}

} // namespace broker::internal::ws
