#include "broker/subscriber.hh"

#include "broker/internal/endpoint_context.hh"
#include "broker/internal/core/local_queue.hh"

#include <algorithm>
#include <limits>

namespace broker {

using internal::core_state;

namespace {

std::chrono::milliseconds to_wait_ms(timespan timeout) {
  // Round up so that a sub-millisecond timeout still waits instead of spinning.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout);
  return ms.count() < 0 ? std::chrono::milliseconds{0} : ms;
}

constexpr size_t pop_batch_size = 128;

} // namespace

subscriber::subscriber(std::shared_ptr<internal::endpoint_context> ctx,
                       std::shared_ptr<internal::local_queue> queue, uint64_t id,
                       filter_type filter)
  : ctx_(std::move(ctx)), queue_(std::move(queue)), id_(id), filter_(std::move(filter)) {
}

subscriber::subscriber(subscriber&&) noexcept = default;

subscriber& subscriber::operator=(subscriber&& other) noexcept {
  if (this != &other) {
    reset();
    ctx_ = std::move(other.ctx_);
    queue_ = std::move(other.queue_);
    id_ = other.id_;
    filter_ = std::move(other.filter_);
    buf_ = std::move(other.buf_);
  }
  return *this;
}

subscriber::~subscriber() {
  reset();
}

void subscriber::reset() {
  if (!ctx_)
    return;
  queue_->close();
  if (auto rt = ctx_->runtime()) {
    auto id = id_;
    rt->post([id](core_state& st) { st.remove_handler(id); });
  }
  ctx_.reset();
}

data_message subscriber::get() {
  for (;;) {
    if (auto result = get(std::chrono::hours{24}))
      return std::move(*result);
    if (closed() && available() == 0)
      return {};
  }
}

std::vector<data_message> subscriber::get(size_t num) {
  std::vector<data_message> result;
  while (result.size() < num) {
    auto msg = get();
    if (!msg)
      break;
    result.push_back(std::move(msg));
  }
  return result;
}

std::optional<data_message> subscriber::get(timespan timeout) {
  if (buf_.empty()) {
    if (!queue_ || !queue_->wait(to_wait_ms(timeout)))
      return std::nullopt;
    queue_->pop(buf_, pop_batch_size);
    // Hand out in order: buf_ is consumed from the back.
    std::reverse(buf_.begin(), buf_.end());
  }
  if (buf_.empty())
    return std::nullopt;
  auto result = std::move(buf_.back());
  buf_.pop_back();
  return result;
}

std::vector<data_message> subscriber::get(size_t num, timespan timeout) {
  std::vector<data_message> result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (result.size() < num) {
    auto left = deadline - std::chrono::steady_clock::now();
    if (left.count() < 0)
      left = left.zero();
    auto msg = get(std::chrono::duration_cast<timespan>(left));
    if (!msg)
      break;
    result.push_back(std::move(*msg));
  }
  return result;
}

std::vector<data_message> subscriber::poll() {
  std::vector<data_message> result{std::make_move_iterator(buf_.rbegin()),
                                   std::make_move_iterator(buf_.rend())};
  buf_.clear();
  if (queue_)
    queue_->pop(result, std::numeric_limits<size_t>::max());
  return result;
}

size_t subscriber::available() const noexcept {
  return buf_.size() + (queue_ ? queue_->size() : 0);
}

int subscriber::fd() const noexcept {
  return queue_ ? queue_->fd() : -1;
}

bool subscriber::closed() const noexcept {
  return !queue_ || queue_->closed();
}

bool subscriber::wait_for(timespan timeout) const {
  return !buf_.empty() || (queue_ && queue_->wait(to_wait_ms(timeout)));
}

bool subscriber::add_topic(topic prefix) {
  if (!ctx_)
    return false;
  auto rt = ctx_->runtime();
  if (!rt)
    return false;
  if (std::find(filter_.begin(), filter_.end(), prefix) == filter_.end())
    filter_.push_back(prefix);
  auto id = id_;
  return rt->run([id, prefix](core_state& st) { st.subscribe(id, {prefix}); });
}

bool subscriber::remove_topic(topic prefix) {
  if (!ctx_)
    return false;
  auto rt = ctx_->runtime();
  if (!rt)
    return false;
  filter_.erase(std::remove(filter_.begin(), filter_.end(), prefix), filter_.end());
  auto id = id_;
  return rt->run([id, prefix](core_state& st) { st.unsubscribe(id, {prefix}); });
}

size_t subscriber::capacity() const noexcept {
  return queue_ ? queue_->capacity() : 0;
}

overflow_policy subscriber::policy() const noexcept {
  return queue_ ? queue_->policy() : overflow_policy::block;
}

// -- status_subscriber ----------------------------------------------------------------

status_variant status_subscriber::convert(const data_message& msg) {
  if (!msg)
    return none{};
  if (auto st = to_status(msg.value()))
    return std::move(*st);
  if (auto err = to_error(msg.value()))
    return std::move(*err);
  return none{};
}

status_variant status_subscriber::get() {
  return convert(impl_.get());
}

std::optional<status_variant> status_subscriber::get(timespan timeout) {
  if (auto msg = impl_.get(timeout))
    return convert(*msg);
  return std::nullopt;
}

std::vector<status_variant> status_subscriber::poll() {
  std::vector<status_variant> result;
  for (auto& msg : impl_.poll())
    result.push_back(convert(msg));
  return result;
}

} // namespace broker
