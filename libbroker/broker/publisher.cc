#include "broker/publisher.hh"

#include "broker/internal/endpoint_context.hh"
#include "broker/internal/core/source_inbox.hh"

namespace broker {

using internal::core_state;

namespace {

constexpr std::chrono::milliseconds wait_forever{-1};

error shutting_down() {
  return error{ec::shutting_down, "the endpoint has shut down"};
}

} // namespace

/// Detaches a source: the core delivers what is still pending, then forgets it.
void detach_source(const std::shared_ptr<internal::endpoint_context>& ctx,
                   const std::shared_ptr<internal::source_inbox>& inbox) {
  if (!ctx || !inbox)
    return;
  if (auto rt = ctx->runtime()) {
    auto id = inbox->id();
    rt->post([id](core_state& st) { st.remove_source(id); });
  }
}

publisher::publisher(std::shared_ptr<internal::endpoint_context> ctx,
                     std::shared_ptr<internal::source_inbox> inbox, topic t)
  : ctx_(std::move(ctx)), inbox_(std::move(inbox)), topic_(std::move(t)) {
}

publisher::publisher(publisher&&) noexcept = default;

publisher& publisher::operator=(publisher&& other) noexcept {
  if (this != &other) {
    reset();
    ctx_ = std::move(other.ctx_);
    inbox_ = std::move(other.inbox_);
    topic_ = std::move(other.topic_);
  }
  return *this;
}

publisher::~publisher() {
  reset();
}

void publisher::reset() {
  detach_source(ctx_, inbox_);
  ctx_.reset();
  inbox_.reset();
}

error publisher::publish(data value) {
  if (!inbox_)
    return shutting_down();
  return inbox_->push_one(data_message{topic_, std::move(value)}, wait_forever)
           ? error{}
           : shutting_down();
}

error publisher::publish(std::vector<data> values) {
  if (!inbox_)
    return shutting_down();
  std::vector<data_message> batch;
  batch.reserve(values.size());
  for (auto& x : values)
    batch.emplace_back(topic_, std::move(x));
  return inbox_->push(batch, wait_forever) ? error{} : shutting_down();
}

bool publisher::try_publish(data value) {
  return inbox_ && inbox_->try_push(data_message{topic_, std::move(value)});
}

size_t publisher::capacity() const noexcept {
  return inbox_ ? inbox_->capacity() : 0;
}

size_t publisher::free_capacity() const {
  return inbox_ ? inbox_->free_capacity() : 0;
}

size_t publisher::buffered() const {
  return inbox_ ? inbox_->buffered() : 0;
}

} // namespace broker
