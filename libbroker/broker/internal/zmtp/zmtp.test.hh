#pragma once

// Test helpers for the zmtp unit tests: hex vectors and two sessions wired back to back.

#include "broker/internal/zmtp/session.hh"

#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::zmtp::test {

/// Bytes from hex digits; spaces are ignored.
inline std::string hex(std::string_view text) {
  std::string out;
  int hi = -1;
  for (auto c : text) {
    if (c == ' ')
      continue;
    int v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    if (hi < 0) {
      hi = v;
    } else {
      out += static_cast<char>(hi * 16 + v);
      hi = -1;
    }
  }
  return out;
}

/// The kinds of `events`, for compact checks.
inline std::vector<event::kind> kinds(const std::vector<event>& events) {
  std::vector<event::kind> out;
  for (auto& ev : events)
    out.push_back(ev.what);
  return out;
}

/// Two sessions connected back to back in memory.
struct link {
  session a;
  session b;
  std::vector<event> a_events;
  std::vector<event> b_events;

  link(session_config ca, session_config cb) : a(std::move(ca)), b(std::move(cb)) {}

  /// Moves output both ways until neither side has any.
  void pump() {
    for (int round = 0; round < 100 && (a.has_output() || b.has_output()); ++round) {
      if (a.has_output())
        b.feed(a.take_output(), b_events);
      if (b.has_output())
        a.feed(b.take_output(), a_events);
    }
  }
};

/// A config for `type`, accepted (`server`) or dialed, with NULL.
inline session_config null_config(socket_type type, bool server) {
  session_config cfg;
  cfg.type = type;
  cfg.server = server;
  return cfg;
}

} // namespace broker::internal::zmtp::test
