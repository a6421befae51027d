// baseline-redis: the fan-out client (fanout_client.hh) for redis-server's pub/sub. It
// speaks RESP2 directly (no hiredis), with the same I/O loop as broker-fanout-ws.
//
//   --variant channel   subscribers: SUBSCRIBE /fanout/data     (exact channel)
//   --variant pattern   subscribers: PSUBSCRIBE /fanout/*       (a prefix, like broker's)
// The publisher sends PUBLISH /fanout/data <payload> and is ready at its PING's +PONG;
// a subscriber is ready at its (p)subscribe confirmation.

#include "fanout_client.hh"

#include <vector>

namespace {

using namespace fanout;

constexpr std::string_view channel = "/fanout/data";
constexpr std::string_view pattern = "/fanout/*";

/// One RESP reply: a simple value, or an array of simple values (all pub/sub needs).
struct reply {
  char type = 0; ///< '+', '-', ':', '$' or '*'.
  std::string_view text;
  std::vector<std::string_view> items; ///< Elements of an array.
};

/// Parses a "<type><text>\r\n" line starting at `p`; nullptr if incomplete.
const char* parse_line(const char* p, const char* end, std::string_view& text) {
  for (auto q = p; q + 1 < end; ++q)
    if (q[0] == '\r' && q[1] == '\n') {
      text = std::string_view{p, static_cast<size_t>(q - p)};
      return q + 2;
    }
  return nullptr;
}

long to_long(std::string_view s) {
  long x = 0;
  bool neg = !s.empty() && s[0] == '-';
  for (size_t i = neg ? 1 : 0; i < s.size(); ++i)
    x = x * 10 + (s[i] - '0');
  return neg ? -x : x;
}

/// Parses one non-array value (bulk strings read their body); nullptr if incomplete.
const char* parse_value(const char* p, const char* end, char& type, std::string_view& text) {
  if (p >= end)
    return nullptr;
  type = *p;
  std::string_view line;
  auto next = parse_line(p + 1, end, line);
  if (next == nullptr)
    return nullptr;
  if (type != '$') {
    text = line;
    return next;
  }
  auto len = to_long(line);
  if (len < 0) { // Null bulk string.
    text = {};
    return next;
  }
  if (end - next < len + 2)
    return nullptr;
  text = std::string_view{next, static_cast<size_t>(len)};
  return next + len + 2;
}

/// Parses one reply; nullptr if incomplete.
const char* parse_reply(const char* p, const char* end, reply& r) {
  auto next = parse_value(p, end, r.type, r.text);
  if (next == nullptr || r.type != '*')
    return next;
  auto n = to_long(r.text);
  r.items.clear();
  for (long i = 0; i < n; ++i) {
    char type = 0;
    std::string_view text;
    next = parse_value(next, end, type, text);
    if (next == nullptr)
      return nullptr;
    r.items.push_back(text);
  }
  return next;
}

void append_bulk(std::string& out, std::string_view s) {
  out += '$';
  out += std::to_string(s.size());
  out += "\r\n";
  out += s;
  out += "\r\n";
}

class redis_codec final : public codec {
public:
  redis_codec(role r, const client_options& o) : role_(r), pattern_(o.variant == "pattern") {}

  void start(std::string& out) override {
    if (role_ == role::publisher) {
      out += "*1\r\n$4\r\nPING\r\n";
      return;
    }
    out += "*2\r\n";
    append_bulk(out, pattern_ ? "PSUBSCRIBE" : "SUBSCRIBE");
    append_bulk(out, pattern_ ? pattern : channel);
  }

  size_t feed(const char* data, size_t size, codec_sink& sink, std::string&) override {
    auto p = data;
    auto end = data + size;
    while (p < end) {
      auto next = parse_reply(p, end, r_);
      if (next == nullptr)
        break;
      p = next;
      on_reply(sink);
    }
    return static_cast<size_t>(p - data);
  }

  void publish(std::string_view payload, std::string& out) override {
    out += "*3\r\n$7\r\nPUBLISH\r\n";
    append_bulk(out, channel);
    append_bulk(out, payload);
  }

private:
  void on_reply(codec_sink& sink) {
    switch (r_.type) {
      case '-':
        sink.fail("redis: " + std::string{r_.text});
        return;
      case '+': // +PONG
        sink.ready();
        return;
      case ':': // The receiver count of a PUBLISH.
        return;
      case '*':
        break;
      default:
        sink.fail("unexpected reply type " + std::string(1, r_.type));
        return;
    }
    auto& xs = r_.items;
    if (xs.size() == 3 && xs[0] == "message")
      sink.message(xs[2]);
    else if (xs.size() == 4 && xs[0] == "pmessage")
      sink.message(xs[3]);
    else if (xs.size() == 3 && (xs[0] == "subscribe" || xs[0] == "psubscribe"))
      sink.ready();
    else
      sink.fail("unexpected reply");
  }

  role role_;
  bool pattern_;
  reply r_;
};

constexpr const char* variant_help =
  "--variant channel (default): subscribers SUBSCRIBE /fanout/data\n"
  "--variant pattern: subscribers PSUBSCRIBE /fanout/* (a prefix match, like broker's)\n";

} // namespace

int main(int argc, char** argv) {
  return run_client(argc, argv, "redis", {"channel", "pattern"}, variant_help,
                    [](role r, const client_options& o) -> std::unique_ptr<codec> {
                      return std::make_unique<redis_codec>(r, o);
                    });
}
