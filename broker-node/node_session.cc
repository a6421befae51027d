#include "node_session.hh"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace broker_node {

namespace {

/// Period of the `rate:` line.
constexpr auto rate_interval = std::chrono::seconds{1};

/// Placeholder for a field an event does not carry.
constexpr std::string_view no_field = "-";

/// The signals that end the node cleanly.

void append_hex_escape(std::string& out, unsigned char c) {
  constexpr std::string_view digits = "0123456789abcdef";
  out += "\\x";
  out += digits[c >> 4];
  out += digits[c & 0x0F];
}

std::string context_fields(const broker::endpoint_info& ctx) {
  std::string result = ctx.node.is_nil() ? std::string{no_field} : to_string(ctx.node);
  result += ' ';
  if (ctx.network && !ctx.network->address.empty())
    result += ctx.network->address + ":" + std::to_string(ctx.network->port);
  else
    result += no_field;
  return result;
}

int poll_timeout_ms(node_session::clock::time_point now,
                    node_session::clock::time_point until) {
  if (until <= now)
    return 0;
  // Round up so that a wake-up never comes before the deadline.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, INT32_MAX));
}

} // namespace

// -- output ---------------------------------------------------------------------------------

void print_line(std::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

namespace {

bool json_output = false;

} // namespace

void set_json_output(bool on) {
  json_output = on;
}

void print_event(std::string_view kind, nlohmann::json fields, std::string_view text) {
  if (!json_output) {
    print_line(text);
    return;
  }
  fields["type"] = kind; // As broker-throughput --json names its lines.
  // Topics and values may hold any bytes: invalid UTF-8 becomes U+FFFD, never a broken line.
  print_line(fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string escape_line(std::string_view text) {
  std::string result;
  result.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\\':
        result += "\\\\";
        break;
      case '\n':
        result += "\\n";
        break;
      case '\r':
        result += "\\r";
        break;
      case '\t':
        result += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F)
          append_hex_escape(result, c);
        else
          result += ch;
    }
  }
  return result;
}

std::string received_line(const broker::data_message& msg) {
  return "received " + escape_line(msg.topic()) + " " + escape_line(to_string(msg.value()));
}

nlohmann::json event_fields(const broker::status_variant& event) {
  nlohmann::json result;
  auto context = [&result](const broker::endpoint_info& ctx) {
    result["peer"] = ctx.node.is_nil() ? nlohmann::json(nullptr)
                                       : nlohmann::json(to_string(ctx.node));
    if (ctx.network && !ctx.network->address.empty())
      result["address"] = ctx.network->address + ":" + std::to_string(ctx.network->port);
    else
      result["address"] = nullptr;
  };
  if (auto* st = std::get_if<broker::status>(&event)) {
    result["code"] = std::string{to_string(st->code())};
    context(st->context());
    result["message"] = st->message();
  } else if (auto* err = std::get_if<broker::error>(&event)) {
    result["code"] = std::string{to_string(err->code())};
    result["message"] = err->message();
  }
  return result;
}

std::string event_line(const broker::status_variant& event) {
  if (auto* st = std::get_if<broker::status>(&event))
    return "status " + std::string{to_string(st->code())} + " " + context_fields(st->context())
           + " " + escape_line(st->message());
  if (auto* err = std::get_if<broker::error>(&event))
    return "error " + std::string{to_string(err->code())} + " " + escape_line(err->message());
  return {};
}

// -- node_session ---------------------------------------------------------------------------

node_session::node_session(broker::endpoint& ep, const node_options& opts,
                           signal_watch& signals)
  : ep_(ep),
    opts_(opts),
    signals_(signals),
    events_(ep.make_status_subscriber(true)),
    next_tick_(clock::now() + rate_interval) {
}

wake_reason node_session::wait(int fd, clock::time_point deadline) {
  enum : size_t { input_slot, events_slot, signal_slot, num_slots };
  for (;;) {
    drain_events();
    auto now = clock::now();
    tick(now);
    if (now >= deadline)
      return wake_reason::deadline;
    auto until = opts_.rate ? std::min(deadline, next_tick_) : deadline;
    pollfd fds[num_slots] = {{fd, POLLIN, 0},
                             {events_.fd(), POLLIN, 0},
                             {signals_.fd(), POLLIN, 0}};
    auto n = ::poll(fds, num_slots, poll_timeout_ms(now, until));
    if (n < 0 && errno != EINTR)
      return wake_reason::signal; // poll itself failed: nothing sensible left but to stop.
    if (n <= 0)
      continue;
    if ((fds[signal_slot].revents & POLLIN) != 0) {
      if (signals_.consume())
        return wake_reason::signal;
      // SIGHUP: reload the access rules; the endpoint logs the outcome, connections stay.
      if (signals_.take_hangup())
        ep_.reload_security();
    }
    if (fds[input_slot].revents != 0)
      return wake_reason::input;
  }
}

void node_session::received(const broker::data_message& msg) {
  ++received_since_tick_;
  if (opts_.verbose)
    print_verbose("received", {{"topic", msg.topic()}, {"value", to_string(msg.value())}},
                  received_line(msg));
}

void node_session::drain_events() {
  for (auto& event : events_.poll())
    if (opts_.verbose)
      if (auto line = event_line(event); !line.empty())
        print_verbose(line.substr(0, line.find(' ')), event_fields(event), line);
}

void node_session::print_verbose(std::string_view kind, nlohmann::json fields,
                                 const std::string& line) {
  if (opts_.name.empty()) {
    print_event(kind, std::move(fields), line);
    return;
  }
  fields["name"] = opts_.name;
  print_event(kind, std::move(fields), "[" + escape_line(opts_.name) + "] " + line);
}

void node_session::tick(clock::time_point now) {
  if (now < next_tick_)
    return;
  if (opts_.rate)
    print_event("rate", {{"messages_per_second", received_since_tick_}},
                "rate: " + std::to_string(received_since_tick_) + " messages/s");
  received_since_tick_ = 0;
  // Skip missed ticks instead of printing a burst of them after a stall.
  while (next_tick_ <= now)
    next_tick_ += rate_interval;
}

} // namespace broker_node
