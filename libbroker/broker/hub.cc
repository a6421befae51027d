#include "broker/hub.hh"

#include "broker/internal/endpoint_context.hh"
#include "broker/internal/core/local_source.hh"

namespace broker {

void detach_source(const std::shared_ptr<internal::endpoint_context>& ctx,
                   const std::shared_ptr<internal::local_source>& src);

hub::hub(subscriber sub, std::shared_ptr<internal::local_source> src)
  : sub_(std::move(sub)), src_(std::move(src)) {
}

hub::hub(hub&&) noexcept = default;

hub& hub::operator=(hub&& other) noexcept {
  if (this != &other) {
    reset();
    sub_ = std::move(other.sub_);
    src_ = std::move(other.src_);
  }
  return *this;
}

hub::~hub() {
  reset();
}

void hub::reset() {
  detach_source(sub_.ctx_, src_);
  src_.reset();
  sub_.reset();
}

error hub::publish(topic t, data value) {
  std::vector<data_message> batch;
  batch.emplace_back(std::move(t), std::move(value));
  return publish(std::move(batch));
}

error hub::publish(std::vector<data_message> batch) {
  for (auto& msg : batch)
    if (is_reserved_topic(msg.topic()))
      return error{ec::invalid_topic, "cannot publish to reserved topic \"" + msg.topic()
                                        + "\" (prefix <$> is internal)"};
  if (!src_ || !src_->publish(batch, std::chrono::milliseconds{-1}))
    return error{ec::shutting_down, "the endpoint has shut down"};
  return {};
}

} // namespace broker
