// Fuzz target: a ZMTP session (zmtp/session, NULL mechanism) fed a hostile peer's byte
// stream: greeting, frames, commands, multipart messages, subscriptions.
// Input: [control][chunking seed][stream bytes...]. Control bits:
//   0-1  our socket type: XPUB, XSUB, PUB, SUB
//   2    our role: dialed (0) or accepted (1)
//   3    small limits (message 200 bytes, 4 frames, commands 64 bytes, replies 256 bytes)
//   4    subscriptions in message form
//   5    the owner drains our output after every feed (1) or only at the end (0)
//
// Checks: one feed() of the whole stream and feeds of pseudo-random chunks give the same
// events and output (unless a reply flood, which depends on draining, ends one of them);
// ready comes once and first, failed at most once and last, nothing after it; messages
// respect the limits and subscriptions reach publishers only; everything we send is our
// greeting then valid command frames (READY, PONG, ERROR); once ready, a message we encode
// parses back to its frames, and PING and subscriptions encode when the peer allows them.

#include "fuzz_common.hh"

#include "broker/internal/zmtp/session.hh"

#include <cstring>
#include <memory>
#include <random>

using namespace broker;
namespace zmtp = broker::internal::zmtp;
using kind = zmtp::event::kind;

namespace {

constexpr zmtp::socket_type types[] = {zmtp::socket_type::xpub, zmtp::socket_type::xsub,
                                       zmtp::socket_type::pub, zmtp::socket_type::sub};

zmtp::session_config make_config(uint8_t control) {
  zmtp::session_config cfg;
  cfg.type = types[control & 0x03];
  cfg.server = control & 0x04;
  if (control & 0x08) {
    cfg.lim.max_message_size = 200;
    cfg.lim.max_frames = 4;
    cfg.lim.max_command_size = 64;
    cfg.lim.max_pending_output = 256;
  }
  cfg.subscriptions_as_messages = control & 0x10;
  return cfg;
}

struct run {
  std::unique_ptr<zmtp::session> session;
  std::vector<zmtp::event> events;
  std::string output;
  bool flooded = false;
};

// Feeds `stream` in chunks (0: all at once), checking the event grammar as it goes.
run feed(const zmtp::session_config& cfg, std::string_view stream, uint8_t seed, bool drain) {
  run r;
  r.session = std::make_unique<zmtp::session>(cfg);
  auto& s = *r.session;
  std::minstd_rand chunks{seed};
  size_t fed = 0;
  bool failed = false;
  while (fed < stream.size()) {
    auto n = seed == 0 ? stream.size() : std::min<size_t>(stream.size() - fed, 1 + chunks() % 64);
    auto before = r.events.size();
    auto ok = s.feed(stream.substr(fed, n), r.events);
    fed += n;
    if (failed) {
      FUZZ_CHECK(!ok);
      FUZZ_CHECK(r.events.size() == before);
    }
    FUZZ_CHECK(ok == !s.failed());
    if (!ok && !failed) {
      failed = true;
      FUZZ_CHECK(r.events.size() > before && r.events.back().what == kind::failed);
      FUZZ_CHECK(r.events.back().err.code != zmtp::errc::none);
      FUZZ_CHECK(!r.events.back().err.reason.empty());
      r.flooded = r.events.back().err.code == zmtp::errc::flood;
    }
    if (drain)
      r.output += s.take_output();
  }
  r.output += s.take_output();
  return r;
}

void check_grammar(const zmtp::session_config& cfg, const run& r) {
  bool ready = false;
  for (size_t i = 0; i < r.events.size(); ++i) {
    auto& ev = r.events[i];
    switch (ev.what) {
      case kind::ready:
        FUZZ_CHECK(!ready && i == 0);
        ready = true;
        break;
      case kind::failed:
        FUZZ_CHECK(i + 1 == r.events.size());
        break;
      case kind::subscribe:
      case kind::unsubscribe:
        FUZZ_CHECK(ready);
        FUZZ_CHECK(cfg.type == zmtp::socket_type::xpub || cfg.type == zmtp::socket_type::pub);
        break;
      case kind::message:
        FUZZ_CHECK(ready);
        FUZZ_CHECK(ev.msg.size() >= 1 && ev.msg.size() <= cfg.lim.max_frames);
        FUZZ_CHECK(ev.msg.bytes.size() <= cfg.lim.max_message_size);
        FUZZ_CHECK(ev.msg.ends.back() == ev.msg.bytes.size());
        break;
      case kind::pong:
        FUZZ_CHECK(ready);
        FUZZ_CHECK(ev.data.size() <= zmtp::max_ping_context);
        break;
    }
  }
}

// Our output: the greeting, then command frames we may send.
void check_output(const zmtp::session_config& cfg, std::string_view out) {
  FUZZ_CHECK(out.substr(0, zmtp::greeting_size) == zmtp::make_greeting(cfg.mech, false));
  out.remove_prefix(zmtp::greeting_size);
  while (!out.empty()) {
    zmtp::frame_header hdr;
    zmtp::error err;
    FUZZ_CHECK(zmtp::parse_frame_header(out, hdr, err) == zmtp::parse_status::ok);
    FUZZ_CHECK(out.size() - hdr.header_size >= hdr.size);
    FUZZ_CHECK(hdr.command() && !hdr.more());
    zmtp::command cmd;
    FUZZ_CHECK(!zmtp::parse_command(out.substr(hdr.header_size, hdr.size), cmd));
    FUZZ_CHECK_MSG(cmd.name == "READY" || cmd.name == "PONG" || cmd.name == "ERROR",
                   std::string{cmd.name});
    out.remove_prefix(hdr.header_size + hdr.size);
  }
}

bool same(const zmtp::event& a, const zmtp::event& b) {
  return a.what == b.what && a.data == b.data && a.msg.bytes == b.msg.bytes
         && a.msg.ends == b.msg.ends && a.err.code == b.err.code && a.err.reason == b.err.reason;
}

// Once ready: what we encode must parse back.
void check_encoders(zmtp::session& s) {
  if (!s.ready())
    return;
  s.take_output();
  const std::string_view frames[] = {"topic", "", std::string_view{"\0\1\2", 3}};
  zmtp::string_sink sink;
  FUZZ_CHECK(s.write_message(frames, 3, sink));
  std::string_view out = sink.out;
  for (size_t i = 0; i < 3; ++i) {
    zmtp::frame_header hdr;
    zmtp::error err;
    FUZZ_CHECK(zmtp::parse_frame_header(out, hdr, err) == zmtp::parse_status::ok);
    FUZZ_CHECK(hdr.more() == (i < 2) && !hdr.command());
    FUZZ_CHECK(out.substr(hdr.header_size, hdr.size) == frames[i]);
    out.remove_prefix(hdr.header_size + hdr.size);
  }
  FUZZ_CHECK(out.empty());
  FUZZ_CHECK(s.ping(10, "x") == (s.peer().minor >= 1));
  auto type = s.peer().type;
  bool subscriber = type == zmtp::socket_type::pub || type == zmtp::socket_type::xpub;
  FUZZ_CHECK(s.subscribe("p") == subscriber);
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  auto greeting = zmtp::make_greeting(zmtp::mechanism::null, false);
  auto ready = [](std::string_view type) {
    std::string md;
    zmtp::append_property(md, "Socket-Type", type);
    std::string out;
    zmtp::append_command(out, "READY", md);
    return out;
  };
  std::string traffic;
  zmtp::append_command(traffic, "SUBSCRIBE", "zeek/");
  traffic += std::string{"\x00\x06\x01zeek/", 8};
  zmtp::append_command(traffic, "PING", zmtp::ping_data(300, "ctx"));
  for (auto frame : {"zeek/cluster/nodeid/w1/", "w1-1234", "broker-bin-v1"}) {
    zmtp::append_frame_header(traffic, true, false, std::strlen(frame));
    traffic += frame;
  }
  zmtp::append_frame_header(traffic, false, false, 300);
  traffic += std::string(300, 'p');
  zmtp::append_command(traffic, "CANCEL", "zeek/");
  zmtp::append_command(traffic, "PONG", "c");
  std::string error_cmd;
  zmtp::append_command(error_cmd, "ERROR", zmtp::error_data("nope"));
  auto control = [](uint8_t c) { return std::string{static_cast<char>(c), '\x2a'}; };
  return {
    {"xpub-conversation", control(0x24) + greeting + ready("XSUB") + traffic},
    {"xsub-conversation", control(0x21) + greeting + ready("XPUB") + traffic},
    {"xpub-small-limits", control(0x2c) + greeting + ready("SUB") + traffic},
    {"xsub-messages-form", control(0x31) + greeting + ready("PUB") + traffic},
    {"undrained", control(0x0c) + greeting + ready("XSUB") + traffic + traffic},
    {"wrong-type", control(0x20) + greeting + ready("PUSH")},
    {"peer-error", control(0x20) + greeting + error_cmd},
    {"zmtp2", control(0x20) + greeting.substr(0, 10) + "\x01\x05"},
  };
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  auto control = data[0];
  auto seed = data[1];
  auto stream = fuzz::as_text(data + 2, size - 2);
  auto cfg = make_config(control);
  bool drain = control & 0x20;
  auto whole = feed(cfg, stream, 0, drain);
  check_grammar(cfg, whole);
  check_output(cfg, whole.output);
  auto chunked = feed(cfg, stream, seed == 0 ? 1 : seed, drain);
  check_grammar(cfg, chunked);
  if (!whole.flooded && !chunked.flooded) {
    FUZZ_CHECK(whole.events.size() == chunked.events.size());
    for (size_t i = 0; i < whole.events.size(); ++i)
      FUZZ_CHECK_MSG(same(whole.events[i], chunked.events[i]), "event " + std::to_string(i));
    FUZZ_CHECK(whole.output == chunked.output);
  }
  check_encoders(*chunked.session);
  return 0;
}
