#pragma once

// signal_watch: SIGINT and SIGTERM (and, on request, SIGHUP) as a pollable descriptor, for
// the tools' main loops.
//
// The constructor blocks SIGINT and SIGTERM in the calling thread (so every thread started
// later inherits the mask) and opens a signalfd; the main loop polls fd() next to its own
// descriptors and calls consume(). A program that reloads its configuration on SIGHUP
// (broker-node) calls watch_hangup() before it starts any thread, and asks
// take_hangup() after consume(). Nothing runs in a signal handler.

namespace broker_tools {

/// Owns SIGINT and SIGTERM (and SIGHUP after watch_hangup()) for the process.
class signal_watch {
public:
  /// Blocks the signals in the calling thread. Call before any other thread starts.
  signal_watch();
  ~signal_watch();

  signal_watch(const signal_watch&) = delete;
  signal_watch& operator=(const signal_watch&) = delete;

  /// Also watches SIGHUP (which otherwise ends the process). Call before any other thread
  /// starts, like the constructor. Returns false if the signalfd cannot watch it.
  bool watch_hangup();

  /// Readable when a signal is pending; -1 if the signalfd could not be created.
  int fd() const noexcept { return fd_; }

  /// Consumes pending signals; returns true if SIGINT or SIGTERM was among them. A SIGHUP
  /// among them is remembered for take_hangup().
  bool consume();

  /// True once per SIGHUP batch that consume() saw since the last call.
  bool take_hangup() noexcept {
    bool result = hangup_;
    hangup_ = false;
    return result;
  }

private:
  int fd_ = -1;
  bool hangup_ = false;
};

} // namespace broker_tools
