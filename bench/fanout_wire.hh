#pragma once

// fanout_wire: the three protocols of fanout-drive (fanout_drive.cc), written for a driver
// that must cost far less per delivery than the server it measures: frames are parsed in
// place from the connection's read buffer, payloads are handed out as views into it, and
// nothing is allocated per message.
//
//   ws     a broker node's WebSocket JSON API (doc/web-socket.md): HTTP upgrade, then the
//          filter ["/fanout/"] (subscriber) or [] (publisher), ready at the ack. A
//          data-message is not decoded as JSON: the node writes compact JSON with a fixed
//          key order, so the payload is the 64 bytes after "data":" (the offset is found
//          once and then only checked).
//   redis  RESP2: SUBSCRIBE /fanout/data (variant channel) or PSUBSCRIBE /fanout/*
//          (variant pattern, a prefix like ours); the publisher sends PING, then PUBLISH,
//          and reads the integer replies.
//   nats   the NATS text protocol: CONNECT (verbose off), SUB fanout.> (variant wildcard,
//          a prefix) or SUB fanout.data (exact), then PING; ready at the PONG.
//
// Owner: one connection of one process; no threads.

#include "fanout_stats.hh"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace fanout {

enum class protocol { ws, redis, nats };

/// What one parse step found besides payloads.
enum class wire_event { none, ready, failed };

class wire {
public:
  wire(protocol p, bool subscriber, bool variant_b, std::string host_port)
    : proto_(p), subscriber_(subscriber), variant_b_(variant_b),
      host_port_(std::move(host_port)) {}

  /// Bytes to send once the TCP connection is up.
  void start(std::string& out);

  /// Parses complete frames in [data, data + size): calls on_payload(std::string_view) for
  /// each delivered payload, appends replies (pongs, the ws filter) to `out`. Sets `event`
  /// to ready or failed (then `error` says why). Returns the bytes consumed.
  template <class OnPayload>
  size_t feed(const char* data, size_t size, std::string& out, OnPayload&& on_payload);

  /// Appends one publication of `payload` (payload_size bytes) to `out`.
  void publish(const char* payload, std::string& out);

  wire_event event = wire_event::none;
  std::string error;

private:
  template <class OnPayload>
  size_t feed_ws(const char* data, size_t size, std::string& out, OnPayload& on_payload);
  template <class OnPayload>
  size_t feed_redis(const char* data, size_t size, OnPayload& on_payload);
  template <class OnPayload>
  size_t feed_nats(const char* data, size_t size, std::string& out, OnPayload& on_payload);

  void ws_frame(uint8_t opcode, std::string_view body, std::string& out);
  void fail(std::string what) {
    event = wire_event::failed;
    error = std::move(what);
  }
  void ws_text(std::string_view body);

  protocol proto_;
  bool subscriber_;
  bool variant_b_; ///< redis: pattern; nats: exact.
  std::string host_port_;
  bool upgraded_ = false; ///< ws: the 101 came.
  bool open_ = false;     ///< ws: the ack came.
  size_t data_at_ = 0;    ///< ws: offset of the payload in a data-message (0: not yet known).
  const char* pending_payload_ = nullptr; ///< ws: set by ws_text for the caller.
};

// -- inline definitions -----------------------------------------------------------------

inline constexpr std::string_view fanout_topic = "/fanout/data";

/// Eight ASCII digits at `p` as a number (SWAR: three multiply-shift steps instead of eight
/// dependent multiply-adds); false if one of them is not a digit.
namespace detail {

inline bool eight_digits(const char* p, uint64_t& out) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  auto lo = x - 0x3030303030303030ull;
  // Every byte must be 0x30..0x39: after subtracting '0', no byte above 9 and no borrow.
  if (((lo | (lo + 0x7676767676767676ull)) & 0x8080808080808080ull) != 0)
    return false;
  lo = (lo * 10 + (lo >> 8)) & 0x00FF00FF00FF00FFull;
  lo = (lo * 100 + (lo >> 16)) & 0x0000FFFF0000FFFFull;
  out = (lo * 10000 + (lo >> 32)) & 0xFFFFFFFFull;
  return true;
}

inline bool four_digits(const char* p, uint64_t& out) {
  uint64_t x = 0;
  for (int i = 0; i < 4; ++i) {
    auto c = static_cast<unsigned>(p[i]) - '0';
    if (c > 9)
      return false;
    x = x * 10 + c;
  }
  out = x;
  return true;
}

} // namespace detail

/// parse_payload (fanout_stats.hh) for the hot path: the same fields, the same checks.
inline bool fast_parse_payload(std::string_view p, stamp& s) {
  uint64_t a, b, c, d, e;
  if (p.size() < 36 || p[20] != ' ' || p[33] != ' ' || !detail::four_digits(p.data(), a)
      || !detail::eight_digits(p.data() + 4, b) || !detail::eight_digits(p.data() + 12, c)
      || !detail::four_digits(p.data() + 21, d) || !detail::eight_digits(p.data() + 25, e))
    return false;
  s.sent_ns = (a * 100'000'000 + b) * 100'000'000 + c;
  s.seq = d * 100'000'000 + e;
  s.what = static_cast<kind>(p[34]);
  s.ack = p[35] == '!';
  return true;
}

/// The sequence number and kind of a payload only (what the driver needs of every
/// throughput message; its send time is read for a sample): the same checks of the fields
/// it reads as fast_parse_payload().
inline bool fast_parse_seq(std::string_view p, uint64_t& seq, kind& what) {
  uint64_t d, e;
  if (p.size() < 36 || p[20] != ' ' || p[33] != ' ' || !detail::four_digits(p.data() + 21, d)
      || !detail::eight_digits(p.data() + 25, e))
    return false;
  seq = d * 100'000'000 + e;
  what = static_cast<kind>(p[34]);
  return true;
}

template <class OnPayload>
size_t wire::feed(const char* data, size_t size, std::string& out, OnPayload&& on_payload) {
  switch (proto_) {
    case protocol::ws:
      return feed_ws(data, size, out, on_payload);
    case protocol::redis:
      return feed_redis(data, size, on_payload);
    case protocol::nats:
      return feed_nats(data, size, out, on_payload);
  }
  return 0;
}

template <class OnPayload>
size_t wire::feed_ws(const char* data, size_t size, std::string& out, OnPayload& on_payload) {
  size_t pos = 0;
  if (!upgraded_) {
    std::string_view in{data, size};
    auto end = in.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      if (size > 16384)
        fail("no end of the upgrade response");
      return 0;
    }
    if (in.substr(0, 12) != "HTTP/1.1 101") {
      fail("upgrade refused: " + std::string{in.substr(0, in.find("\r\n"))});
      return size;
    }
    upgraded_ = true;
    pos = end + 4;
    ws_frame(0x1, subscriber_ ? std::string_view{"[\"/fanout/\"]"} : std::string_view{"[]"},
             out);
  }
  while (pos + 2 <= size && event != wire_event::failed) {
    auto b0 = static_cast<uint8_t>(data[pos]);
    auto b1 = static_cast<uint8_t>(data[pos + 1]);
    size_t header = 2;
    uint64_t len = b1 & 0x7F;
    if (len == 126) {
      if (pos + 4 > size)
        break;
      len = (uint64_t{static_cast<uint8_t>(data[pos + 2])} << 8)
            | static_cast<uint8_t>(data[pos + 3]);
      header = 4;
    } else if (len == 127) {
      if (pos + 10 > size)
        break;
      len = 0;
      for (int i = 0; i < 8; ++i)
        len = (len << 8) | static_cast<uint8_t>(data[pos + 2 + i]);
      header = 10;
    }
    if (pos + header > size || len > size - pos - header) // No overflow for huge lengths.
      break;
    std::string_view body{data + pos + header, static_cast<size_t>(len)};
    pos += header + len;
    switch (b0 & 0x0F) {
      case 0x1: // text
        pending_payload_ = nullptr;
        ws_text(body);
        if (pending_payload_ != nullptr)
          on_payload(std::string_view{pending_payload_, payload_size});
        break;
      case 0x9: // ping
        ws_frame(0xA, body, out);
        break;
      case 0x8: // close
        fail("server closed the WebSocket");
        return size;
      default:
        break;
    }
  }
  return pos;
}

inline void wire::ws_text(std::string_view body) {
  constexpr std::string_view key = "\"data\":\"";
  if (open_ && data_at_ != 0 && body.size() >= data_at_ + payload_size
      && std::memcmp(body.data() + data_at_ - key.size(), key.data(), key.size()) == 0) {
    pending_payload_ = body.data() + data_at_;
    return;
  }
  if (!open_) {
    if (body.substr(0, 13) != "{\"type\":\"ack\"") {
      fail("expected the ack, got " + std::string{body.substr(0, 200)});
      return;
    }
    open_ = true;
    event = wire_event::ready;
    return;
  }
  auto at = body.find(key);
  if (body.substr(0, 15) == "{\"type\":\"error\"" || at == std::string_view::npos
      || body.size() < at + key.size() + payload_size) {
    fail("unexpected frame: " + std::string{body.substr(0, 200)});
    return;
  }
  data_at_ = at + key.size();
  pending_payload_ = body.data() + data_at_;
}

namespace detail {

/// Larger lengths and counts are refused: no overflow in what follows.
constexpr long max_length = 1L << 40;

/// Parses "<digits>\r\n" at p (after the type byte); nullptr if incomplete, sets `bad` if
/// it is not a number.
inline const char* resp_number(const char* p, const char* end, long& x, bool& bad) {
  bool neg = p < end && *p == '-';
  if (neg)
    ++p;
  long v = 0;
  for (; p < end && *p != '\r'; ++p) {
    if (*p < '0' || *p > '9' || v > max_length) {
      bad = true;
      return end;
    }
    v = v * 10 + (*p - '0');
  }
  if (end - p < 2)
    return nullptr;
  x = neg ? -v : v;
  return p + 2;
}

} // namespace detail

template <class OnPayload>
size_t wire::feed_redis(const char* data, size_t size, OnPayload& on_payload) {
  auto p = data;
  auto end = data + size;
  bool bad = false;
  while (p < end && event != wire_event::failed) {
    auto type = *p;
    if (type == '+' || type == '-' || type == ':') {
      auto eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      if (eol == nullptr)
        break;
      std::string_view line{p + 1, static_cast<size_t>(eol - p - 1)};
      if (type == '-')
        fail("redis: " + std::string{line});
      else if (type == '+' && !subscriber_)
        event = wire_event::ready; // +PONG
      p = eol + 1;
      continue;
    }
    if (type != '*') {
      fail("unexpected RESP type " + std::string(1, type));
      break;
    }
    long n = 0;
    auto q = detail::resp_number(p + 1, end, n, bad);
    if (q == nullptr)
      break;
    if (bad || n < 1 || n > 4) {
      fail("unexpected RESP array");
      break;
    }
    std::string_view items[4];
    bool complete = true;
    for (long i = 0; i < n && complete; ++i) {
      if (q >= end) {
        complete = false;
        break;
      }
      long len = 0;
      auto t = *q;
      auto r = detail::resp_number(q + 1, end, len, bad);
      if (r == nullptr || bad) {
        complete = false;
        break;
      }
      if (t == ':') {
        items[i] = {};
        q = r;
        continue;
      }
      if (t != '$' || len < 0) {
        fail("unexpected RESP item");
        complete = false;
        break;
      }
      if (end - r < len + 2) {
        complete = false;
        break;
      }
      items[i] = std::string_view{r, static_cast<size_t>(len)};
      q = r + len + 2;
    }
    if (!complete || event == wire_event::failed)
      break;
    p = q;
    if (n == 3 && items[0] == "message")
      on_payload(items[2]);
    else if (n == 4 && items[0] == "pmessage")
      on_payload(items[3]);
    else if (n == 3 && (items[0] == "subscribe" || items[0] == "psubscribe"))
      event = wire_event::ready;
    else
      fail("unexpected RESP reply " + std::string{items[0]});
  }
  if (bad && event != wire_event::failed)
    fail("malformed RESP number");
  return static_cast<size_t>(p - data);
}

template <class OnPayload>
size_t wire::feed_nats(const char* data, size_t size, std::string& out, OnPayload& on_payload) {
  size_t pos = 0;
  while (pos < size && event != wire_event::failed) {
    auto eol = static_cast<const char*>(std::memchr(data + pos, '\n', size - pos));
    if (eol == nullptr)
      break;
    std::string_view line{data + pos, static_cast<size_t>(eol - (data + pos))};
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    auto after = static_cast<size_t>(eol - data) + 1;
    if (line.size() > 4 && std::memcmp(line.data(), "MSG ", 4) == 0) {
      size_t len = 0;
      auto digits = line.substr(line.rfind(' ') + 1);
      for (auto c : digits) {
        if (c < '0' || c > '9' || len > static_cast<size_t>(detail::max_length)) {
          fail("malformed MSG line: " + std::string{line.substr(0, 100)});
          return pos;
        }
        len = len * 10 + static_cast<size_t>(c - '0');
      }
      if (len > size - after || size - after - len < 2)
        break;
      on_payload(std::string_view{data + after, len});
      pos = after + len + 2;
      continue;
    }
    pos = after;
    if (line == "PING")
      out += "PONG\r\n";
    else if (line == "PONG")
      event = wire_event::ready;
    else if (line.substr(0, 4) == "-ERR")
      fail("nats: " + std::string{line});
  }
  return pos;
}

inline void wire::start(std::string& out) {
  switch (proto_) {
    case protocol::ws:
      // The key is fixed: the server only echoes its hash, and we trust the 101.
      out += "GET /v1/messages/json HTTP/1.1\r\nHost: " + host_port_
             + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n";
      break;
    case protocol::redis:
      if (!subscriber_)
        out += "*1\r\n$4\r\nPING\r\n";
      else if (variant_b_)
        out += "*2\r\n$10\r\nPSUBSCRIBE\r\n$9\r\n/fanout/*\r\n";
      else
        out += "*2\r\n$9\r\nSUBSCRIBE\r\n$12\r\n/fanout/data\r\n";
      break;
    case protocol::nats:
      out += "CONNECT {\"verbose\":false,\"pedantic\":false,\"echo\":false,\"name\":\"fanout\","
             "\"lang\":\"c++\",\"version\":\"0\",\"protocol\":1}\r\n";
      if (subscriber_)
        out += variant_b_ ? "SUB fanout.data 1\r\n" : "SUB fanout.> 1\r\n";
      out += "PING\r\n";
      break;
  }
}

inline void wire::publish(const char* payload, std::string& out) {
  std::string_view p{payload, payload_size};
  switch (proto_) {
    case protocol::ws: {
      char json[160];
      constexpr std::string_view head = "{\"type\":\"data-message\",\"topic\":\"/fanout/data\","
                                        "\"@data-type\":\"string\",\"data\":\"";
      std::memcpy(json, head.data(), head.size());
      std::memcpy(json + head.size(), payload, payload_size);
      json[head.size() + payload_size] = '"';
      json[head.size() + payload_size + 1] = '}';
      ws_frame(0x1, std::string_view{json, head.size() + payload_size + 2}, out);
      break;
    }
    case protocol::redis:
      out += "*3\r\n$7\r\nPUBLISH\r\n$12\r\n/fanout/data\r\n$64\r\n";
      out += p;
      out += "\r\n";
      break;
    case protocol::nats:
      out += "PUB fanout.data 64\r\n";
      out += p;
      out += "\r\n";
      break;
  }
}

/// One masked client frame (RFC 6455 §5.2), a fixed non-zero key: the server unmasks
/// every byte whatever the key is.
inline void wire::ws_frame(uint8_t opcode, std::string_view body, std::string& out) {
  static constexpr char key[4] = {0x5a, 0x3c, 0x71, 0x0f};
  out.push_back(static_cast<char>(0x80 | opcode));
  auto len = body.size();
  if (len < 126) {
    out.push_back(static_cast<char>(0x80 | len));
  } else {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>(len >> 8));
    out.push_back(static_cast<char>(len & 0xFF));
  }
  out.append(key, 4);
  auto at = out.size();
  out.append(body);
  for (size_t i = 0; i < len; ++i)
    out[at + i] = static_cast<char>(out[at + i] ^ key[i % 4]);
}

} // namespace fanout
