#include "session.hh"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <vector>

namespace broker_throughput {

namespace {

/// Period of the rate line.
constexpr auto rate_interval = std::chrono::seconds{1};

/// How often a busy loop looks at the signalfd.
constexpr auto signal_check_interval = std::chrono::milliseconds{1};

/// The time left until `until`, for ppoll (never negative; nanosecond precision, so short
/// pacing intervals are not rounded up to a millisecond).
timespec time_left(session::clock::time_point now, session::clock::time_point until) {
  auto left = until <= now ? session::clock::duration::zero() : until - now;
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(left);
  // Nobody waits longer than a day in one call: wait() loops anyway.
  constexpr auto max_wait = std::chrono::hours{24};
  if (secs > max_wait)
    return timespec{std::chrono::duration_cast<std::chrono::seconds>(max_wait).count(), 0};
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(left - secs);
  return timespec{static_cast<time_t>(secs.count()), static_cast<long>(nanos.count())};
}

double to_seconds(session::clock::duration x) {
  return std::chrono::duration<double>(x).count();
}

} // namespace

// -- session ----------------------------------------------------------------------------

session::session(const throughput_options& opts, signal_watch& signals, const reporter& out)
  : opts_(opts), signals_(signals), out_(out) {
}

wake_reason session::wait(std::initializer_list<int> fds, clock::time_point deadline) {
  std::vector<pollfd> polled;
  polled.reserve(fds.size() + 1);
  polled.push_back({signals_.fd(), POLLIN, 0});
  for (auto fd : fds)
    if (fd >= 0)
      polled.push_back({fd, POLLIN, 0});
  for (;;) {
    if (interrupted_)
      return wake_reason::signal;
    auto now = clock::now();
    tick(now);
    if (now >= deadline)
      return wake_reason::deadline;
    auto timeout = time_left(now, std::min(deadline, next_tick_));
    auto n = ::ppoll(polled.data(), polled.size(), &timeout, nullptr);
    if (n < 0 && errno != EINTR) {
      interrupted_ = true; // poll itself failed: nothing sensible left but to stop.
      return wake_reason::signal;
    }
    if (n <= 0)
      continue;
    if ((polled[0].revents & POLLIN) != 0 && signals_.consume()) {
      interrupted_ = true;
      return wake_reason::signal;
    }
    for (size_t i = 1; i < polled.size(); ++i)
      if (polled[i].revents != 0)
        return wake_reason::input;
  }
}

bool session::interrupted() {
  if (interrupted_)
    return true;
  auto now = clock::now();
  if (now < next_signal_check_)
    return false;
  next_signal_check_ = now + signal_check_interval;
  tick(now);
  interrupted_ = signals_.consume();
  return interrupted_;
}

void session::add(uint64_t n) {
  if (n == 0)
    return;
  auto now = clock::now();
  if (!started_) {
    started_ = true;
    start_ = now;
    last_tick_ = now;
    next_tick_ = now + rate_interval;
    if (opts_.duration.count() > 0)
      end_of_run_ = now + opts_.duration;
  }
  tick(now);
  total_ += n;
  since_tick_ += n;
  last_event_ = now;
}

void session::tick() {
  tick(clock::now());
}

void session::tick(clock::time_point now) {
  if (now < next_tick_)
    return;
  out_.rate(since_tick_, to_seconds(now - last_tick_), to_seconds(now - start_));
  since_tick_ = 0;
  last_tick_ = now;
  // Skip missed ticks instead of printing a burst of them after a stall.
  while (next_tick_ <= now)
    next_tick_ += rate_interval;
}

bool session::done() const {
  if (opts_.count > 0 && total_ >= opts_.count)
    return true;
  return started_ && clock::now() >= end_of_run_;
}

double session::seconds_since_start(clock::time_point until) const {
  return started_ ? to_seconds(until - start_) : 0.0;
}

} // namespace broker_throughput
