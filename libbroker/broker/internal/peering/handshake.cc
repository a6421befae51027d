#include "broker/internal/peering/handshake.hh"

#include <utility>
#include <variant>

namespace broker::internal {

namespace {

// drop_conn descriptions Broker sends from its peer-status check (doc/protocol/peering.md
// §3.6; the section numbers below are that page's).
constexpr std::string_view redundant_text = "redundant connection";
constexpr std::string_view no_pending_text =
  "detected redundant connection but find_pending_handshake failed";
constexpr std::string_view responder_redundant_text =
  "detected redundant connection at the responder";
constexpr std::string_view shutting_down_text = "shutting down";

// Our own check (Broker has none): equal ids would leave both sides waiting (§3.2).
constexpr std::string_view equal_ids_text = "remote endpoint id equals our own";

} // namespace

handshake::handshake(endpoint_id own, filter_type own_filter, role r, proceed_fn proceed)
  : own_(own), own_filter_(std::move(own_filter)), role_(r), proceed_(std::move(proceed)) {
  // nop
}

std::string handshake::start() {
  if (state_ != state::init)
    return {};
  if (role_ == role::acceptor) {
    state_ = state::await_hello;
    return wire::make_frame(wire::probe_msg{});
  }
  state_ = state::await_hello_or_version_select;
  return wire::make_frame(wire::hello_msg{own_});
}

handshake::outcome handshake::feed(std::string_view payload) {
  switch (state_) {
    case state::init:
    case state::done:
    case state::failed:
      return misuse("feed()");
    case state::paused:
      // Broker stops reading a paused connection; whatever arrives is left alone.
      return make_outcome(status::paused);
    default:
      break;
  }
  auto decoded = wire::decode_handshake(payload);
  if (!decoded) {
    // §3.5: every decode or validation failure is answered with drop_conn, in any state.
    auto& err = decoded.error_value();
    return fail(err.code(), err.message(), true);
  }
  auto& msg = *decoded;
  auto type = wire::type_of(msg);
  auto in_phase1 = state_ == state::await_hello_or_version_select
                   || state_ == state::await_hello || state_ == state::await_version_select;
  if (in_phase1) {
    if (type == wire::message_type::probe)
      return make_outcome(status::in_progress);
    if (type == wire::message_type::drop_conn)
      return on_drop_conn(std::get<wire::drop_conn_msg>(msg));
  }
  switch (state_) {
    case state::await_hello_or_version_select:
      if (type == wire::message_type::hello)
        return on_hello(std::get<wire::hello_msg>(msg));
      if (type == wire::message_type::version_select)
        return on_version_select(std::get<wire::version_select_msg>(msg));
      break;
    case state::await_hello:
      if (type == wire::message_type::hello)
        return on_hello(std::get<wire::hello_msg>(msg));
      break;
    case state::await_version_select:
      if (type == wire::message_type::version_select)
        return on_version_select(std::get<wire::version_select_msg>(msg));
      break;
    case state::await_orig_syn:
      if (type == wire::message_type::originator_syn) {
        remote_filter_ = std::move(std::get<wire::originator_syn_msg>(msg).filter);
        state_ = state::await_orig_ack;
        return make_outcome(status::in_progress,
                            wire::make_frame(wire::responder_syn_ack_msg{own_filter_}));
      }
      break;
    case state::await_resp_syn_ack:
      if (type == wire::message_type::responder_syn_ack) {
        remote_filter_ = std::move(std::get<wire::responder_syn_ack_msg>(msg).filter);
        return complete(wire::make_frame(wire::originator_ack_msg{}));
      }
      break;
    case state::await_orig_ack:
      if (type == wire::message_type::originator_ack)
        return complete({});
      break;
    default:
      break;
  }
  return unexpected(type);
}

handshake::outcome handshake::drop_paused() {
  if (state_ != state::paused)
    return misuse("drop_paused()");
  return fail(ec::redundant_connection, std::string{redundant_text}, true, true);
}

std::string_view handshake::state_name() const noexcept {
  return to_string(state_);
}

handshake::outcome handshake::on_hello(const wire::hello_msg& msg) {
  // The version range was checked by decode_handshake(), so Broker's second check
  // ("version range not supported") cannot trigger here.
  if (msg.sender == own_)
    return fail(ec::peer_invalid, std::string{equal_ids_text}, true);
  if (own_ < msg.sender)
    return commit(msg.sender, true);
  state_ = state::await_version_select;
  return make_outcome(status::in_progress, wire::make_frame(wire::hello_msg{own_}));
}

handshake::outcome handshake::on_version_select(const wire::version_select_msg& msg) {
  // As above, the selected version is already known to be 1.
  if (msg.sender == own_)
    return fail(ec::peer_invalid, std::string{equal_ids_text}, true);
  return commit(msg.sender, false);
}

handshake::outcome handshake::on_drop_conn(const wire::drop_conn_msg& msg) {
  remote_ = msg.sender;
  auto code = msg.code == ec::none ? ec::unspecified : msg.code;
  auto result = fail(code, msg.description, false, msg.code == ec::redundant_connection);
  result.remote = msg.sender;
  return result;
}

handshake::outcome handshake::commit(const endpoint_id& remote, bool as_originator) {
  auto choice = proceed_(remote, as_originator);
  if (choice == decision::proceed) {
    remote_ = remote;
    originator_ = as_originator;
    if (!as_originator) {
      state_ = state::await_orig_syn;
      return make_outcome(status::in_progress);
    }
    auto result = make_outcome(status::in_progress);
    wire::append_frame(result.output, wire::version_select_msg{own_});
    wire::append_frame(result.output, wire::originator_syn_msg{own_filter_});
    state_ = state::await_resp_syn_ack;
    return result;
  }
  if (choice == decision::shutting_down)
    return fail(ec::shutting_down, std::string{shutting_down_text}, true);
  // Only the originator resolves races; a responder rejects every redundant handshake.
  if (!as_originator)
    return fail(ec::logic_error, std::string{responder_redundant_text}, true);
  switch (choice) {
    case decision::pause:
      remote_ = remote;
      originator_ = true;
      state_ = state::paused;
      return make_outcome(status::paused);
    case decision::redundant:
      remote_ = remote;
      return fail(ec::redundant_connection, std::string{redundant_text}, true, true);
    default:
      return fail(ec::logic_error, std::string{no_pending_text}, true);
  }
}

handshake::outcome handshake::complete(std::string output) {
  state_ = state::done;
  auto result = make_outcome(status::done, std::move(output));
  result.remote = remote_;
  result.remote_filter = remote_filter_;
  result.originator = originator_;
  return result;
}

handshake::outcome handshake::unexpected(wire::message_type type) {
  // §3.4: a message not listed for the state aborts without drop_conn.
  return fail(ec::unexpected_handshake_message,
              "unexpected " + std::string{wire::to_string(type)} + " in state "
                + std::string{state_name()},
              false);
}

handshake::outcome handshake::make_outcome(status kind, std::string output) {
  outcome result;
  result.kind = kind;
  result.output = std::move(output);
  return result;
}

handshake::outcome handshake::misuse(std::string_view call) const {
  auto result = make_outcome(status::failed);
  result.err = error{ec::invalid_handshake_state,
                     std::string{call} + " in state " + std::string{state_name()}};
  return result;
}

handshake::outcome handshake::fail(ec code, std::string text, bool send_drop_conn,
                                   bool redundant) {
  state_ = state::failed;
  auto result = make_outcome(status::failed);
  if (send_drop_conn)
    wire::append_frame(result.output, wire::drop_conn_msg{own_, code, text});
  result.err = error{code, std::move(text)};
  result.redundant = redundant;
  return result;
}

std::string_view to_string(handshake::state x) noexcept {
  switch (x) {
    case handshake::state::init:
      return "init";
    case handshake::state::await_hello_or_version_select:
      return "await_hello_or_version_select";
    case handshake::state::await_hello:
      return "await_hello";
    case handshake::state::await_version_select:
      return "await_version_select";
    case handshake::state::await_orig_syn:
      return "await_orig_syn";
    case handshake::state::await_resp_syn_ack:
      return "await_resp_syn_ack";
    case handshake::state::await_orig_ack:
      return "await_orig_ack";
    case handshake::state::paused:
      return "paused";
    case handshake::state::done:
      return "done";
    case handshake::state::failed:
      return "failed";
  }
  return "invalid";
}

} // namespace broker::internal
