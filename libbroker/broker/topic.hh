#pragma once

// Topics and filters.
//
// A topic is a byte string. A subscription is a raw byte prefix: "/foo" matches "/foo",
// "/foo/bar" AND "/foobar" (Broker's rule; no path-segment semantics). The empty prefix
// matches everything. Topics starting with "<$>" are reserved for internal use: applications
// and clients may not publish there.

#include "broker/export.hh"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace broker {

/// A topic name or subscription prefix.
class BROKER_API topic {
public:
  topic() = default;
  topic(std::string str) : str_(std::move(str)) {}
  topic(std::string_view str) : str_(str) {}
  topic(const char* str) : str_(str) {}

  const std::string& string() const& noexcept { return str_; }
  /// Moves the name out of a temporary topic.
  std::string string() && noexcept { return std::move(str_); }
  std::string_view view() const noexcept { return str_; }
  bool empty() const noexcept { return str_.empty(); }

  /// True if this topic starts with the reserved prefix "<$>".
  bool is_reserved() const noexcept { return view().substr(0, 3) == reserved; }

  /// True if a subscription to `prefix` receives messages on this topic.
  bool matches(std::string_view prefix) const noexcept {
    return view().substr(0, prefix.size()) == prefix;
  }

  friend bool operator==(const topic& x, const topic& y) noexcept { return x.str_ == y.str_; }
  friend bool operator!=(const topic& x, const topic& y) noexcept { return x.str_ != y.str_; }
  friend bool operator<(const topic& x, const topic& y) noexcept { return x.str_ < y.str_; }

  /// The reserved prefix "<$>".
  static constexpr std::string_view reserved = "<$>";
  /// Where the endpoint publishes status events.
  static constexpr std::string_view statuses = "<$>/local/data/statuses";
  /// Where the endpoint publishes error events.
  static constexpr std::string_view errors = "<$>/local/data/errors";
  /// Where data stores publish change events.
  static constexpr std::string_view store_events = "<$>/local/data/store-events";

private:
  std::string str_;
};

inline const std::string& to_string(const topic& x) noexcept {
  return x.string();
}

/// True if `name` starts with the reserved prefix "<$>".
inline bool is_reserved_topic(std::string_view name) noexcept {
  return name.substr(0, topic::reserved.size()) == topic::reserved;
}

/// A set of subscription prefixes.
using filter_type = std::vector<topic>;

/// Sorts `xs`, removes duplicates and every prefix that another entry already covers
/// ("/a" makes "/a/b" redundant). This is the minimal form peers exchange.
BROKER_API void minimize(filter_type& xs);

} // namespace broker
