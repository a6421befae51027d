#include "broker/internal/store/store_logic.hh"

#include <limits>
#include <utility>

namespace broker::internal {

namespace {

/// Malformed commands logged one by one before the log thins out to powers of two.
constexpr uint64_t malformed_logged_individually = 10;

data opt_span(std::optional<timespan> x) {
  return x ? data{*x} : data{};
}

std::string publisher_text(const entity_id& x) {
  return x.is_nil() ? std::string{} : to_string(x.endpoint);
}

} // namespace

store_env::~store_env() = default;

void store_env::warn(const std::string&) {
  // Tests may ignore warnings; the store actor logs them.
}

std::string master_topic(const std::string& name) {
  return name + "/<$>/data/master";
}

std::string clone_topic(const std::string& name) {
  return name + "/<$>/data/clone";
}

std::vector<std::string> store_topics(const std::string& name, bool master) {
  if (master)
    return {master_topic(name), clone_topic(name)};
  return {clone_topic(name)};
}

store_op make_op_put(data key, data value, std::optional<timespan> expiry,
                     entity_id publisher) {
  return store_wire::put{std::move(key), std::move(value), expiry, publisher};
}

store_op make_op_erase(data key, entity_id publisher) {
  return store_wire::erase{std::move(key), publisher};
}

store_op make_op_add(data key, data value, data::type init_type,
                     std::optional<timespan> expiry, entity_id publisher) {
  return store_wire::add{std::move(key), std::move(value), init_type, expiry, publisher};
}

store_op make_op_subtract(data key, data value, std::optional<timespan> expiry,
                          entity_id publisher) {
  return store_wire::subtract{std::move(key), std::move(value), expiry, publisher};
}

store_op make_op_clear(entity_id publisher) {
  return store_wire::clear{publisher};
}

// -- store_logic ----------------------------------------------------------------------------

store_logic::store_logic(std::string name, entity_id self, store_settings st, store_env& env)
  : name_(std::move(name)),
    self_(self),
    st_(st),
    env_(env),
    mtopic_(master_topic(name_)),
    ctopic_(clone_topic(name_)) {
  if (st_.tick_interval <= timespan::zero())
    st_.tick_interval = std::chrono::milliseconds{100};
}

store_logic::~store_logic() = default;

std::optional<store_wire::command> store_logic::parse(std::string_view bytes) {
  auto cmd = store_wire::decode(bytes);
  if (cmd)
    return std::move(*cmd);
  ++malformed_;
  if (malformed_ <= malformed_logged_individually || (malformed_ & (malformed_ - 1)) == 0)
    env_.warn("store " + name_ + ": dropped a malformed command (" + std::to_string(malformed_)
              + " so far): " + cmd.error_value().message());
  return std::nullopt;
}

void store_logic::reject(const store_wire::command& cmd, const char* why) {
  ++malformed_;
  if (malformed_ <= malformed_logged_individually || (malformed_ & (malformed_ - 1)) == 0)
    env_.warn("store " + name_ + ": dropped " + store_wire::kind_name(cmd.content)
              + " from " + to_string(cmd.sender) + ": " + why);
}

void store_logic::send(const std::string& topic, const store_wire::command& cmd) {
  std::string bytes;
  if (auto err = store_wire::encode(cmd, bytes)) {
    env_.write_failed(error{err.code(), "store " + name_ + ": cannot encode "
                                          + store_wire::kind_name(cmd.content) + ": "
                                          + err.message()});
    return;
  }
  env_.send_command(topic, std::move(bytes));
}

uint16_t store_logic::to_ticks(timespan interval) const noexcept {
  auto ticks = (interval + st_.tick_interval / 2) / st_.tick_interval;
  if (ticks < 1)
    return 1;
  if (ticks > std::numeric_limits<uint16_t>::max())
    return std::numeric_limits<uint16_t>::max();
  return static_cast<uint16_t>(ticks);
}

timespan store_logic::from_ticks(uint16_t ticks) const noexcept {
  return ticks == 0 ? st_.heartbeat_interval : st_.tick_interval * ticks;
}

void store_logic::emit_insert(const data& key, const data& value,
                              std::optional<timespan> expiry, const entity_id& publisher) {
  env_.store_event(
    vector{"insert", name_, key, value, opt_span(expiry), publisher_text(publisher)});
}

void store_logic::emit_update(const data& key, const data& old_value, const data& new_value,
                              std::optional<timespan> expiry, const entity_id& publisher) {
  env_.store_event(vector{"update", name_, key, old_value, new_value, opt_span(expiry),
                          publisher_text(publisher)});
}

void store_logic::emit_erase(const char* what, const data& key, const entity_id& publisher) {
  env_.store_event(vector{what, name_, key, publisher_text(publisher)});
}

} // namespace broker::internal
