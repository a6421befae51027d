#include "broker/publisher.hh"

#include "broker/internal/core/local_source.hh"
#include "broker/internal/endpoint_context.hh"

namespace broker {

using internal::core_state;

namespace {

constexpr std::chrono::milliseconds wait_forever{-1};

error shutting_down() {
  return error{ec::shutting_down, "the endpoint has shut down"};
}

} // namespace

/// Detaches a source: it stops routing, and the core forgets its statistics.
void detach_source(const std::shared_ptr<internal::endpoint_context>& ctx,
                   const std::shared_ptr<internal::local_source>& src) {
  if (!ctx || !src)
    return;
  src->close();
  if (auto rt = ctx->runtime()) {
    auto id = src->id();
    rt->post([id](core_state& st) { st.remove_source(id); });
  }
}

publisher::publisher(std::shared_ptr<internal::endpoint_context> ctx,
                     std::shared_ptr<internal::local_source> src, topic t, size_t capacity)
  : ctx_(std::move(ctx)), src_(std::move(src)), topic_(std::move(t)), capacity_(capacity) {
}

publisher::publisher(publisher&&) noexcept = default;

publisher& publisher::operator=(publisher&& other) noexcept {
  if (this != &other) {
    reset();
    ctx_ = std::move(other.ctx_);
    src_ = std::move(other.src_);
    topic_ = std::move(other.topic_);
    capacity_ = other.capacity_;
  }
  return *this;
}

publisher::~publisher() {
  reset();
}

void publisher::reset() {
  detach_source(ctx_, src_);
  ctx_.reset();
  src_.reset();
}

error publisher::publish(data value) {
  if (!src_)
    return shutting_down();
  data_message msg{topic_, std::move(value)};
  return src_->publish(&msg, 1, wait_forever) ? error{} : shutting_down();
}

error publisher::publish(std::vector<data> values) {
  if (!src_)
    return shutting_down();
  std::vector<data_message> batch;
  batch.reserve(values.size());
  for (auto& x : values)
    batch.emplace_back(topic_, std::move(x));
  return src_->publish(batch, wait_forever) ? error{} : shutting_down();
}

bool publisher::try_publish(data value) {
  return src_ && src_->try_publish(data_message{topic_, std::move(value)});
}

size_t publisher::capacity() const noexcept {
  return src_ ? capacity_ : 0;
}

size_t publisher::free_capacity() const {
  auto used = buffered();
  return capacity() > used ? capacity() - used : 0;
}

size_t publisher::buffered() const {
  return src_ ? src_->stats()->pending.load(std::memory_order_relaxed) : 0;
}

} // namespace broker
