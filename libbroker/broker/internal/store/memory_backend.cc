// The memory backend: a sorted map from key to value and optional expiry.

#include "broker/internal/store/backend.hh"

namespace broker::internal {

namespace {

class memory_backend final : public store_backend {
public:
  error put(const data& key, data value, std::optional<timestamp> expiry) override {
    entries_.insert_or_assign(key, entry{std::move(value), expiry});
    return {};
  }

  expected<bool> put_unique(const data& key, data value,
                            std::optional<timestamp> expiry) override {
    return entries_.try_emplace(key, entry{std::move(value), expiry}).second;
  }

  error add(const data& key, const data& value, data::type init_type,
            std::optional<timestamp> expiry) override {
    if (auto i = entries_.find(key); i != entries_.end())
      return update(i->second, add_to, value, key, expiry);
    // Compute first and insert only on success: a failed add leaves no key behind.
    auto initial = default_value(init_type);
    if (!initial)
      return initial.error_value();
    if (auto err = add_to(*initial, value, key))
      return err;
    entries_.emplace(key, entry{std::move(*initial), expiry});
    return {};
  }

  error subtract(const data& key, const data& value,
                 std::optional<timestamp> expiry) override {
    auto i = entries_.find(key);
    if (i == entries_.end())
      return no_such_key(key);
    return update(i->second, subtract_from, value, key, expiry);
  }

  error erase(const data& key) override {
    entries_.erase(key);
    return {};
  }

  error clear() override {
    entries_.clear();
    return {};
  }

  expected<bool> expire(const data& key, timestamp now) override {
    auto i = entries_.find(key);
    if (i == entries_.end() || !i->second.expiry || *i->second.expiry > now)
      return false;
    entries_.erase(i);
    return true;
  }

  expected<data> get(const data& key) const override {
    if (auto i = entries_.find(key); i != entries_.end())
      return i->second.value;
    return no_such_key(key);
  }

  // Overridden to index into the stored value without copying it first.
  expected<data> get_index_from_value(const data& key, const data& index) const override {
    if (auto i = entries_.find(key); i != entries_.end())
      return value_at(i->second.value, index, key);
    return no_such_key(key);
  }

  expected<bool> exists(const data& key) const override {
    return entries_.count(key) == 1;
  }

  expected<data> keys() const override {
    broker::set result;
    for (const auto& kvp : entries_)
      result.emplace_hint(result.end(), kvp.first);
    return data{std::move(result)};
  }

  expected<uint64_t> size() const override {
    return static_cast<uint64_t>(entries_.size());
  }

  expected<std::vector<std::pair<data, data>>> snapshot() const override {
    std::vector<std::pair<data, data>> result;
    result.reserve(entries_.size());
    for (const auto& [key, e] : entries_)
      result.emplace_back(key, e.value);
    return result;
  }

  expected<std::vector<std::pair<data, timestamp>>> expiries() const override {
    std::vector<std::pair<data, timestamp>> result;
    for (const auto& [key, e] : entries_)
      if (e.expiry)
        result.emplace_back(key, *e.expiry);
    return result;
  }

  // Writes land in the map at once, so a batch only has to keep the bookkeeping that makes
  // misuse fail the same way on every backend.
  error begin_batch() override {
    if (in_batch_)
      return error{ec::logic_error, "begin_batch: a batch is already open"};
    in_batch_ = true;
    return {};
  }

  error commit_batch() override {
    if (!in_batch_)
      return error{ec::logic_error, "commit_batch: no batch is open"};
    in_batch_ = false;
    return {};
  }

private:
  struct entry {
    data value;
    std::optional<timestamp> expiry;
  };

  static error no_such_key(const data& key) {
    return error{ec::no_such_key, "no such key: " + describe_key(key)};
  }

  // In place: add_to and subtract_from check before they change anything, so a failing
  // operation leaves the entry untouched without the cost of copying a large container.
  template <class Op>
  static error update(entry& e, Op op, const data& value, const data& key,
                      std::optional<timestamp> expiry) {
    if (auto err = op(e.value, value, key))
      return err;
    e.expiry = expiry;
    return {};
  }

  std::map<data, entry> entries_;
  bool in_batch_ = false;
};

} // namespace

std::unique_ptr<store_backend> make_memory_backend() {
  return std::make_unique<memory_backend>();
}

} // namespace broker::internal
