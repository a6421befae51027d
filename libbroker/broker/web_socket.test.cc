// The WebSocket JSON API (doc/protocol/websocket.md) seen by a Boost.Beast client: an endpoint in
// this process serves ws://127.0.0.1:<ephemeral>/v1/messages/json and the tests talk to it
// over real loopback TCP. Beast is slow to compile, so it stays in this one file.

#include "broker/endpoint.hh"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>

using namespace broker;
using namespace std::chrono_literals;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr auto read_timeout = 10s;

/// ws://: without broker.disable-ssl the server would speak Broker's default, TLS with
/// anonymous ECDH, which this plain Beast client (like most WebSocket clients) cannot.
configuration plain_config() {
  configuration cfg;
  if (auto err = cfg.set("broker.disable-ssl", "true"))
    throw std::runtime_error(err.message());
  return cfg;
}

/// A client with synchronous connect, handshake and writes, and reads bounded in time
/// (an async read driven by run_for, so a missing frame fails the test instead of hanging).
class ws_client {
public:
  /// Connects and upgrades; `response` holds the server's answer, `error` why it failed.
  explicit ws_client(uint16_t port, const std::string& target = "/v1/messages/json") {
    beast::get_lowest_layer(ws_).connect(tcp::endpoint{asio::ip::make_address("127.0.0.1"),
                                                       port});
    ws_.handshake(response, "127.0.0.1", target, error);
  }

  /// Connects, sends `subscriptions` as the first message and returns the ack.
  static std::pair<std::unique_ptr<ws_client>, std::string>
  subscribed(uint16_t port, const std::string& subscriptions) {
    auto client = std::make_unique<ws_client>(port);
    REQUIRE(!client->error);
    client->send(subscriptions);
    auto ack = client->read();
    REQUIRE(ack);
    return {std::move(client), *ack};
  }

  void send(std::string_view text) {
    ws_.text(true);
    ws_.write(asio::buffer(text.data(), text.size()));
  }

  void send_binary(std::string_view bytes) {
    ws_.binary(true);
    ws_.write(asio::buffer(bytes.data(), bytes.size()));
  }

  /// The next text message, or nullopt if the read failed (`error` says why: closed, ...)
  /// or nothing arrived in time.
  std::optional<std::string> read() {
    beast::flat_buffer buf;
    bool done = false;
    ws_.async_read(buf, [&](beast::error_code ec, size_t) {
      error = ec;
      done = true;
    });
    ioc_.restart();
    ioc_.run_for(read_timeout);
    if (!done) {
      beast::get_lowest_layer(ws_).cancel();
      ioc_.restart();
      ioc_.run();
      return std::nullopt;
    }
    if (error)
      return std::nullopt;
    return beast::buffers_to_string(buf.data());
  }

  /// The close code the server sent (valid after read() failed with error::closed).
  uint16_t close_code() const { return ws_.reason().code; }

  websocket::response_type response;
  beast::error_code error;

private:
  asio::io_context ioc_;
  websocket::stream<beast::tcp_stream> ws_{ioc_};
};

std::string count_message(const std::string& topic, uint64_t n) {
  return R"({"type":"data-message","topic":")" + topic + R"(","@data-type":"count","data":)"
         + std::to_string(n) + "}";
}

uint16_t listen_ws(endpoint& ep) {
  auto port = ep.web_socket_listen("127.0.0.1", 0);
  REQUIRE(port);
  REQUIRE(*port != 0);
  return *port;
}

} // namespace

TEST_CASE("a Beast client is upgraded and gets one compact ack naming the node",
          "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  ws_client c{port};
  REQUIRE(!c.error);
  CHECK(c.response.result() == http::status::switching_protocols);
  // Beast offers no extension, but the server must not invent one either.
  CHECK(c.response.count(http::field::sec_websocket_extensions) == 0);
  CHECK(c.response.count(http::field::sec_websocket_protocol) == 0);
  c.send(R"(["/a"])");
  auto ack = c.read();
  REQUIRE(ack);
  std::regex shape{
    R"re(\{"type":"ack","endpoint":"([0-9a-f-]{36})","version":"(\d+\.\d+\.\d+[^"]*)"\})re"};
  std::smatch m;
  INFO("ack: " << *ack);
  REQUIRE(std::regex_match(*ack, m, shape));
  CHECK(m[1] == to_string(ep.node_id()));
}

TEST_CASE("a data message goes to the other client and to a local subscriber, not back",
          "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  auto sub = ep.make_subscriber({"/t"});
  auto [a, ack_a] = ws_client::subscribed(port, R"(["/t"])");
  auto [b, ack_b] = ws_client::subscribed(port, R"(["/t"])");
  CHECK(ack_a == ack_b);

  b->send(R"({"type": "data-message", "topic": "/t/1", "@data-type": "count", "data": 42})");
  CHECK(a->read() == count_message("/t/1", 42));
  auto msg = sub.get(10s);
  REQUIRE(msg);
  CHECK(msg->topic() == "/t/1");
  CHECK(msg->value() == data{count{42}});

  // A local publication reaches both clients. b's next frame is this one: a already got
  // b's message, so an echo to b would have been queued before it.
  REQUIRE(!ep.publish("/t/2", data{"hi"}));
  auto hi = R"({"type":"data-message","topic":"/t/2","@data-type":"string","data":"hi"})";
  CHECK(a->read() == hi);
  CHECK(b->read() == hi);
}

TEST_CASE("bad input gets an error frame and the connection stays open", "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  auto sub = ep.make_subscriber({"/t"});
  auto [c, ack] = ws_client::subscribed(port, "[]");
  c->send("How is it going?");
  CHECK(c->read()
        == R"j({"type":"error","code":"deserialization_failed","context":"input #1 contained malformed JSON -> unexpected character at line 1, column 1"})j");
  c->send(R"({"topic": "/test", "@data-type": "phone", "data": "555-0123"})");
  auto second = c->read().value_or("");
  CHECK(second.find(R"("context":"input #2 contained invalid data -> unknown @data-type)")
        != std::string::npos);
  c->send(count_message("/t/ok", 3));
  auto msg = sub.get(10s);
  REQUIRE(msg);
  CHECK(msg->topic() == "/t/ok");
}

TEST_CASE("a first message without a filter gets an error frame and close 1008",
          "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  for (auto first : {R"({"a":1})", "[1]", "nope", ""}) {
    INFO("first message: " << first);
    ws_client c{port};
    REQUIRE(!c.error);
    c.send(first);
    CHECK(c.read().value_or("").rfind(
            R"({"type":"error","code":"deserialization_failed","context":"first message must contain a filter: a JSON array of topic strings; )",
            0)
          == 0);
    CHECK(!c.read());
    CHECK(c.error == websocket::error::closed);
    CHECK(c.close_code() == 1008);
  }
}

TEST_CASE("a binary frame is a message like a text one (Zeek's clients send them)",
          "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  auto [c, ack] = ws_client::subscribed(port, R"(["/t"])");
  c->send_binary("\x01\x02");
  auto answer = c->read().value_or("");
  CHECK(answer.rfind(R"({"type":"error","code":"deserialization_failed","context":"input #1 contained malformed JSON -> )", 0) == 0);
  CHECK(!c->error);
}

TEST_CASE("a wrong path is refused with 400 and the spec's text", "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  ws_client c{port, "/wrong"};
  CHECK(c.error == websocket::error::upgrade_declined);
  CHECK(c.response.result() == http::status::bad_request);
  CHECK(c.response[http::field::content_type] == "text/plain");
  CHECK(c.response.body().find("invalid path; try /v1/messages/json") != std::string::npos);
  CHECK(c.response[http::field::content_length] == std::to_string(c.response.body().size()));
}

TEST_CASE("listening on a port that is taken is an error, not a silent failure",
          "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  endpoint other;
  auto res = other.web_socket_listen("127.0.0.1", port);
  CHECK(!res);
}

TEST_CASE("shutting the endpoint down closes every client with 1000", "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  auto [a, ack_a] = ws_client::subscribed(port, R"(["/t"])");
  auto [b, ack_b] = ws_client::subscribed(port, "[]");
  // shutdown() waits for the close handshakes, which the clients answer while reading.
  // (The endpoint shuts down on the thread that made it: CAF's actor system must.)
  std::thread reader{[&] {
    CHECK(!a->read());
    CHECK(!b->read());
  }};
  ep.shutdown();
  reader.join();
  CHECK(a->error == websocket::error::closed);
  CHECK(a->close_code() == 1000);
  CHECK(b->error == websocket::error::closed);
  CHECK(b->close_code() == 1000);
}

TEST_CASE("shutdown returns although a client never answers the close", "[web_socket]") {
  endpoint ep{plain_config()};
  auto port = listen_ws(ep);
  auto [c, ack] = ws_client::subscribed(port, "[]");
  // The client is not reading, so its close handshake cannot finish: shutdown() gives up
  // after shutdown_close_timeout (a hang here is caught by the test's timeout).
  ep.shutdown();
  // The close frame still reached the client before the server closed TCP (replying to it
  // may fail now, so only the received code is checked).
  CHECK(!c->read());
  CHECK(c->close_code() == 1000);
}
