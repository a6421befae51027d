// broker-fanout-ws: the fan-out client (fanout_client.hh) for a broker node's WebSocket
// JSON API (doc/web-socket.md). It speaks RFC 6455 directly: one HTTP upgrade, then masked
// text frames out and unmasked frames in, so 10 000 connections cost one socket and a
// small buffer each.
//
// Subscribers send the filter ["/fanout/"] and are ready at the ack; the publisher sends
// [] and then one data-message frame per payload on /fanout/data. A received data-message
// is not decoded as JSON: the server writes compact JSON with a fixed key order
// (doc/protocol/websocket.md §5.1), so the payload is the string after "data":".

#include "fanout_client.hh"

#include <cstring>
#include <random>

namespace {

using namespace fanout;

constexpr std::string_view topic = "/fanout/data";
constexpr std::string_view subscriber_filter = "[\"/fanout/\"]";
constexpr std::string_view publisher_filter = "[]";
constexpr std::string_view ack_prefix = "{\"type\":\"ack\"";
constexpr std::string_view data_key = "\"data\":\"";

/// Upper bound on the HTTP response header of the upgrade.
constexpr size_t max_response_header = 16 * 1024;

enum opcode : uint8_t { text = 0x1, close = 0x8, ping = 0x9, pong = 0xA };

class ws_codec final : public codec {
public:
  ws_codec(role r, const client_options& o) : role_(r), host_(o.host + ":" + std::to_string(o.port)) {
    std::random_device rd;
    mask_seed_ = rd();
  }

  void start(std::string& out) override {
    // The key is fixed: the server only echoes its hash, and we trust the 101.
    out += "GET /v1/messages/json HTTP/1.1\r\nHost: " + host_
           + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
             "Sec-WebSocket-Version: 13\r\n\r\n";
  }

  size_t feed(const char* data, size_t size, codec_sink& sink, std::string& out) override {
    size_t pos = 0;
    if (state_ == state::upgrade) {
      std::string_view in{data, size};
      auto end = in.find("\r\n\r\n");
      if (end == std::string_view::npos) {
        if (size > max_response_header)
          sink.fail("no end of the upgrade response");
        return 0;
      }
      if (in.substr(0, 12) != "HTTP/1.1 101") {
        sink.fail("upgrade refused: " + std::string{in.substr(0, in.find("\r\n"))});
        return size;
      }
      pos = end + 4;
      frame(text, role_ == role::subscriber ? subscriber_filter : publisher_filter, out);
      state_ = state::ack;
    }
    while (pos + 2 <= size) {
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
      if (b1 & 0x80) {
        sink.fail("masked frame from the server");
        return size;
      }
      if (pos + header + len > size)
        break;
      std::string_view body{data + pos + header, static_cast<size_t>(len)};
      pos += header + len;
      switch (b0 & 0x0F) {
        case text:
          on_text(body, sink);
          break;
        case ping:
          frame(pong, body, out);
          break;
        case close:
          sink.fail("server closed the connection");
          return size;
        default:
          break;
      }
    }
    return pos;
  }

  void publish(std::string_view payload, std::string& out) override {
    std::string json;
    json.reserve(128);
    json += "{\"type\":\"data-message\",\"topic\":\"";
    json += topic;
    json += "\",\"@data-type\":\"string\",\"data\":\"";
    json += payload;
    json += "\"}";
    frame(text, json, out);
  }

private:
  enum class state { upgrade, ack, open };

  void on_text(std::string_view body, codec_sink& sink) {
    if (state_ == state::ack) {
      if (body.substr(0, ack_prefix.size()) != ack_prefix) {
        sink.fail("expected the ack, got " + std::string{body.substr(0, 200)});
        return;
      }
      state_ = state::open;
      sink.ready();
      return;
    }
    auto at = body.find(data_key);
    if (body.substr(0, 15) == "{\"type\":\"error\"" || at == std::string_view::npos) {
      sink.fail("unexpected frame: " + std::string{body.substr(0, 200)});
      return;
    }
    auto from = at + data_key.size();
    auto to = body.find('"', from);
    sink.message(body.substr(from, to == std::string_view::npos ? to : to - from));
  }

  /// Appends one masked client frame (RFC 6455 §5.2).
  void frame(opcode op, std::string_view body, std::string& out) {
    out.push_back(static_cast<char>(0x80 | op));
    auto len = body.size();
    if (len < 126) {
      out.push_back(static_cast<char>(0x80 | len));
    } else if (len < 65536) {
      out.push_back(static_cast<char>(0x80 | 126));
      out.push_back(static_cast<char>(len >> 8));
      out.push_back(static_cast<char>(len & 0xFF));
    } else {
      out.push_back(static_cast<char>(0x80 | 127));
      for (int i = 7; i >= 0; --i)
        out.push_back(static_cast<char>((static_cast<uint64_t>(len) >> (8 * i)) & 0xFF));
    }
    mask_seed_ = mask_seed_ * 1664525u + 1013904223u; // Any key will do; vary it anyway.
    char key[4];
    std::memcpy(key, &mask_seed_, 4);
    out.append(key, 4);
    auto at = out.size();
    out.append(body);
    for (size_t i = 0; i < len; ++i)
      out[at + i] = static_cast<char>(out[at + i] ^ key[i % 4]);
  }

  role role_;
  std::string host_;
  state state_ = state::upgrade;
  uint32_t mask_seed_ = 0;
};

constexpr const char* variant_help =
  "--variant ws (the only one): the server is a broker node's WebSocket API; subscribers\n"
  "filter [\"/fanout/\"], the publisher publishes strings on /fanout/data.\n";

} // namespace

int main(int argc, char** argv) {
  return run_client(argc, argv, "broker", {"ws"}, variant_help,
                    [](role r, const client_options& o) -> std::unique_ptr<codec> {
                      return std::make_unique<ws_codec>(r, o);
                    });
}
