#include "web_socket.hh"

#include "sender.hh"
#include "web_socket_client.hh"

#include <algorithm>
#include <memory>
#include <string>

namespace broker_throughput {

namespace {

using namespace std::chrono_literals;
using clock = session::clock;

/// Pause between connection attempts while the node is not up yet.
constexpr auto dial_retry = 250ms;

/// Longest a receive call runs before the loop looks at signals and the run's bounds.
constexpr auto receive_slice = 50ms;

constexpr std::string_view data_message_prefix = "{\"type\":\"data-message\"";
constexpr std::string_view error_prefix = "{\"type\":\"error\"";

/// Connects, retrying until --connect-timeout. Null on failure or signal.
std::unique_ptr<web_socket_client> dial(session& s, std::string_view filter) {
  const auto& opts = s.options();
  auto deadline = clock::now() + opts.connect_timeout;
  for (;;) {
    auto now = clock::now();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    auto res = web_socket_client::connect(opts.host, opts.port, filter,
                                          std::max(left, std::chrono::milliseconds{1}));
    if (res) {
      if (opts.verbose)
        print_diagnostic("connected to " + (*res)->url());
      return std::move(*res);
    }
    // An error frame instead of an ack will not go away by retrying.
    if (res.error_value() == broker::ec::invalid_message || clock::now() >= deadline) {
      print_diagnostic(res.error_value().message());
      return nullptr;
    }
    if (opts.verbose)
      print_diagnostic(res.error_value().message() + " (retrying)");
    if (s.wait({}, std::min(deadline, clock::now() + dial_retry)) == wake_reason::signal)
      return nullptr;
  }
}

/// The send side of a WebSocket connection.
class web_socket_sink : public event_sink {
public:
  web_socket_sink(web_socket_client& client, session& s) : client_(client), s_(s) {}

  broker::error send(std::vector<broker::data_message>& batch) override {
    texts_.clear();
    for (auto& msg : batch)
      texts_.emplace_back(msg.impl().json());
    return client_.send(texts_, [this] { return s_.interrupted(); });
  }

  void finish(session&) override {
    // The server publishes what it read before our close frame.
    client_.close();
  }

private:
  web_socket_client& client_;
  session& s_;
  std::vector<std::string_view> texts_;
};

std::string filter_json(std::string_view topic) {
  return "[\"" + std::string{topic} + "\"]";
}

} // namespace

int run_web_socket_client(session& s) {
  auto client = dial(s, "[]");
  if (!client)
    return s.interrupted() ? exit_clean : exit_runtime_failure;
  web_socket_sink sink{*client, s};
  return run_sender(s, sink);
}

int run_web_socket_server(session& s) {
  const auto& opts = s.options();
  auto client = dial(s, filter_json(events_topic));
  if (!client)
    return s.interrupted() ? exit_clean : exit_runtime_failure;
  s.out().connected(client->url());
  // A receive-only client gets an error frame only when the server gives up on it, e.g.
  // backpressure_overflow when it cannot keep up: that ends the run.
  std::string server_error;
  web_socket_client::message_handler on_message = [&](std::string_view text) {
    if (text.substr(0, data_message_prefix.size()) == data_message_prefix)
      s.add(1);
    else if (text.substr(0, error_prefix.size()) == error_prefix) {
      if (server_error.empty())
        server_error = text;
    } else if (opts.verbose)
      print_diagnostic("unexpected frame: " + std::string{text});
  };
  broker::error err;
  while (!s.done() && !s.interrupted() && server_error.empty()) {
    auto slice = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::min<clock::duration>(receive_slice, s.end_of_run() - clock::now()));
    if ((err = client->receive_for(std::max(slice, std::chrono::milliseconds{1}), on_message)))
      break;
    s.tick();
  }
  if (!server_error.empty())
    err = broker::error{broker::ec::peer_unavailable, "the node sent " + server_error};
  client->close();
  run_summary result;
  result.events = s.total();
  result.seconds = s.active_seconds();
  s.out().summary(result);
  if (err && !s.done()) {
    print_diagnostic(err.message());
    return exit_runtime_failure;
  }
  return exit_clean;
}

} // namespace broker_throughput
