#pragma once

// The client's send loop, shared by both transports.
//
// Flow (main thread):
//   1. The mode connects its transport and wraps it in an event_sink.
//   2. run_sender() builds batches of fresh events (events.hh) and hands each to the sink:
//      paced at --batch-rate (waiting in session::wait, so signals and the sink's input are
//      served between batches), or back to back at rate 0.
//   3. It stops at --count, --duration, a signal, or an error from the sink, then lets the
//      sink finish (drain queues, collect late echoes) and prints the summary.

#include "session.hh"

#include <broker/error.hh>
#include <broker/message.hh>

#include <vector>

namespace broker_throughput {

/// A transport the send loop publishes into.
class event_sink {
public:
  virtual ~event_sink() = default;

  /// Sends one batch; blocks while the transport pushes back. An error ends the run.
  virtual broker::error send(std::vector<broker::data_message>& batch) = 0;

  /// A descriptor that signals input for the sink (echoes, status events), or -1.
  virtual int input_fd() const { return -1; }

  /// Handles whatever input is pending without blocking; called before every batch, so it
  /// must be cheap when there is none. An error ends the run.
  virtual broker::error handle_input() { return {}; }

  /// After the last batch (also after a signal): waits, bounded, until the transport
  /// delivered what it queued and, unless interrupted, for outstanding echoes.
  virtual void finish(session& s) {}

  /// Adds what the sink knows (drops, latency) to the summary.
  virtual void complete(run_summary& result) {}
};

/// Runs the send loop (see the file comment); returns the exit code.
int run_sender(session& s, event_sink& sink);

} // namespace broker_throughput
