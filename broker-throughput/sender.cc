#include "sender.hh"

#include "events.hh"

#include <algorithm>
#include <string>

namespace broker_throughput {

namespace {

using clock = session::clock;

/// The send time of batch `index` at `rate` batches per second after `start`. Computed from
/// the start rather than added up, so rounding never accumulates into drift.
clock::time_point batch_time(clock::time_point start, uint64_t index, uint64_t rate) {
  auto ns = std::chrono::nanoseconds{std::chrono::seconds{1}}.count();
  auto offset = static_cast<double>(index) * static_cast<double>(ns) / static_cast<double>(rate);
  return start + std::chrono::nanoseconds{static_cast<int64_t>(offset)};
}

/// Waits for the next batch slot while serving the sink's input. False: stop the run.
bool await_slot(session& s, event_sink& sink, clock::time_point slot, broker::error& err) {
  for (;;) {
    auto deadline = std::min(slot, s.end_of_run());
    switch (s.wait({sink.input_fd()}, deadline)) {
      case wake_reason::signal:
        return false;
      case wake_reason::deadline:
        // The sink's input may not be on its descriptor (status events next to echoes).
        if ((err = sink.handle_input()))
          return false;
        return !s.done();
      case wake_reason::input:
        if ((err = sink.handle_input()))
          return false;
    }
  }
}

} // namespace

int run_sender(session& s, event_sink& sink) {
  const auto& opts = s.options();
  event_factory factory{opts.event_type, opts.latency};
  std::vector<broker::data_message> batch;
  broker::error err;
  auto start = clock::now();
  for (uint64_t index = 0; !s.done(); ++index) {
    if (opts.batch_rate > 0) {
      if (!await_slot(s, sink, batch_time(start, index, opts.batch_rate), err))
        break;
    } else if (s.interrupted()) {
      break;
    } else if ((err = sink.handle_input())) {
      break;
    }
    auto size = opts.batch_size;
    if (opts.count > 0)
      size = std::min(size, opts.count - s.total());
    batch.clear();
    batch.reserve(size);
    for (uint64_t i = 0; i < size; ++i)
      batch.emplace_back(broker::topic{std::string{events_topic}},
                         factory.make(broker::now()));
    if ((err = sink.send(batch)))
      break;
    s.add(size);
  }
  if (!err)
    sink.finish(s);
  run_summary result;
  result.events = s.total();
  result.seconds = s.seconds_since_start();
  sink.complete(result);
  s.out().summary(result);
  if (err) {
    print_diagnostic(err.message());
    return exit_runtime_failure;
  }
  return exit_clean;
}

} // namespace broker_throughput
