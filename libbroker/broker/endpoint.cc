#include "broker/endpoint.hh"

#include "broker/internal/endpoint_context.hh"
#include "broker/internal/local_queue.hh"
#include "broker/internal/source_inbox.hh"

namespace broker {

using internal::core_state;

namespace {

error shutting_down() {
  return error{ec::shutting_down, "the endpoint has shut down"};
}

error reserved_topic(const std::string& name) {
  return error{ec::invalid_topic,
               "cannot publish to reserved topic \"" + name + "\" (prefix <$> is internal)"};
}

/// Creates, registers and returns the source inbox of a publisher or hub.
std::shared_ptr<internal::source_inbox>
attach_source(internal::core_runtime& rt, uint64_t id,
              size_t capacity) {
  auto inbox = std::make_shared<internal::source_inbox>(id, capacity);
  inbox->on_wake(rt.wake_callback(id));
  if (!rt.run([inbox](core_state& st) { st.add_source(inbox); }))
    inbox->close();
  return inbox;
}

/// Creates, registers and returns the queue of a subscriber or hub; subscribed when this
/// returns (or closed if the endpoint is gone).
std::shared_ptr<internal::local_queue>
attach_queue(internal::endpoint_context& ctx, uint64_t id, handler_kind kind,
             const filter_type& filter, const queue_options& opts) {
  const auto& cfg = ctx.config();
  auto capacity = opts.capacity.value_or(cfg.subscriber_buffer_size());
  auto policy = opts.policy.value_or(cfg.subscriber_overflow_policy());
  auto queue = std::make_shared<internal::local_queue>(capacity, policy);
  auto rt = ctx.runtime();
  if (!rt) {
    queue->close();
    return queue;
  }
  queue->on_room(rt->room_callback(id));
  bool ok = rt->run([queue, id, kind, filter](core_state& st) {
    st.add_handler(std::make_unique<internal::local_handler>(id, kind, queue), filter);
  });
  if (!ok)
    queue->close();
  return queue;
}

} // namespace

endpoint::endpoint() : endpoint(configuration{}) {
}

endpoint::endpoint(configuration cfg) {
  auto id = endpoint_id::random();
  ctx_ = std::make_shared<internal::endpoint_context>(std::move(cfg), id);
  internal::core_options opts;
  opts.id = id;
  opts.topic_cache_size = ctx_->config().topic_cache_size();
  auto rt = std::make_shared<internal::core_runtime>(std::move(opts),
                                                     ctx_->config().scheduler_max_threads());
  // The endpoint's own publish() calls form one source (id 1 is never handed out again).
  auto own_id = ctx_->next_id();
  own_ = attach_source(*rt, own_id, ctx_->config().publisher_buffer_size());
  ctx_->start(std::move(rt));
}

endpoint::~endpoint() {
  shutdown();
}

const endpoint_id& endpoint::node_id() const noexcept {
  return ctx_->id();
}

const configuration& endpoint::config() const noexcept {
  return ctx_->config();
}

error endpoint::publish(topic t, data value) {
  return publish(data_message{std::move(t), std::move(value)});
}

error endpoint::publish(data_message msg) {
  std::vector<data_message> batch;
  batch.push_back(std::move(msg));
  return publish(std::move(batch));
}

error endpoint::publish(std::vector<data_message> batch) {
  for (auto& msg : batch)
    if (is_reserved_topic(msg.topic()))
      return reserved_topic(msg.topic());
  if (!own_->push(batch, std::chrono::milliseconds{-1}))
    return shutting_down();
  return {};
}

expected<publisher> endpoint::make_publisher(topic t, size_t capacity) {
  if (t.is_reserved())
    return reserved_topic(t.string());
  auto rt = ctx_->runtime();
  if (!rt)
    return shutting_down();
  if (capacity == 0)
    capacity = ctx_->config().publisher_buffer_size();
  auto inbox = attach_source(*rt, ctx_->next_id(), capacity);
  return publisher{ctx_, std::move(inbox), std::move(t)};
}

subscriber endpoint::make_subscriber(filter_type filter, queue_options opts) {
  auto id = ctx_->next_id();
  auto queue = attach_queue(*ctx_, id, handler_kind::subscriber, filter, opts);
  return subscriber{ctx_, std::move(queue), id, std::move(filter)};
}

status_subscriber endpoint::make_status_subscriber(bool receive_statuses, queue_options opts) {
  filter_type filter{topic{topic::errors}};
  if (receive_statuses)
    filter.emplace_back(topic::statuses);
  // Events are rare and must never stall the core: without an explicit choice, a full
  // status queue drops its oldest event (counted) instead of blocking.
  if (!opts.policy)
    opts.policy = overflow_policy::drop_oldest;
  return status_subscriber{make_subscriber(std::move(filter), opts)};
}

hub endpoint::make_hub(filter_type filter, queue_options opts) {
  auto id = ctx_->next_id();
  auto queue = attach_queue(*ctx_, id, handler_kind::hub, filter, opts);
  subscriber sub{ctx_, std::move(queue), id, std::move(filter)};
  std::shared_ptr<internal::source_inbox> inbox;
  if (auto rt = ctx_->runtime()) {
    inbox = attach_source(*rt, id, ctx_->config().publisher_buffer_size());
  } else {
    inbox = std::make_shared<internal::source_inbox>(id, 1);
    inbox->close();
  }
  return hub{std::move(sub), std::move(inbox)};
}

filter_type endpoint::filter() const {
  if (auto rt = ctx_->runtime())
    if (auto result = rt->call([](core_state& st) { return st.filter(); }))
      return std::move(*result);
  return {};
}

endpoint_metrics endpoint::metrics() const {
  if (auto rt = ctx_->runtime())
    if (auto result = rt->call([](core_state& st) { return st.metrics(); }))
      return *result;
  return {};
}

void endpoint::shutdown() {
  if (auto rt = ctx_->stop())
    rt->shutdown();
  own_->close();
}

bool endpoint::is_shut_down() const noexcept {
  return ctx_->runtime() == nullptr;
}

} // namespace broker
