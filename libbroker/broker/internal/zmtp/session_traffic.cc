#include "broker/internal/zmtp/session.hh"

#include <algorithm>
#include <cstring>

// The session after its handshake: frames in (opened under CURVE), messages assembled,
// commands answered; subscriptions and PINGs out. The feed loop and the handshake are in
// session.cc.

namespace broker::internal::zmtp {

namespace {

/// The most a message's assembly reserves ahead (larger ones grow as they arrive).
constexpr size_t reserve_cap = 64 * 1024;

bool publisher(socket_type type) noexcept {
  return type == socket_type::xpub || type == socket_type::pub;
}

bool subscriber(socket_type type) noexcept {
  return type == socket_type::xsub || type == socket_type::sub;
}

} // namespace

namespace {

/// Bytes of `msg` in ZMTP framing without encryption.
size_t plain_size(const multipart& msg) noexcept {
  size_t size = msg.bytes.size();
  for (size_t i = 0; i < msg.size(); ++i)
    size += msg.frame(i).size() <= 255 ? 2 : max_frame_header_size;
  return size;
}

/// Writes `msg` in ZMTP framing to `pos` (plain_size() bytes); returns the end.
char* write_plain(const multipart& msg, char* pos) noexcept {
  auto n = msg.size();
  for (size_t i = 0; i < n; ++i) {
    auto body = msg.frame(i);
    pos += write_frame_header(pos, i + 1 < n, false, body.size());
    if (!body.empty())
      std::memcpy(pos, body.data(), body.size());
    pos += body.size();
  }
  return pos;
}

} // namespace

void encode_plain(multipart& msg) {
  auto* one = &msg;
  encode_plain(&one, 1);
}

void encode_plain(multipart* const* msgs, size_t n) {
  size_t i = 0;
  while (i < n) {
    // The messages of one block: up to plain_block_bytes (at least one message).
    size_t size = 0;
    size_t end = i;
    for (; end < n && (end == i || size < plain_block_bytes); ++end)
      size += msgs[end]->size() == 0 ? 0 : plain_size(*msgs[end]);
    // Sized once, then written in place (not frame by frame through append()).
    auto block = std::make_shared<std::string>(size, '\0');
    char* pos = block->data();
    for (; i < end; ++i) {
      auto& msg = *msgs[i];
      if (msg.size() == 0) {
        msg.plain = {};
        msg.plain_block.reset();
        continue;
      }
      auto next = write_plain(msg, pos);
      msg.plain = std::string_view{pos, static_cast<size_t>(next - pos)};
      msg.plain_block = block;
      pos = next;
    }
  }
}

// -- traffic ----------------------------------------------------------------------------------

bool session::on_frame(const frame_header& hdr, std::string_view body) {
  if (state_ == state::handshake)
    return on_handshake_command(body);
  if (cipher_ == nullptr)
    return on_traffic(hdr.more(), hdr.command(), body);
  // CURVE: every frame is a MESSAGE; its box holds the real flags (the outer ones mirror
  // them in libzmq, but only the sealed ones are authentic).
  auto start = partial_.bytes.size();
  bool more = false;
  bool command = false;
  if (auto err = cipher_->open(body, more, command, partial_.bytes))
    return fail(std::move(err));
  if (command) {
    std::string cmd = partial_.bytes.substr(start);
    partial_.bytes.resize(start);
    return on_traffic(more, true, cmd);
  }
  // The bytes are already in place; account for them as a data frame.
  if (partial_.bytes.size() > cfg_.lim.max_message_size)
    return fail({errc::message_too_large,
                 "a multipart message of more than "
                   + std::to_string(cfg_.lim.max_message_size) + " bytes"});
  if (partial_.ends.size() >= cfg_.lim.max_frames)
    return fail({errc::too_many_frames, "a multipart message of more than "
                                          + std::to_string(cfg_.lim.max_frames) + " frames"});
  partial_.ends.push_back(partial_.bytes.size());
  return more ? true : deliver();
}

bool session::on_traffic(bool more, bool command, std::string_view body) {
  if (command) {
    if (body.size() > cfg_.lim.max_command_size)
      return fail({errc::malformed_command, "command of " + std::to_string(body.size())
                                              + " bytes exceeds the limit"});
    return on_command(body);
  }
  if (partial_.ends.size() >= cfg_.lim.max_frames)
    return fail({errc::too_many_frames, "a multipart message of more than "
                                          + std::to_string(cfg_.lim.max_frames) + " frames"});
  if (partial_.ends.empty() && last_frames_ > 0) {
    // Most traffic is runs of similar messages (Zeek's 4-frame events): one allocation
    // each for the bytes and the frame list instead of growing them frame by frame.
    partial_.bytes.reserve(std::min(std::max(last_bytes_, body.size()), reserve_cap));
    partial_.ends.reserve(last_frames_);
  }
  partial_.bytes.append(body);
  partial_.ends.push_back(partial_.bytes.size());
  return more ? true : deliver();
}

bool session::deliver() {
  // Built in place: an event is large (a message, a prefix, an error) and one arrives per
  // message.
  auto& ev = events_->emplace_back();
  auto first = partial_.frame(0);
  // A one-frame message starting with 0x01 or 0x00 is a (un)subscription to a publisher.
  if (publisher(cfg_.type) && partial_.size() == 1 && !first.empty()
      && (first[0] == 1 || first[0] == 0)) {
    ev.what = first[0] == 1 ? event::kind::subscribe : event::kind::unsubscribe;
    ev.data.assign(first.substr(1));
    partial_.bytes.clear();
    partial_.ends.clear();
  } else {
    ev.what = event::kind::message;
    last_bytes_ = partial_.bytes.size();
    last_frames_ = partial_.ends.size();
    ev.msg.bytes = std::move(partial_.bytes);
    ev.msg.ends = std::move(partial_.ends);
    partial_.bytes.clear();
    partial_.ends.clear();
  }
  return true;
}

bool session::on_command(std::string_view body) {
  command cmd;
  if (auto err = parse_command(body, cmd))
    return fail(std::move(err));
  if (cmd.name == "PING") {
    uint16_t ttl = 0;
    std::string_view context;
    if (auto err = parse_ping_data(cmd.data, ttl, context))
      return fail(std::move(err));
    peer_ttl_ = ttl;
    send_command("PONG", context);
    return check_output();
  }
  if (cmd.name == "PONG") {
    // A PONG echoes a PING context, which is at most 16 bytes.
    if (cmd.data.size() > max_ping_context)
      return fail({errc::malformed_command, "PONG context of " + std::to_string(cmd.data.size())
                                              + " bytes, at most 16 allowed"});
    event ev;
    ev.what = event::kind::pong;
    ev.data.assign(cmd.data);
    events_->push_back(std::move(ev));
    return true;
  }
  if (cmd.name == "SUBSCRIBE" || cmd.name == "CANCEL") {
    if (!publisher(cfg_.type))
      return fail({errc::unexpected_command, std::string{cmd.name} + " command sent to an "
                                               + to_string(cfg_.type)
                                               + ", which publishes nothing"});
    event ev;
    ev.what = cmd.name == "SUBSCRIBE" ? event::kind::subscribe : event::kind::unsubscribe;
    ev.data.assign(cmd.data);
    events_->push_back(std::move(ev));
    return true;
  }
  if (cmd.name == "ERROR") {
    std::string reason;
    if (auto err = parse_error_data(cmd.data, reason))
      return fail(std::move(err));
    return fail({errc::peer_error, "the peer sent ERROR '" + reason + "'"});
  }
  // Unknown commands (and handshake commands repeated) are ignored, as libzmq does.
  ++ignored_commands_;
  return true;
}

// -- our output -------------------------------------------------------------------------------

bool session::send_subscription(bool subscribe, std::string_view prefix) {
  if (!ready() || !subscriber(cfg_.type))
    return false;
  if (peer_.minor >= 1 && !cfg_.subscriptions_as_messages) {
    send_command(subscribe ? "SUBSCRIBE" : "CANCEL", prefix);
    return true;
  }
  scratch_.clear();
  scratch_ += subscribe ? '\x01' : '\x00';
  scratch_.append(prefix);
  if (cipher_ != nullptr) {
    std::string body;
    body.swap(scratch_);
    cipher_->seal(false, false, body, out_);
  } else {
    append_frame_header(out_, false, false, scratch_.size());
    out_ += scratch_;
  }
  return true;
}

bool session::ping(uint16_t ttl_deciseconds, std::string_view context) {
  if (!ready() || peer_.minor < 1 || context.size() > max_ping_context)
    return false;
  send_command("PING", ping_data(ttl_deciseconds, context));
  return true;
}

void session::seal_frames(const std::string_view* frames, size_t count) {
  scratch_.clear();
  for (size_t i = 0; i < count; ++i)
    cipher_->seal(i + 1 < count, false, frames[i], scratch_);
}

} // namespace broker::internal::zmtp
