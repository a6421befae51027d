#pragma once

// runner: executes parsed operations against one store handle and prints one JSON line per
// operation on stdout (doc/broker-store.md "Output"):
//   {"op":"get","value":{"@data-type":"count","data":5}}
//   {"op":"put","ok":true}
//   {"op":"get","error":"no_such_key","message":"..."}
//
// Writes are asynchronous in the store API; a write the store rejects (type_clash, ...)
// surfaces as an error event on this endpoint when this endpoint applied it (--master) or
// could not forward it. The runner therefore waits after each write until the store has
// processed it (await_idle), makes one round trip through the core (so that the store's
// error event has been routed), and reports an error event about this store as the
// write's result. A write through a clone is rejected on the master's node instead: there
// it shows up as an error event (broker-node -v prints `error type_clash ...`).
//
// Threads: everything runs on the calling (main) thread.

#include "ops.hh"

#include <broker/endpoint.hh>
#include <broker/store.hh>

#include <functional>
#include <string_view>

namespace broker_store {

/// See the file comment.
class runner {
public:
  /// Answers whether the user asked to stop (SIGINT/SIGTERM); polled while waiting.
  using interrupt_check = std::function<bool()>;

  /// `timeout`: how long a write may take to be processed (broker.store.request-timeout).
  runner(broker::endpoint& ep, broker::store st, broker::timespan timeout,
         interrupt_check interrupted);

  /// Runs `op` and prints its line. Returns false if the line reports an error.
  bool run(const operation& op);

  /// True once a wait was interrupted: run nothing more.
  bool interrupted() const noexcept { return interrupted_; }

  /// Prints the error line of input that did not parse; `op` is its first word, if any.
  void print_error(std::string_view op, const broker::error& err);

private:
  bool run_query(const operation& op);
  bool run_write(const operation& op);
  bool run_wait(const operation& op);

  /// Reports `err`, if any, as the write's result; otherwise an error event about this
  /// store that the write caused.
  bool finish_write(std::string_view op, broker::error err);

  bool print_value(std::string_view op, const broker::expected<broker::data>& x);
  void print_ok(std::string_view op);

  broker::endpoint& ep_;
  broker::store store_;
  broker::timespan timeout_;
  broker::status_subscriber errors_;
  interrupt_check check_interrupt_;
  bool interrupted_ = false;
};

} // namespace broker_store
