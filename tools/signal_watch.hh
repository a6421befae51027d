#pragma once

// signal_watch: SIGINT and SIGTERM as a pollable descriptor, for the tools' main loops.
//
// The constructor blocks both signals in the calling thread (so every thread started later
// inherits the mask) and opens a signalfd; the main loop polls fd() next to its own
// descriptors and calls consume(). Nothing runs in a signal handler.

namespace broker_tools {

/// Owns SIGINT and SIGTERM for the process (see the file comment).
class signal_watch {
public:
  /// Blocks the signals in the calling thread. Call before any other thread starts.
  signal_watch();
  ~signal_watch();

  signal_watch(const signal_watch&) = delete;
  signal_watch& operator=(const signal_watch&) = delete;

  /// Readable when a signal is pending; -1 if the signalfd could not be created.
  int fd() const noexcept { return fd_; }

  /// Consumes pending signals; returns true if there was one.
  bool consume();

private:
  int fd_ = -1;
};

} // namespace broker_tools
