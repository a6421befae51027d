#include "broker/internal/zmtp/session.hh"

#include <algorithm>

// The session's feed loop, failures and handshake; traffic after the handshake is in
// session_traffic.cc.

namespace broker::internal::zmtp {

namespace {

// Compact the input buffer once this many parsed bytes sit in front of the unparsed rest.
constexpr size_t compact_threshold = 64 * 1024;

// The ZAP status code libzmq's CURVE server sends in ERROR when it refuses a client key;
// libzmq clients (and Zeek) report it as an authentication failure.
constexpr std::string_view access_denied_reason = "400";

bool publisher(socket_type type) noexcept {
  return type == socket_type::xpub || type == socket_type::pub;
}

} // namespace

session::session(session_config cfg) : cfg_(std::move(cfg)) {
  out_ = make_greeting(cfg_.mech, cfg_.mech == mechanism::curve && cfg_.server);
}

session::~session() {
  wipe(cfg_.curve_keys.secret_key);
}

// The CURVE halves live on the heap, so cipher_ stays valid when a session moves.
session::session(session&&) noexcept = default;

session& session::operator=(session&&) noexcept = default;

std::vector<event> session::feed(std::string_view bytes) {
  std::vector<event> result;
  feed(bytes, result);
  return result;
}

bool session::feed(std::string_view bytes, std::vector<event>& events) {
  if (state_ == state::failed)
    return false;
  events_ = &events;
  in_.append(bytes);
  bool ok = true;
  while (ok) {
    std::string_view rest{in_.data() + in_pos_, in_.size() - in_pos_};
    if (state_ == state::greeting) {
      if (auto err = check_greeting_prefix(rest.substr(0, greeting_size))) {
        ok = fail(std::move(err));
        break;
      }
      if (rest.size() < greeting_size)
        break;
      if ((ok = on_greeting()))
        in_pos_ += greeting_size;
      continue;
    }
    frame_header hdr;
    error err;
    auto status = parse_frame_header(rest, hdr, err);
    if (status == parse_status::need_more)
      break;
    if (status == parse_status::failed) {
      ok = fail(std::move(err));
      break;
    }
    // Bound the frame before buffering it: commands by max_command_size, data by what is
    // left of max_message_size; under CURVE every frame is a sealed MESSAGE.
    uint64_t limit;
    if (state_ == state::handshake) {
      if (!hdr.command()) {
        ok = fail({errc::malformed_frame, "data frame before the handshake completed"});
        break;
      }
      limit = cfg_.lim.max_command_size;
    } else {
      auto data_room = cfg_.lim.max_message_size - partial_.bytes.size();
      if (cipher_ != nullptr)
        limit = std::max<uint64_t>(cfg_.lim.max_command_size, data_room) + message_overhead;
      else
        limit = hdr.command() ? cfg_.lim.max_command_size : data_room;
    }
    if (hdr.size > limit) {
      ok = fail({hdr.command() ? errc::malformed_command : errc::message_too_large,
                 std::string{hdr.command() ? "command" : "data"} + " frame of "
                   + std::to_string(hdr.size) + " bytes exceeds the limit of "
                   + std::to_string(limit) + " bytes"});
      break;
    }
    if (rest.size() - hdr.header_size < hdr.size)
      break;
    in_pos_ += hdr.header_size + hdr.size;
    ok = on_frame(hdr, rest.substr(hdr.header_size, hdr.size));
  }
  if (in_pos_ == in_.size()) {
    in_.clear();
    in_pos_ = 0;
  } else if (in_pos_ >= compact_threshold && in_pos_ * 2 >= in_.size()) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
  events_ = nullptr;
  return ok;
}

std::string session::take_output() {
  std::string result;
  result.swap(out_);
  return result;
}

// -- failing ----------------------------------------------------------------------------------

bool session::fail(error err) {
  if (state_ == state::failed)
    return false;
  // Tell the peer why when it can read plaintext and the reason is its configuration; for
  // other protocol errors libzmq closes silently, and so do we.
  if (cipher_ == nullptr && state_ == state::handshake) {
    if (err.code == errc::access_denied)
      send_command("ERROR", error_data(access_denied_reason));
    else if (err.code == errc::incompatible_peer)
      send_command("ERROR", error_data(err.reason));
  }
  state_ = state::failed;
  failure_ = err;
  partial_ = multipart{};
  in_.clear();
  in_pos_ = 0;
  if (events_ != nullptr) {
    event ev;
    ev.what = event::kind::failed;
    ev.err = std::move(err);
    events_->push_back(std::move(ev));
  }
  return false;
}

const error& session::timed_out(uint64_t silent_ms) {
  if (state_ == state::ready)
    fail({errc::heartbeat_timeout,
          "no traffic from the peer for " + std::to_string(silent_ms) + " ms"});
  else
    fail({errc::heartbeat_timeout,
          "the handshake did not complete within " + std::to_string(silent_ms) + " ms"});
  return failure_;
}

const error& session::peer_closed() {
  if (state_ == state::failed)
    return failure_;
  std::string why;
  if (state_ == state::greeting) {
    why = "the peer closed the connection before its greeting was complete ("
          + std::to_string(in_.size() - in_pos_) + " of 64 bytes)";
  } else if (state_ == state::ready) {
    why = "the peer closed the connection";
    if (!partial_.ends.empty())
      why += " in the middle of a multipart message (" + std::to_string(partial_.ends.size())
             + " frames received)";
  } else {
    switch (step_) {
      case step::null_ready:
        why = "the peer closed the connection during the NULL handshake (it may use another "
              "mechanism or refuse our socket type)";
        break;
      case step::client_welcome:
        why = "the CURVE server closed the connection after our HELLO: it holds another key "
              "than the server public key we use";
        break;
      case step::client_ready:
        why = "the CURVE server closed the connection after our INITIATE: it refused our "
              "client key or metadata";
        break;
      case step::server_hello:
      case step::server_initiate:
        why = "the CURVE client closed the connection during the handshake (it may use "
              "another server public key)";
        break;
    }
  }
  fail({errc::peer_closed, std::move(why)});
  return failure_;
}

bool session::check_output() {
  if (out_.size() <= cfg_.lim.max_pending_output)
    return true;
  return fail({errc::flood, "the peer made us queue " + std::to_string(out_.size())
                              + " bytes of replies that were not drained (limit "
                              + std::to_string(cfg_.lim.max_pending_output) + ")"});
}

// -- handshake --------------------------------------------------------------------------------

std::string session::our_metadata() const {
  std::string md;
  append_property(md, "Socket-Type", to_string(cfg_.type));
  return md;
}

void session::send_command(std::string_view name, std::string_view data) {
  if (cipher_ == nullptr) {
    append_command(out_, name, data);
    return;
  }
  scratch_.clear();
  scratch_ += static_cast<char>(name.size());
  scratch_.append(name);
  scratch_.append(data);
  cipher_->seal(false, true, scratch_, out_);
}

bool session::on_greeting() {
  greeting peer;
  if (auto err = parse_greeting({in_.data() + in_pos_, greeting_size}, peer))
    return fail(std::move(err));
  peer_.major = peer.major;
  peer_.minor = peer.minor;
  if (peer.mechanism != to_string(cfg_.mech))
    return fail({errc::mechanism_mismatch, "the peer uses the " + peer.mechanism
                                             + " mechanism, we use "
                                             + to_string(cfg_.mech)});
  state_ = state::handshake;
  if (cfg_.mech == mechanism::null) {
    step_ = step::null_ready;
    send_command("READY", our_metadata());
    return true;
  }
  // The as-server flag is not checked: libzmq 4.3 sends 0 for CURVE servers too.
  if (cfg_.server) {
    server_ = std::make_unique<curve_server>(cfg_.curve_keys);
    step_ = step::server_hello;
  } else {
    client_ = std::make_unique<curve_client>(cfg_.curve_keys, cfg_.curve_server_key);
    std::string hello;
    if (auto err = client_->hello(hello))
      return fail(std::move(err));
    append_frame_header(out_, false, true, hello.size());
    out_ += hello;
    step_ = step::client_welcome;
  }
  return true;
}

bool session::on_ready_metadata(std::string_view metadata) {
  properties props;
  if (auto err = parse_properties(metadata, props))
    return fail(std::move(err));
  auto* type = find_property(props, "Socket-Type");
  if (type == nullptr)
    return fail({errc::malformed_command, "the peer's metadata has no Socket-Type"});
  peer_.type = parse_socket_type(*type);
  if (!compatible(cfg_.type, peer_.type))
    return fail({errc::incompatible_peer, "the peer is a '" + *type + "' socket; an "
                                            + to_string(cfg_.type) + " talks to "
                                            + (publisher(cfg_.type) ? "SUB or XSUB"
                                                                    : "PUB or XPUB")
                                            + " only"});
  if (auto* identity = find_property(props, "Identity"))
    peer_.identity = *identity;
  peer_.metadata = std::move(props);
  return true;
}

bool session::on_handshake_command(std::string_view body) {
  command cmd;
  if (auto err = parse_command(body, cmd))
    return fail(std::move(err));
  if (cmd.name == "ERROR" && step_ != step::server_hello && step_ != step::server_initiate) {
    std::string reason;
    if (auto err = parse_error_data(cmd.data, reason))
      return fail(std::move(err));
    return fail({errc::peer_error, "the peer refused the handshake: ERROR '" + reason + "'"
                                     + (reason == access_denied_reason
                                          ? " (the CURVE server does not allow our key)"
                                          : "")});
  }
  std::string metadata;
  switch (step_) {
    case step::null_ready:
      if (cmd.name != "READY")
        return fail({errc::unexpected_command, "NULL handshake: expected READY or ERROR, got "
                                                 + std::string{cmd.name}});
      if (!on_ready_metadata(cmd.data))
        return false;
      break;
    case step::client_welcome: {
      if (auto err = client_->on_welcome(body))
        return fail(std::move(err));
      std::string initiate;
      if (auto err = client_->initiate(our_metadata(), initiate))
        return fail(std::move(err));
      append_frame_header(out_, false, true, initiate.size());
      out_ += initiate;
      step_ = step::client_ready;
      return true;
    }
    case step::client_ready:
      if (auto err = client_->on_ready(body, metadata))
        return fail(std::move(err));
      cipher_ = client_.get();
      if (!on_ready_metadata(metadata))
        return false;
      break;
    case step::server_hello: {
      if (auto err = server_->on_hello(body))
        return fail(std::move(err));
      std::string welcome;
      if (auto err = server_->welcome(welcome))
        return fail(std::move(err));
      append_frame_header(out_, false, true, welcome.size());
      out_ += welcome;
      step_ = step::server_initiate;
      return true;
    }
    case step::server_initiate: {
      key client_key;
      if (auto err = server_->on_initiate(body, client_key, metadata))
        return fail(std::move(err));
      peer_.has_client_key = true;
      peer_.client_key = client_key;
      if (cfg_.authorize && !cfg_.authorize(client_key))
        return fail({errc::access_denied,
                     "CURVE client key " + to_z85(client_key) + " is not allowed"});
      if (!on_ready_metadata(metadata))
        return false;
      auto ready = server_->ready(our_metadata());
      append_frame_header(out_, false, true, ready.size());
      out_ += ready;
      cipher_ = server_.get();
      break;
    }
  }
  state_ = state::ready;
  events_->push_back(event{event::kind::ready, {}, {}, {}});
  return true;
}

} // namespace broker::internal::zmtp
