#pragma once

// The main thread's loop state: signals, waiting, the per-second rate line, and the bounds
// of a run (--count, --duration).
//
// Threads: everything here runs on the main thread. The endpoint's threads reach it only
// through file descriptors (subscribers, status events); SIGINT and SIGTERM reach it through
// a signalfd, so no work happens in a signal handler.
//
// Flow:
//   1. signal_watch blocks SIGINT and SIGTERM *before* the endpoint starts its threads (they
//      inherit the mask) and opens a signalfd for them.
//   2. A mode calls wait() whenever it has nothing to do, and interrupted() from busy loops
//      (it polls the signalfd at most once per millisecond, so it costs next to nothing).
//   3. The mode reports events with add(); the first one starts the run clock, the rate
//      line and --duration. done() tells when --count or --duration is reached.

#include "options.hh"
#include "report.hh"

#include "signal_watch.hh"

#include <chrono>
#include <cstdint>
#include <initializer_list>

namespace broker_throughput {

/// SIGINT/SIGTERM as a descriptor (shared with the other tools).
using broker_tools::signal_watch;

/// Why wait() returned.
enum class wake_reason : uint8_t { input, signal, deadline };

/// See the file comment.
class session {
public:
  using clock = std::chrono::steady_clock;

  session(const throughput_options& opts, signal_watch& signals, const reporter& out);

  /// Waits until one of `fds` (negative entries are ignored) is readable, a signal arrives
  /// or `deadline` passes. Prints due rate lines on the way.
  wake_reason wait(std::initializer_list<int> fds, clock::time_point deadline);

  /// True once SIGINT or SIGTERM arrived. Cheap enough for every iteration of a busy loop.
  bool interrupted();

  /// Counts `n` events (sent or received) and prints a due rate line.
  void add(uint64_t n);

  /// Prints the rate line if one is due.
  void tick();

  /// True when --count events were counted or --duration has passed since the first one.
  bool done() const;

  /// When --duration ends (or time_point::max()).
  clock::time_point end_of_run() const noexcept { return end_of_run_; }

  /// Events counted so far.
  uint64_t total() const noexcept { return total_; }

  /// Seconds from the first counted event to `until` (0 before the first event).
  double seconds_since_start(clock::time_point until = clock::now()) const;

  /// Seconds from the first to the last counted event.
  double active_seconds() const { return seconds_since_start(last_event_); }

  const throughput_options& options() const noexcept { return opts_; }

  const reporter& out() const noexcept { return out_; }

private:
  void tick(clock::time_point now);

  const throughput_options& opts_;
  signal_watch& signals_;
  const reporter& out_;
  bool interrupted_ = false;
  bool started_ = false;
  clock::time_point start_;
  clock::time_point last_event_;
  clock::time_point end_of_run_ = clock::time_point::max();
  clock::time_point next_tick_ = clock::time_point::max();
  clock::time_point last_tick_;
  clock::time_point next_signal_check_;
  uint64_t total_ = 0;
  uint64_t since_tick_ = 0;
};

} // namespace broker_throughput
