// broker-fanout-native: the fan-out client (fanout_client.hh) over Zeek Broker's native
// peering protocol (doc/protocol/peering.md), so that the N subscriber connections and the
// publisher of a node are driven by the same single-threaded loop as the WebSocket, Redis
// and NATS clients. Each connection is a minimal peer: Broker's handshake (hello, then the
// originator/responder exchange decided by the ids), then data frames.
//
// Subscribers announce the filter ["/fanout/"], the publisher []; both answer every ping
// with an identical pong, as a Broker node does (so the node takes them for Broker peers and
// sends plain type-1 data frames). A connection is ready at the node's first phase-3 frame:
// the node sends its origin-v1 probe right after it attached the peer. Payloads are strings
// (tag 5) on /fanout/data; a received data frame is checked for that shape and its string
// handed to the driver.

#include "fanout_client.hh"

#include <array>
#include <cstring>
#include <random>

namespace {

using namespace fanout;

constexpr std::string_view topic = "/fanout/data";
constexpr std::string_view control_topic = "<$>";
constexpr std::string_view subscriber_topic = "/fanout/";
constexpr uint32_t magic = 0x5A45454B;
constexpr uint16_t ttl = 16;
constexpr size_t node_header = 37; // sender, receiver, type, ttl, topic length
constexpr uint32_t max_frame = 64 * 1024 * 1024;

enum msg_type : uint8_t {
  data = 1,
  ping = 4,
  pong = 5,
  hello = 6,
  probe = 7,
  version_select = 8,
  drop_conn = 9,
  originator_syn = 10,
  responder_syn_ack = 11,
  originator_ack = 12,
};

using id_type = std::array<char, 16>;

void put_u16(std::string& out, uint16_t x) {
  out.push_back(static_cast<char>(x >> 8));
  out.push_back(static_cast<char>(x & 0xFF));
}

void put_u32(std::string& out, uint32_t x) {
  for (int i = 3; i >= 0; --i)
    out.push_back(static_cast<char>((x >> (8 * i)) & 0xFF));
}

void put_varbyte(std::string& out, uint32_t n) {
  do {
    auto b = static_cast<uint8_t>(n & 0x7F);
    n >>= 7;
    out.push_back(static_cast<char>(n ? (b | 0x80) : b));
  } while (n);
}

uint32_t get_u32(const char* p) {
  uint32_t x = 0;
  for (int i = 0; i < 4; ++i)
    x = (x << 8) | static_cast<uint8_t>(p[i]);
  return x;
}

/// Reads a varbyte at data[pos..size); false if truncated.
bool get_varbyte(const char* data, size_t size, size_t& pos, uint32_t& n) {
  n = 0;
  for (int shift = 0; shift < 35 && pos < size; shift += 7) {
    auto b = static_cast<uint8_t>(data[pos++]);
    n |= static_cast<uint32_t>(b & 0x7F) << shift;
    if (!(b & 0x80))
      return true;
  }
  return false;
}

/// Appends a handshake frame: length, tag, body.
void frame(std::string& out, msg_type tag, const std::string& body) {
  put_u32(out, static_cast<uint32_t>(body.size() + 1));
  out.push_back(static_cast<char>(tag));
  out += body;
}

std::string filter_body(std::string_view prefix) {
  std::string body;
  if (prefix.empty()) {
    put_varbyte(body, 0);
  } else {
    put_varbyte(body, 1);
    put_varbyte(body, static_cast<uint32_t>(prefix.size()));
    body += prefix;
  }
  return body;
}

class native_codec final : public codec {
public:
  explicit native_codec(role r) : role_(r) {
    std::random_device rd;
    for (auto& c : own_)
      c = static_cast<char>(rd());
  }

  void start(std::string& out) override {
    std::string body;
    put_u32(body, magic);
    body.append(own_.data(), own_.size());
    body.push_back(1); // min version
    body.push_back(1); // max version
    frame(out, hello, body);
  }

  size_t feed(const char* data, size_t size, codec_sink& sink, std::string& out) override {
    size_t pos = 0;
    while (pos + 4 <= size) {
      auto len = get_u32(data + pos);
      if (len == 0 || len > max_frame) {
        sink.fail("bad frame length " + std::to_string(len));
        return size;
      }
      if (pos + 4 + len > size)
        break;
      std::string_view payload{data + pos + 4, len};
      pos += 4 + len;
      if (state_ != state::open)
        handshake_frame(payload, sink, out);
      else
        node_frame(payload, sink, out);
    }
    return pos;
  }

  void publish(std::string_view payload, std::string& out) override {
    auto start = out.size();
    put_u32(out, 0);
    out.append(own_.data(), own_.size());
    out.append(16, '\0'); // receiver: everyone
    out.push_back(static_cast<char>(data));
    put_u16(out, ttl);
    put_u16(out, static_cast<uint16_t>(topic.size()));
    out += topic;
    out.push_back(5); // string
    put_varbyte(out, static_cast<uint32_t>(payload.size()));
    out += payload;
    auto len = static_cast<uint32_t>(out.size() - start - 4);
    for (int i = 0; i < 4; ++i)
      out[start + i] = static_cast<char>((len >> (8 * (3 - i))) & 0xFF);
  }

private:
  enum class state { hello_sent, await_syn, await_syn_ack, await_ack, open };

  std::string_view filter() const {
    return role_ == role::subscriber ? subscriber_topic : std::string_view{};
  }

  void handshake_frame(std::string_view p, codec_sink& sink, std::string& out) {
    auto tag = static_cast<uint8_t>(p[0]);
    switch (tag) {
      case probe:
        return;
      case hello: // We are the smaller id: originator.
        if (p.size() < 23) {
          sink.fail("short hello");
          return;
        }
        if (std::memcmp(own_.data(), p.data() + 5, 16) >= 0) {
          sink.fail("got a hello although our id is larger");
          return;
        }
        {
          std::string body;
          put_u32(body, magic);
          body.append(own_.data(), own_.size());
          body.push_back(1);
          frame(out, version_select, body);
          frame(out, originator_syn, filter_body(filter()));
        }
        state_ = state::await_syn_ack;
        return;
      case version_select: // The node is the originator; its syn follows.
        state_ = state::await_syn;
        return;
      case originator_syn:
        frame(out, responder_syn_ack, filter_body(filter()));
        state_ = state::await_ack;
        return;
      case responder_syn_ack:
        frame(out, originator_ack, {});
        state_ = state::open;
        return;
      case originator_ack:
        state_ = state::open;
        return;
      case drop_conn:
        sink.fail("the node dropped the connection");
        return;
      default:
        sink.fail("unexpected handshake message " + std::to_string(tag));
    }
  }

  void node_frame(std::string_view p, codec_sink& sink, std::string& out) {
    if (p.size() < node_header) {
      sink.fail("short node message");
      return;
    }
    auto type = static_cast<uint8_t>(p[32]);
    auto topic_len = (static_cast<uint8_t>(p[35]) << 8) | static_cast<uint8_t>(p[36]);
    if (node_header + topic_len > p.size()) {
      sink.fail("bad topic length");
      return;
    }
    auto body = p.substr(node_header + topic_len);
    switch (type) {
      case ping: {
        // Echo, as Broker: a pong with our id as sender, the pinger as receiver.
        std::string frame_out;
        put_u32(frame_out, 0);
        frame_out.append(own_.data(), own_.size());
        frame_out.append(p.data(), 16);
        frame_out.push_back(static_cast<char>(pong));
        put_u16(frame_out, ttl);
        put_u16(frame_out, static_cast<uint16_t>(control_topic.size()));
        frame_out += control_topic;
        frame_out += body;
        auto len = static_cast<uint32_t>(frame_out.size() - 4);
        for (int i = 0; i < 4; ++i)
          frame_out[i] = static_cast<char>((len >> (8 * (3 - i))) & 0xFF);
        out += frame_out;
        if (!ready_) {
          ready_ = true; // The node attached us (its first phase-3 frame).
          sink.ready();
        }
        return;
      }
      case data: {
        size_t pos = 1;
        uint32_t n = 0;
        if (body.empty() || body[0] != 5
            || !get_varbyte(body.data(), body.size(), pos, n) || pos + n != body.size()) {
          sink.fail("data frame without one string value");
          return;
        }
        sink.message(body.substr(pos, n));
        return;
      }
      default:
        return; // routing updates, pongs
    }
  }

  role role_;
  id_type own_;
  state state_ = state::hello_sent;
  bool ready_ = false;
};

constexpr const char* variant_help =
  "--variant native (the only one): the server is a broker node's peering port (plain\n"
  "TCP: start it with broker.disable-ssl); subscribers announce [\"/fanout/\"], the\n"
  "publisher publishes strings on /fanout/data.\n";

} // namespace

int main(int argc, char** argv) {
  return run_client(argc, argv, "broker", {"native"}, variant_help,
                    [](role r, const client_options&) -> std::unique_ptr<codec> {
                      return std::make_unique<native_codec>(r);
                    });
}
