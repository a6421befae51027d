// baseline-nats: the fan-out client (fanout_client.hh) for nats-server. It speaks the NATS
// text protocol directly (CONNECT, SUB, PUB, PING/PONG, MSG), with the same I/O loop as
// broker-fanout-ws.
//
//   --variant wildcard   subscribers: SUB fanout.>       (a prefix, like broker's)
//   --variant exact      subscribers: SUB fanout.data
// The publisher sends PUB fanout.data 64. Every connection sends CONNECT (verbose off) and
// then a PING; the PONG means the server has processed what came before (the SUB), so it
// marks the connection ready.

#include "fanout_client.hh"

#include <cstring>

namespace {

using namespace fanout;

constexpr std::string_view subject = "fanout.data";
constexpr std::string_view wildcard = "fanout.>";
constexpr std::string_view connect_line =
  "CONNECT {\"verbose\":false,\"pedantic\":false,\"echo\":false,\"name\":\"fanout\","
  "\"lang\":\"c++\",\"version\":\"0\",\"protocol\":1}\r\n";

class nats_codec final : public codec {
public:
  nats_codec(role r, const client_options& o) : role_(r), exact_(o.variant == "exact") {}

  void start(std::string& out) override {
    out += connect_line;
    if (role_ == role::subscriber) {
      out += "SUB ";
      out += exact_ ? subject : wildcard;
      out += " 1\r\n";
    }
    out += "PING\r\n";
  }

  size_t feed(const char* data, size_t size, codec_sink& sink, std::string& out) override {
    size_t pos = 0;
    while (pos < size) {
      auto eol = static_cast<const char*>(std::memchr(data + pos, '\n', size - pos));
      if (eol == nullptr)
        break;
      std::string_view line{data + pos, static_cast<size_t>(eol - (data + pos))};
      if (!line.empty() && line.back() == '\r')
        line.remove_suffix(1);
      auto after = static_cast<size_t>(eol - data) + 1;
      if (line.substr(0, 4) == "MSG ") {
        // MSG <subject> <sid> [reply-to] <#bytes>
        size_t len = 0;
        for (auto c : line.substr(line.rfind(' ') + 1))
          len = len * 10 + static_cast<size_t>(c - '0');
        if (after + len + 2 > size)
          break;
        sink.message(std::string_view{data + after, len});
        pos = after + len + 2;
        continue;
      }
      pos = after;
      if (line == "PING") {
        out += "PONG\r\n";
      } else if (line == "PONG") {
        sink.ready();
      } else if (line.substr(0, 4) == "-ERR") {
        sink.fail("nats: " + std::string{line});
        return size;
      }
      // INFO and +OK need no answer.
    }
    return pos;
  }

  void publish(std::string_view payload, std::string& out) override {
    out += "PUB ";
    out += subject;
    out += ' ';
    out += std::to_string(payload.size());
    out += "\r\n";
    out += payload;
    out += "\r\n";
  }

private:
  role role_;
  bool exact_;
};

constexpr const char* variant_help =
  "--variant wildcard (default): subscribers SUB fanout.> (a prefix match, like broker's)\n"
  "--variant exact: subscribers SUB fanout.data\n";

} // namespace

int main(int argc, char** argv) {
  return run_client(argc, argv, "nats", {"wildcard", "exact"}, variant_help,
                    [](role r, const client_options& o) -> std::unique_ptr<codec> {
                      return std::make_unique<nats_codec>(r, o);
                    });
}
