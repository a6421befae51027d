#pragma once

// runner: executes parsed operations against one store handle and prints one JSON line per
// operation on stdout (doc/broker-store.md "Output"):
//   {"op":"get","value":{"@data-type":"count","data":5}}
//   {"op":"put","ok":true}
//   {"op":"get","error":"no_such_key","message":"..."}
//
// Writes are asynchronous in the store API. After each write the runner waits for the
// master's verdict (store::await_verdict, doc/broker-store.md "Writes"): `ok` once the
// master applied it, the master's error (type_clash, ...) if it rejected it, and
// {"op":...,"ok":true,"verdict":"acknowledged"} from a Zeek Broker master, which takes
// writes without saying whether it applied them. Through a clone the clone then holds the
// master's state after the write, so a read on the next line sees it. With
// --fire-and-forget a clone's write is `ok` with "verdict":"forwarded" as soon as the clone
// has handed it on (a master's own writes always get their verdict: it is local).
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
  /// `fire_and_forget`: do not wait for the verdict of a write through a clone.
  runner(broker::endpoint& ep, broker::store st, broker::timespan timeout,
         interrupt_check interrupted, bool fire_and_forget = false);

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

  /// Reports `err`, if any, as the write's result; otherwise the master's verdict.
  bool finish_write(std::string_view op, broker::error err);

  bool print_value(std::string_view op, const broker::expected<broker::data>& x);
  void print_ok(std::string_view op, std::string_view verdict = {});

  broker::endpoint& ep_;
  broker::store store_;
  broker::timespan timeout_;
  interrupt_check check_interrupt_;
  bool fire_and_forget_;
  bool interrupted_ = false;
};

} // namespace broker_store
