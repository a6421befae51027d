#include "broker/internal/store/backend.hh"

#include <type_traits>

namespace broker::internal {

namespace {

// Integer overflow wraps (two's complement), as Broker's counters do in practice; doing the
// arithmetic on the unsigned type keeps it defined behaviour.
template <class T>
T wrapping_add(T x, T y) noexcept {
  using unsigned_type = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<unsigned_type>(x) + static_cast<unsigned_type>(y));
}

template <class T>
T wrapping_sub(T x, T y) noexcept {
  using unsigned_type = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<unsigned_type>(x) - static_cast<unsigned_type>(y));
}

std::string type_name(const data& x) {
  return std::string{to_string(x.get_type())};
}

error clash(std::string_view verb, std::string_view preposition, const data& target,
            const data& value, const data& key) {
  std::string msg{verb};
  msg += ' ';
  msg += type_name(value);
  msg += ' ';
  msg += preposition;
  msg += " the ";
  msg += type_name(target);
  msg += " under key ";
  msg += describe_key(key);
  return error{ec::type_clash, std::move(msg)};
}

// Applies `op` to the numeric alternative T of `target` if `value` holds a T too.
template <class T, class Op>
bool apply_same_type(data& target, const data& value, Op op) {
  auto* rhs = get_if<T>(value);
  if (rhs == nullptr)
    return false;
  auto& lhs = get<T>(target);
  lhs = op(lhs, *rhs);
  return true;
}

// The arithmetic both add and subtract share: numbers of the same type, and a timestamp
// moved by a timespan. Returns true if it handled (and changed) `target`.
template <class IntOp, class RealOp>
bool apply_numeric(data& target, const data& value, IntOp int_op, RealOp real_op) {
  switch (target.get_type()) {
    case data::type::count:
      return apply_same_type<count>(target, value, int_op);
    case data::type::integer:
      return apply_same_type<integer>(target, value, int_op);
    case data::type::real:
      return apply_same_type<real>(target, value, real_op);
    case data::type::timespan:
      return apply_same_type<timespan>(target, value, [&](timespan x, timespan y) {
        return timespan{int_op(x.count(), y.count())};
      });
    case data::type::timestamp: {
      auto* delta = get_if<timespan>(value);
      if (delta == nullptr)
        return false;
      auto& ts = get<timestamp>(target);
      ts = timestamp{timespan{int_op(ts.time_since_epoch().count(), delta->count())}};
      return true;
    }
    default:
      return false;
  }
}

constexpr size_t max_described_key_size = 64;

} // namespace

store_backend::~store_backend() = default;

expected<data> store_backend::get_index_from_value(const data& key, const data& index) const {
  auto value = get(key);
  if (!value)
    return value.error_value();
  return value_at(*value, index, key);
}

expected<data> default_value(data::type init_type) {
  switch (init_type) {
    case data::type::none:
      return data{};
    case data::type::boolean:
      return data{false};
    case data::type::count:
      return data{count{0}};
    case data::type::integer:
      return data{integer{0}};
    case data::type::real:
      return data{0.0};
    case data::type::string:
      return data{std::string{}};
    case data::type::address:
      return data{address{}};
    case data::type::subnet:
      return data{subnet{}};
    case data::type::port:
      return data{port{}};
    case data::type::timestamp:
      return data{timestamp{}};
    case data::type::timespan:
      return data{timespan{0}};
    case data::type::enum_value:
      return data{enum_value{}};
    case data::type::set:
      return data{broker::set{}};
    case data::type::table:
      return data{broker::table{}};
    case data::type::vector:
      return data{broker::vector{}};
  }
  return error{ec::invalid_data,
               "init type " + std::to_string(static_cast<unsigned>(init_type))
                 + " is not a data type"};
}

error add_to(data& target, const data& value, const data& key) {
  auto add = [](auto x, auto y) { return wrapping_add(x, y); };
  auto add_real = [](real x, real y) { return x + y; };
  if (apply_numeric(target, value, add, add_real))
    return {};
  switch (target.get_type()) {
    case data::type::string:
      if (auto* suffix = get_if<std::string>(value)) {
        get<std::string>(target) += *suffix;
        return {};
      }
      break;
    case data::type::set:
      get<broker::set>(target).insert(value);
      return {};
    case data::type::table: {
      // Broker's insert_into sends the entry as a vector [key, value].
      auto* entry = get_if<broker::vector>(value);
      if (entry == nullptr)
        break;
      if (entry->size() != 2)
        return error{ec::invalid_data, "cannot insert a vector of "
                                         + std::to_string(entry->size())
                                         + " elements into the table under key "
                                         + describe_key(key) + ", expected [key, value]"};
      get<broker::table>(target).insert_or_assign((*entry)[0], (*entry)[1]);
      return {};
    }
    case data::type::vector:
      get<broker::vector>(target).push_back(value);
      return {};
    default:
      break;
  }
  return clash("cannot add", "to", target, value, key);
}

error subtract_from(data& target, const data& value, const data& key) {
  auto sub = [](auto x, auto y) { return wrapping_sub(x, y); };
  auto sub_real = [](real x, real y) { return x - y; };
  if (apply_numeric(target, value, sub, sub_real))
    return {};
  switch (target.get_type()) {
    case data::type::set:
      get<broker::set>(target).erase(value);
      return {};
    case data::type::table:
      get<broker::table>(target).erase(value);
      return {};
    case data::type::vector: {
      auto& xs = get<broker::vector>(target);
      if (!xs.empty())
        xs.pop_back();
      return {};
    }
    default:
      return clash("cannot subtract", "from", target, value, key);
  }
}

expected<data> value_at(const data& container, const data& index, const data& key) {
  switch (container.get_type()) {
    case data::type::vector: {
      const auto& xs = get<broker::vector>(container);
      std::optional<count> pos;
      if (auto* n = get_if<count>(index))
        pos = *n;
      else if (auto* i = get_if<integer>(index); i != nullptr && *i >= 0)
        pos = static_cast<count>(*i);
      if (!pos)
        return error{ec::type_clash, "cannot index the vector under key " + describe_key(key)
                                       + " with " + type_name(index) + " " + to_string(index)};
      if (*pos >= xs.size())
        return error{ec::no_such_key, "index " + std::to_string(*pos)
                                        + " is out of range for the vector of size "
                                        + std::to_string(xs.size()) + " under key "
                                        + describe_key(key)};
      return xs[*pos];
    }
    case data::type::set:
      return data{get<broker::set>(container).count(index) == 1};
    case data::type::table: {
      const auto& xs = get<broker::table>(container);
      if (auto i = xs.find(index); i != xs.end())
        return i->second;
      return error{ec::no_such_key, "the table under key " + describe_key(key)
                                      + " has no key " + describe_key(index)};
    }
    default:
      return error{ec::type_clash, "cannot index the " + type_name(container) + " under key "
                                     + describe_key(key)};
  }
}

std::string describe_key(const data& key) {
  auto text = to_string(key);
  if (text.size() > max_described_key_size) {
    text.resize(max_described_key_size);
    text += "...";
  }
  return "'" + text + "'";
}

expected<std::unique_ptr<store_backend>> make_backend(backend_kind kind,
                                                      const backend_options& options) {
  switch (kind) {
    case backend_kind::memory:
      if (!options.empty())
        return error{ec::invalid_config, "the memory backend takes no options, got '"
                                           + options.begin()->first + "'"};
      return make_memory_backend();
    case backend_kind::sqlite:
      return make_sqlite_backend(options);
  }
  return error{ec::invalid_config, "unknown backend kind "
                                     + std::to_string(static_cast<unsigned>(kind))};
}

} // namespace broker::internal
