#pragma once

// broker::data: the 15 Broker value types in one variant, with Broker's total order.
//
// The alternative index of the variant IS the binary type tag (doc/protocol/binary.md §2), so
// `data::type` values never change. Sets and tables are ordered containers under the total
// order of doc/protocol/binary.md §7 (implemented by operator<): a count never equals an integer,
// -0.0 equals +0.0, NaN sorts after +inf and all NaNs are equal.

#include "broker/address.hh"
#include "broker/export.hh"
#include "broker/port.hh"
#include "broker/subnet.hh"
#include "broker/time.hh"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace broker {

class data;

/// The none value (Broker's `nil`).
struct BROKER_API none {
  friend constexpr bool operator==(none, none) noexcept { return true; }
  friend constexpr bool operator!=(none, none) noexcept { return false; }
  friend constexpr bool operator<(none, none) noexcept { return false; }
};

inline constexpr none nil = none{};

using boolean = bool;
using count = uint64_t;
using integer = int64_t;
using real = double;

/// The name of an enum constant (no validation, opaque bytes).
struct BROKER_API enum_value {
  std::string name;
  friend bool operator==(const enum_value& x, const enum_value& y) { return x.name == y.name; }
  friend bool operator!=(const enum_value& x, const enum_value& y) { return x.name != y.name; }
  friend bool operator<(const enum_value& x, const enum_value& y) { return x.name < y.name; }
};

using set = std::set<data>;
using table = std::map<data, data>;
using vector = std::vector<data>;

/// One Broker value.
class BROKER_API data {
public:
  /// The type tags, equal to the binary encoding's tag byte.
  enum class type : uint8_t {
    none = 0,
    boolean = 1,
    count = 2,
    integer = 3,
    real = 4,
    string = 5,
    address = 6,
    subnet = 7,
    port = 8,
    timestamp = 9,
    timespan = 10,
    enum_value = 11,
    set = 12,
    table = 13,
    vector = 14,
  };

  using variant_type =
    std::variant<none, boolean, count, integer, real, std::string, address, subnet, port,
                 timestamp, timespan, enum_value, set, table, vector>;

  data() noexcept = default;
  data(none) noexcept {}
  data(bool x) noexcept : v_(x) {}
  /// Signed integral types become `integer`, unsigned ones `count`.
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>
                                        && std::is_signed_v<T>, int> = 0>
  data(T x) noexcept : v_(integer{x}) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>
                                        && std::is_unsigned_v<T>, int> = 0>
  data(T x) noexcept : v_(count{x}) {}
  data(double x) noexcept : v_(x) {}
  data(float x) noexcept : v_(double{x}) {}
  data(std::string x) noexcept : v_(std::move(x)) {}
  data(std::string_view x) : v_(std::string{x}) {}
  data(const char* x) : v_(std::string{x}) {}
  data(address x) noexcept : v_(x) {}
  data(subnet x) noexcept : v_(x) {}
  data(port x) noexcept : v_(x) {}
  data(timestamp x) noexcept : v_(x) {}
  data(timespan x) noexcept : v_(x) {}
  data(enum_value x) noexcept : v_(std::move(x)) {}
  data(broker::set x) noexcept : v_(std::move(x)) {}
  data(broker::table x) noexcept : v_(std::move(x)) {}
  data(broker::vector x) noexcept : v_(std::move(x)) {}

  type get_type() const noexcept { return static_cast<type>(v_.index()); }

  /// True if this holds an alternative of type T.
  template <class T>
  bool is() const noexcept {
    return std::holds_alternative<T>(v_);
  }

  const variant_type& get_data() const noexcept { return v_; }
  variant_type& get_data() noexcept { return v_; }

  /// Total order of doc/protocol/binary.md §7.
  friend BROKER_API bool operator<(const data& x, const data& y) noexcept;
  friend BROKER_API bool operator==(const data& x, const data& y) noexcept;
  friend bool operator!=(const data& x, const data& y) noexcept { return !(x == y); }
  friend bool operator>(const data& x, const data& y) noexcept { return y < x; }
  friend bool operator<=(const data& x, const data& y) noexcept { return !(y < x); }
  friend bool operator>=(const data& x, const data& y) noexcept { return !(x < y); }

private:
  variant_type v_;
};

/// Returns a pointer to the T inside `x`, or nullptr.
template <class T>
const T* get_if(const data& x) noexcept {
  return std::get_if<T>(&x.get_data());
}
template <class T>
T* get_if(data& x) noexcept {
  return std::get_if<T>(&x.get_data());
}

/// Returns the T inside `x`. Pre: x.is<T>() (throws std::bad_variant_access otherwise).
template <class T>
const T& get(const data& x) {
  return std::get<T>(x.get_data());
}
template <class T>
T& get(data& x) {
  return std::get<T>(x.get_data());
}

/// The JSON spelling of a type: "none", "boolean", ..., "enum-value", ...
/// (doc/protocol/websocket.md §6).
BROKER_API std::string_view to_string(data::type x) noexcept;

/// Human-readable rendering in Broker's style: vectors as "(a, b)", sets as "{a, b}",
/// tables as "{k -> v, ...}", strings unquoted at top level and quoted when nested.
BROKER_API std::string to_string(const data& x);

/// Writes `to_string(x)`; lets test frameworks and logs print values.
BROKER_API std::ostream& operator<<(std::ostream& out, const data& x);

/// Builds a vector element by element: `vector_builder{}.add(1).add("x").build()`.
class BROKER_API vector_builder {
public:
  template <class T>
  vector_builder& add(T&& x) {
    xs_.emplace_back(std::forward<T>(x));
    return *this;
  }
  vector_builder& reserve(size_t n) {
    xs_.reserve(n);
    return *this;
  }
  data build() && { return data{std::move(xs_)}; }
  data build() const& { return data{xs_}; }

private:
  broker::vector xs_;
};

/// Builds a set; adding an element twice keeps one copy.
class BROKER_API set_builder {
public:
  template <class T>
  set_builder& add(T&& x) {
    xs_.emplace(std::forward<T>(x));
    return *this;
  }
  data build() && { return data{std::move(xs_)}; }
  data build() const& { return data{xs_}; }

private:
  broker::set xs_;
};

/// Builds a table; adding a key twice keeps the first value.
class BROKER_API table_builder {
public:
  template <class K, class V>
  table_builder& add(K&& key, V&& value) {
    xs_.emplace(data{std::forward<K>(key)}, data{std::forward<V>(value)});
    return *this;
  }
  data build() && { return data{std::move(xs_)}; }
  data build() const& { return data{xs_}; }

private:
  broker::table xs_;
};

} // namespace broker
