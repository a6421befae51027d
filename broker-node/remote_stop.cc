#include "remote_stop.hh"

#include "node_session.hh"

#include <utility>

namespace broker_node {

bool is_stop(const broker::data& value) {
  auto* str = broker::get_if<std::string>(value);
  return str != nullptr && *str == stop_value;
}

bool is_stop(const broker::data_message& msg) {
  // A received message is tested on its bytes first: a relay never decodes what it passes
  // on. Only a short string (tag 0x05, doc/protocol/binary.md) can be "stop"; decoding it
  // also accepts the non-minimal length forms a sender may use.
  constexpr size_t longest_stop_encoding = 1 + 5 + stop_value.size();
  if (auto* bytes = msg.impl().binary_if_known();
      bytes != nullptr && (bytes->empty() || (*bytes)[0] != '\x05'
                           || bytes->size() > longest_stop_encoding))
    return false;
  return is_stop(msg.value());
}

std::string sender_text(const broker::route_info& route) {
  if (!route.origin.is_nil())
    return "node " + to_string(route.origin) + " (relayed " + std::to_string(route.hops)
           + " times before reaching us)";
  // Peers set the time to live of everything they send; our own publications have none.
  if (route.ttl != 0)
    return "a peer that does not name the publisher (a Zeek Broker node, or one it relayed)";
  return "this node (a local publisher or one of its WebSocket clients)";
}

stop_handler::stop_handler(bool exits, std::string reason, log_fn log)
  : exits_(exits), reason_(std::move(reason)), log_(std::move(log)) {
}

bool stop_handler::on_stop(const broker::data_message& msg, clock::time_point now) {
  auto what = "\"stop\" on topic " + escape_line(msg.topic()) + " from "
              + sender_text(msg.impl().route());
  if (exits_) {
    log_("received " + what + ": exiting (" + reason_ + ")");
    return true;
  }
  ++ignored_;
  ++unlogged_;
  if (logged_once_ && now - last_line_ < ignored_log_interval)
    return false;
  auto line = "ignored " + what + ": the node exits on \"stop\" only with --exit-on-stop";
  if (unlogged_ > 1)
    line += " (" + std::to_string(unlogged_) + " ignored since the last such line)";
  log_(line);
  logged_once_ = true;
  last_line_ = now;
  unlogged_ = 0;
  return false;
}

} // namespace broker_node
