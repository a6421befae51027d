#include "runner.hh"

#include "values.hh"

#include <broker/json.hh>

#include <chrono>
#include <cstdio>
#include <thread>

namespace broker_store {

using broker::data;
using broker::ec;
using broker::error;
using broker::expected;

namespace {

/// How often wait-size and wait-get look at the store again.
constexpr auto wait_poll_interval = std::chrono::milliseconds{20};

void print_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string op_field(std::string_view op) {
  return "{\"op\":" + broker::to_json_string(op);
}

} // namespace

runner::runner(broker::endpoint& ep, broker::store st, broker::timespan timeout,
               interrupt_check interrupted, bool fire_and_forget)
  : ep_(ep),
    store_(std::move(st)),
    timeout_(timeout),
    check_interrupt_(std::move(interrupted)),
    fire_and_forget_(fire_and_forget) {}

bool runner::run(const operation& op) {
  if (op.kind == op_kind::wait_size || op.kind == op_kind::wait_get)
    return run_wait(op);
  if (is_write(op.kind))
    return run_write(op);
  return run_query(op);
}

void runner::print_error(std::string_view op, const error& err) {
  print_line(op_field(op) + ",\"error\":" + broker::to_json_string(to_string(err.code()))
             + ",\"message\":" + broker::to_json_string(err.message()) + "}");
}

bool runner::print_value(std::string_view op, const expected<data>& x) {
  if (!x) {
    print_error(op, x.error_value());
    return false;
  }
  print_line(op_field(op) + ",\"value\":" + broker::to_json(*x) + "}");
  return true;
}

void runner::print_ok(std::string_view op, std::string_view verdict) {
  if (verdict.empty())
    print_line(op_field(op) + ",\"ok\":true}");
  else
    print_line(op_field(op) + ",\"ok\":true,\"verdict\":" + broker::to_json_string(verdict)
               + "}");
}

bool runner::run_query(const operation& op) {
  auto name = to_string(op.kind);
  auto as_data = [](const expected<bool>& x) -> expected<data> {
    if (!x)
      return x.error_value();
    return data{*x};
  };
  switch (op.kind) {
    case op_kind::get:
      return print_value(name, store_.get(op.args[0]));
    case op_kind::exists:
      return print_value(name, as_data(store_.exists(op.args[0])));
    case op_kind::keys:
      return print_value(name, store_.keys());
    case op_kind::get_index_from_value:
      return print_value(name, store_.get_index_from_value(op.args[0], op.args[1]));
    case op_kind::put_unique:
      return print_value(name, as_data(store_.put_unique(op.args[0], op.args[1],
                                                         op.duration)));
    default:
      print_error(name, error{ec::logic_error, "not a query"});
      return false;
  }
}

bool runner::run_write(const operation& op) {
  auto name = to_string(op.kind);
  auto& xs = op.args;
  auto expiry = op.duration;
  switch (op.kind) {
    case op_kind::put:
      return finish_write(name, store_.put(xs[0], xs[1], expiry));
    case op_kind::erase:
      return finish_write(name, store_.erase(xs[0]));
    case op_kind::clear:
      return finish_write(name, store_.clear());
    case op_kind::increment:
      return finish_write(name, store_.increment(xs[0], xs[1], expiry));
    case op_kind::decrement:
      return finish_write(name, store_.decrement(xs[0], xs[1], expiry));
    case op_kind::append:
      return finish_write(name, store_.append(xs[0], xs[1], expiry));
    case op_kind::insert_into:
      if (xs.size() == 3)
        return finish_write(name, store_.insert_into(xs[0], xs[1], xs[2], expiry));
      return finish_write(name, store_.insert_into(xs[0], xs[1], expiry));
    case op_kind::remove_from:
      return finish_write(name, store_.remove_from(xs[0], xs[1], expiry));
    case op_kind::push:
      return finish_write(name, store_.push(xs[0], xs[1], expiry));
    case op_kind::pop:
      return finish_write(name, store_.pop(xs[0], expiry));
    default:
      print_error(name, error{ec::logic_error, "not a write"});
      return false;
  }
}

bool runner::finish_write(std::string_view op, error err) {
  if (err) {
    print_error(op, err);
    return false;
  }
  if (fire_and_forget_ && !store_.is_master()) {
    if (!store_.await_idle(timeout_)) {
      print_error(op, error{ec::request_timeout, "store " + store_.name() + ": the write was "
                                                   "not handed on within "
                                                   + broker::to_string(timeout_)});
      return false;
    }
    print_ok(op, "forwarded");
    return true;
  }
  // A clone's own timeout answers first, with the more precise error (no_such_master).
  auto verdict = store_.await_verdict(timeout_ + std::chrono::seconds{1});
  if (!verdict) {
    print_error(op, verdict.error_value());
    return false;
  }
  if (*verdict == broker::write_verdict::acknowledged)
    print_ok(op, to_string(*verdict));
  else
    print_ok(op);
  return true;
}

bool runner::run_wait(const operation& op) {
  auto name = to_string(op.kind);
  auto deadline = std::chrono::steady_clock::now() + *op.duration;
  std::string last; // What the store said last, for the timeout message.
  for (;;) {
    if (op.kind == op_kind::wait_size) {
      auto ks = store_.keys();
      if (ks) {
        auto n = broker::get_if<broker::set>(*ks) ? broker::get<broker::set>(*ks).size() : 0;
        if (n == op.size) {
          print_ok(name);
          return true;
        }
        last = "the store holds " + std::to_string(n) + " keys, not "
               + std::to_string(op.size);
      } else {
        last = to_string(ks.error_value());
      }
    } else {
      auto x = store_.get(op.args[0]);
      if (x && *x == op.args[1]) {
        print_ok(name);
        return true;
      }
      last = x ? "the value is " + broker::to_json(*x) : to_string(x.error_value());
    }
    if (std::chrono::steady_clock::now() >= deadline)
      break;
    if (check_interrupt_ && check_interrupt_()) {
      interrupted_ = true;
      print_error(name, error{ec::shutting_down, "interrupted: " + last});
      return false;
    }
    std::this_thread::sleep_for(wait_poll_interval);
  }
  print_error(name, error{ec::request_timeout,
                          "after " + broker::to_string(*op.duration) + ": " + last});
  return false;
}

} // namespace broker_store
