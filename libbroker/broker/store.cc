#include "broker/store.hh"

#include "broker/internal/store/store_actor.hh"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <sys/eventfd.h>
#include <unistd.h>

namespace broker {

using internal::make_op_add;
using internal::make_op_clear;
using internal::make_op_erase;
using internal::make_op_put;
using internal::make_op_subtract;
using internal::store_frontend;
using internal::store_logic;
using internal::store_reply;

namespace {

error closed_error() {
  return error{ec::shutting_down, "invalid store handle"};
}

/// Calls `reply` with shutting_down unless it was called before: a request whose task the
/// store never ran (it stopped) still gets its one answer.
class reply_once {
public:
  explicit reply_once(store_reply fn) : fn_(std::move(fn)) {}
  ~reply_once() {
    if (fn_)
      fn_(error{ec::shutting_down, "the store stopped"});
  }
  void operator()(expected<data> x) {
    if (auto fn = std::exchange(fn_, nullptr))
      fn(std::move(x));
  }

private:
  store_reply fn_;
};

/// Wraps `fn` so that it answers exactly once.
store_reply once(store_reply fn) {
  auto guard = std::make_shared<reply_once>(std::move(fn));
  return [guard](expected<data> x) { (*guard)(std::move(x)); };
}

} // namespace

store::store() noexcept = default;

store::~store() = default;

store::store(std::shared_ptr<internal::store_frontend> fe) noexcept : fe_(std::move(fe)) {}

const std::string& store::name() const noexcept {
  static const std::string empty;
  return fe_ ? fe_->name() : empty;
}

bool store::is_master() const noexcept {
  return fe_ && fe_->is_master();
}

// -- queries ------------------------------------------------------------------------------

expected<data> store::get(const data& key) const {
  if (!fe_)
    return closed_error();
  return get(key, fe_->request_timeout());
}

expected<data> store::get(const data& key, timespan timeout) const {
  if (!fe_)
    return closed_error();
  return fe_->query([key](store_logic& logic, timestamp,
                          store_reply reply) { logic.get(key, reply); },
                    timeout);
}

expected<data> store::get_index_from_value(const data& key, const data& index) const {
  if (!fe_)
    return closed_error();
  return fe_->query([key, index](store_logic& logic, timestamp, store_reply reply) {
    logic.get_index_from_value(key, index, reply);
  }, fe_->request_timeout());
}

expected<bool> store::exists(const data& key) const {
  if (!fe_)
    return closed_error();
  auto x = fe_->query([key](store_logic& logic, timestamp,
                            store_reply reply) { logic.exists(key, reply); },
                      fe_->request_timeout());
  if (!x)
    return x.error_value();
  if (auto* b = get_if<bool>(*x))
    return *b;
  return error{ec::type_clash, "exists: unexpected answer"};
}

expected<data> store::keys() const {
  if (!fe_)
    return closed_error();
  return fe_->query([](store_logic& logic, timestamp,
                       store_reply reply) { logic.keys(reply); },
                    fe_->request_timeout());
}

// -- writes -------------------------------------------------------------------------------

namespace {

error write_op(const std::shared_ptr<store_frontend>& fe, internal::store_op op) {
  if (!fe)
    return closed_error();
  return fe->write(std::move(op));
}

} // namespace

error store::put(data key, data value, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  return write_op(fe_, make_op_put(std::move(key), std::move(value), expiry, fe_->publisher()));
}

expected<bool> store::put_unique(data key, data value, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  auto publisher = fe_->publisher();
  // A clone's own timeout answers first with the more precise error (no_such_master).
  auto wait = fe_->request_timeout() + std::chrono::seconds{1};
  auto x = fe_->query([key = std::move(key), value = std::move(value), expiry,
                       publisher](store_logic& logic, timestamp now,
                                  store_reply reply) mutable {
    logic.put_unique(std::move(key), std::move(value), expiry, publisher, now,
                     std::move(reply));
  }, wait);
  if (!x)
    return x.error_value();
  if (auto* b = get_if<bool>(*x))
    return *b;
  return error{ec::type_clash, "put_unique: unexpected answer"};
}

error store::erase(data key) {
  if (!fe_)
    return closed_error();
  return write_op(fe_, make_op_erase(std::move(key), fe_->publisher()));
}

error store::clear() {
  if (!fe_)
    return closed_error();
  return write_op(fe_, make_op_clear(fe_->publisher()));
}

error store::increment(data key, data amount, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  auto init = amount.get_type(); // A missing key starts at zero of the amount's type.
  auto op = make_op_add(std::move(key), std::move(amount), init, expiry, fe_->publisher());
  return write_op(fe_, std::move(op));
}

error store::decrement(data key, data amount, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  auto op = make_op_subtract(std::move(key), std::move(amount), expiry, fe_->publisher());
  return write_op(fe_, std::move(op));
}

error store::append(data key, data str, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  auto op = make_op_add(std::move(key), std::move(str), data::type::string, expiry,
                        fe_->publisher());
  return write_op(fe_, std::move(op));
}

error store::insert_into(data key, data element, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  auto op = make_op_add(std::move(key), std::move(element), data::type::set, expiry,
                        fe_->publisher());
  return write_op(fe_, std::move(op));
}

error store::insert_into(data key, data index, data value, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  auto op = make_op_add(std::move(key), vector{std::move(index), std::move(value)},
                        data::type::table, expiry, fe_->publisher());
  return write_op(fe_, std::move(op));
}

error store::remove_from(data key, data element, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  auto op = make_op_subtract(std::move(key), std::move(element), expiry, fe_->publisher());
  return write_op(fe_, std::move(op));
}

error store::push(data key, data value, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  auto op = make_op_add(std::move(key), std::move(value), data::type::vector, expiry,
                        fe_->publisher());
  return write_op(fe_, std::move(op));
}

error store::pop(data key, std::optional<timespan> expiry) {
  if (!fe_)
    return closed_error();
  return write_op(fe_, make_op_subtract(std::move(key), data{}, expiry, fe_->publisher()));
}

// -- synchronization ----------------------------------------------------------------------

bool store::await_ready(timespan timeout) const {
  if (!fe_)
    return false;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = deadline - std::chrono::steady_clock::now();
    auto x = fe_->query([](store_logic& logic, timestamp, store_reply reply) {
      reply(data{logic.ready()});
    }, std::max(timespan{left}, timespan{std::chrono::milliseconds{1}}));
    if (x && get_if<bool>(*x) != nullptr && broker::get<bool>(*x))
      return true;
    if (!x && x.error_value() == ec::shutting_down)
      return false;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
}

std::string_view to_string(write_verdict x) noexcept {
  return x == write_verdict::applied ? "applied" : "acknowledged";
}

expected<write_verdict> store::await_verdict(timespan timeout) const {
  if (!fe_)
    return closed_error();
  auto x = fe_->query([](store_logic& logic, timestamp now, store_reply reply) {
    logic.verdict(now, std::move(reply));
  }, timeout);
  if (!x)
    return x.error_value();
  if (x->get_type() == data::type::none)
    return write_verdict::acknowledged;
  return write_verdict::applied;
}

bool store::await_idle(timespan timeout) const {
  if (!fe_)
    return false;
  // The store handles its mailbox in order: once this query is answered, every write
  // queued before it was processed.
  auto x = fe_->query([](store_logic&, timestamp, store_reply reply) { reply(data{true}); },
                      timeout);
  return x.has_value();
}

} // namespace broker

// -- proxy ----------------------------------------------------------------------------------

namespace broker::internal {

/// The answers of one proxy: a queue and an eventfd readable while it is non-empty.
struct proxy_state {
  proxy_state() : fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~proxy_state() {
    if (fd >= 0)
      ::close(fd);
  }

  void push(store::response x) {
    std::lock_guard<std::mutex> guard{mtx};
    xs.push_back(std::move(x));
    if (xs.size() == 1 && fd >= 0) {
      uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(fd, &one, sizeof(one));
    }
    cv.notify_all();
  }

  /// Pre: mtx held, xs non-empty.
  store::response pop_locked() {
    auto result = std::move(xs.front());
    xs.pop_front();
    if (xs.empty() && fd >= 0) {
      uint64_t value;
      [[maybe_unused]] auto n = ::read(fd, &value, sizeof(value));
    }
    return result;
  }

  int fd;
  mutable std::mutex mtx;
  std::condition_variable cv;
  std::deque<store::response> xs;
};

} // namespace broker::internal

namespace broker {

namespace {

using query_fn = std::function<void(store_logic&, timestamp, store_reply)>;

store::request_id send_query(const std::shared_ptr<store_frontend>& fe,
                             const std::shared_ptr<internal::proxy_state>& st,
                             store::request_id id, query_fn fn) {
  auto answer = once([st, id](expected<data> x) {
    st->push(store::response{std::move(x), id});
  });
  if (!fe) {
    answer(closed_error());
    return id;
  }
  auto posted = fe->post([fn = std::move(fn), answer](store_logic& logic, timestamp now) {
    fn(logic, now, answer);
  });
  if (!posted)
    answer(error{ec::shutting_down, "the store stopped"});
  return id;
}

} // namespace

store::proxy::proxy(const store& s)
  : store_(s), state_(std::make_shared<internal::proxy_state>()) {}

store::proxy::~proxy() = default;

store::request_id store::proxy::get(data key) {
  return send_query(store_.fe_, state_, next_id_++,
                    [key = std::move(key)](store_logic& logic, timestamp, store_reply reply) {
                      logic.get(key, reply);
                    });
}

store::request_id store::proxy::get_index_from_value(data key, data index) {
  return send_query(store_.fe_, state_, next_id_++,
                    [key = std::move(key), index = std::move(index)](
                      store_logic& logic, timestamp, store_reply reply) {
                      logic.get_index_from_value(key, index, reply);
                    });
}

store::request_id store::proxy::exists(data key) {
  return send_query(store_.fe_, state_, next_id_++,
                    [key = std::move(key)](store_logic& logic, timestamp, store_reply reply) {
                      logic.exists(key, reply);
                    });
}

store::request_id store::proxy::keys() {
  return send_query(store_.fe_, state_, next_id_++,
                    [](store_logic& logic, timestamp, store_reply reply) { logic.keys(reply); });
}

store::request_id store::proxy::put_unique(data key, data value,
                                           std::optional<timespan> expiry) {
  auto publisher = store_.fe_ ? store_.fe_->publisher() : internal::entity_id{};
  return send_query(store_.fe_, state_, next_id_++,
                    [key = std::move(key), value = std::move(value), expiry,
                     publisher](store_logic& logic, timestamp now, store_reply reply) mutable {
                      logic.put_unique(std::move(key), std::move(value), expiry, publisher,
                                       now, reply);
                    });
}

int store::proxy::fd() const noexcept {
  return state_->fd;
}

size_t store::proxy::available() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->xs.size();
}

store::response store::proxy::receive() {
  std::unique_lock<std::mutex> guard{state_->mtx};
  state_->cv.wait(guard, [this] { return !state_->xs.empty(); });
  return state_->pop_locked();
}

std::optional<store::response> store::proxy::receive(timespan timeout) {
  std::unique_lock<std::mutex> guard{state_->mtx};
  if (!state_->cv.wait_for(guard, timeout, [this] { return !state_->xs.empty(); }))
    return std::nullopt;
  return state_->pop_locked();
}

std::vector<store::response> store::proxy::receive(size_t n) {
  std::vector<response> result;
  result.reserve(n);
  while (result.size() < n)
    result.push_back(receive());
  return result;
}

} // namespace broker
