#include "broker/data.hh"

#include "broker/internal/codec/hex.hh"

#include <charconv>
#include <cmath>
#include <ostream>

namespace broker {

namespace {

// Large enough for the shortest round-trip form of any double.
constexpr size_t real_buffer_size = 32;

template <class T>
const T& as(const data& x) noexcept {
  return *std::get_if<T>(&x.get_data());
}

template <class T>
int compare_scalar(const T& x, const T& y) noexcept {
  return x < y ? -1 : (y < x ? 1 : 0);
}

// Numeric order with -0.0 == +0.0; NaN sorts after +inf and all NaNs are equal, which keeps
// the order strict-weak so that std::set and std::map stay well-formed (doc/protocol/binary.md §7).
int compare_real(real x, real y) noexcept {
  bool x_nan = std::isnan(x);
  bool y_nan = std::isnan(y);
  if (x_nan || y_nan)
    return static_cast<int>(x_nan) - static_cast<int>(y_nan);
  return compare_scalar(x, y);
}

// std::string::compare goes through char_traits<char>, which compares as unsigned char.
int compare_bytes(const std::string& x, const std::string& y) noexcept {
  auto result = x.compare(y);
  return result < 0 ? -1 : (result > 0 ? 1 : 0);
}

int compare(const data& x, const data& y) noexcept;

int compare_elements(const data& x, const data& y) noexcept {
  return compare(x, y);
}

int compare_elements(const table::value_type& x, const table::value_type& y) noexcept {
  if (auto result = compare(x.first, y.first); result != 0)
    return result;
  return compare(x.second, y.second);
}

// Lexicographic order over containers whose iteration order is already ascending (sets,
// tables) or meaningful (vectors); a proper prefix sorts first.
template <class Container>
int compare_containers(const Container& xs, const Container& ys) noexcept {
  auto i = xs.begin();
  auto j = ys.begin();
  for (; i != xs.end() && j != ys.end(); ++i, ++j)
    if (auto result = compare_elements(*i, *j); result != 0)
      return result;
  if (i == xs.end())
    return j == ys.end() ? 0 : -1;
  return 1;
}

int compare(const data& x, const data& y) noexcept {
  auto tx = x.get_type();
  auto ty = y.get_type();
  if (tx != ty)
    return tx < ty ? -1 : 1;
  switch (tx) {
    case data::type::none:
      return 0;
    case data::type::boolean:
      return compare_scalar(as<boolean>(x), as<boolean>(y));
    case data::type::count:
      return compare_scalar(as<count>(x), as<count>(y));
    case data::type::integer:
      return compare_scalar(as<integer>(x), as<integer>(y));
    case data::type::real:
      return compare_real(as<real>(x), as<real>(y));
    case data::type::string:
      return compare_bytes(as<std::string>(x), as<std::string>(y));
    case data::type::address:
      return compare_scalar(as<address>(x), as<address>(y));
    case data::type::subnet:
      return compare_scalar(as<subnet>(x), as<subnet>(y));
    case data::type::port:
      return compare_scalar(as<port>(x), as<port>(y));
    case data::type::timestamp:
      return compare_scalar(as<timestamp>(x), as<timestamp>(y));
    case data::type::timespan:
      return compare_scalar(as<timespan>(x), as<timespan>(y));
    case data::type::enum_value:
      return compare_bytes(as<enum_value>(x).name, as<enum_value>(y).name);
    case data::type::set:
      return compare_containers(as<set>(x), as<set>(y));
    case data::type::table:
      return compare_containers(as<table>(x), as<table>(y));
    case data::type::vector:
      return compare_containers(as<vector>(x), as<vector>(y));
  }
  return 0;
}

bool equal_elements(const data& x, const data& y) noexcept {
  return x == y;
}

bool equal_elements(const table::value_type& x, const table::value_type& y) noexcept {
  return x.first == y.first && x.second == y.second;
}

// Sets and tables iterate in ascending order, so equal containers match element by element;
// checking sizes first avoids walking containers that cannot be equal.
template <class Container>
bool equal_containers(const Container& xs, const Container& ys) noexcept {
  if (xs.size() != ys.size())
    return false;
  auto j = ys.begin();
  for (const auto& x : xs)
    if (!equal_elements(x, *j++))
      return false;
  return true;
}

void append_real(real x, std::string& out) {
  char buf[real_buffer_size];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), x);
  std::string_view text{buf, static_cast<size_t>(end - buf)};
  out += text;
  // Keep reals visibly distinct from integers, as the JSON output does
  // (doc/protocol/websocket.md §6.2).
  if (std::isfinite(x) && text.find_first_of(".eE") == std::string_view::npos)
    out += ".0";
}

void append_quoted(const std::string& str, std::string& out) {
  using internal::hex_digits;
  constexpr unsigned char first_printable = 0x20;
  constexpr unsigned char del = 0x7f;
  out += '"';
  for (char c : str) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        auto byte = static_cast<unsigned char>(c);
        if (byte < first_printable || byte == del) {
          out += "\\x";
          out += hex_digits[byte >> 4];
          out += hex_digits[byte & 0xf];
        } else {
          out += c;
        }
      }
    }
  }
  out += '"';
}

void append(const data& x, bool nested, std::string& out);

template <class Container>
void append_elements(const Container& xs, std::string& out) {
  bool first = true;
  for (const auto& x : xs) {
    if (!first)
      out += ", ";
    first = false;
    if constexpr (std::is_same_v<Container, table>) {
      append(x.first, true, out);
      out += " -> ";
      append(x.second, true, out);
    } else {
      append(x, true, out);
    }
  }
}

void append(const data& x, bool nested, std::string& out) {
  switch (x.get_type()) {
    case data::type::none:
      out += "nil";
      break;
    case data::type::boolean:
      out += as<boolean>(x) ? 'T' : 'F';
      break;
    case data::type::count:
      out += std::to_string(as<count>(x));
      break;
    case data::type::integer:
      out += std::to_string(as<integer>(x));
      break;
    case data::type::real:
      append_real(as<real>(x), out);
      break;
    case data::type::string:
      if (nested)
        append_quoted(as<std::string>(x), out);
      else
        out += as<std::string>(x);
      break;
    case data::type::address:
      out += to_string(as<address>(x));
      break;
    case data::type::subnet:
      out += to_string(as<subnet>(x));
      break;
    case data::type::port:
      out += to_string(as<port>(x));
      break;
    case data::type::timestamp:
      out += to_string(as<timestamp>(x));
      break;
    case data::type::timespan:
      out += to_string(as<timespan>(x));
      break;
    case data::type::enum_value:
      out += as<enum_value>(x).name;
      break;
    case data::type::set:
      out += '{';
      append_elements(as<set>(x), out);
      out += '}';
      break;
    case data::type::table:
      out += '{';
      append_elements(as<table>(x), out);
      out += '}';
      break;
    case data::type::vector:
      out += '(';
      append_elements(as<vector>(x), out);
      out += ')';
      break;
  }
}

} // namespace

bool operator<(const data& x, const data& y) noexcept {
  return compare(x, y) < 0;
}

bool operator==(const data& x, const data& y) noexcept {
  auto type = x.get_type();
  if (type != y.get_type())
    return false;
  switch (type) {
    case data::type::real:
      return compare_real(as<real>(x), as<real>(y)) == 0;
    case data::type::set:
      return equal_containers(as<set>(x), as<set>(y));
    case data::type::table:
      return equal_containers(as<table>(x), as<table>(y));
    case data::type::vector:
      return equal_containers(as<vector>(x), as<vector>(y));
    default:
      // Every other alternative's own operator== already matches §7's equivalence.
      return x.get_data() == y.get_data();
  }
}

std::string_view to_string(data::type x) noexcept {
  switch (x) {
    case data::type::none:
      return "none";
    case data::type::boolean:
      return "boolean";
    case data::type::count:
      return "count";
    case data::type::integer:
      return "integer";
    case data::type::real:
      return "real";
    case data::type::string:
      return "string";
    case data::type::address:
      return "address";
    case data::type::subnet:
      return "subnet";
    case data::type::port:
      return "port";
    case data::type::timestamp:
      return "timestamp";
    case data::type::timespan:
      return "timespan";
    case data::type::enum_value:
      return "enum-value";
    case data::type::set:
      return "set";
    case data::type::table:
      return "table";
    case data::type::vector:
      return "vector";
  }
  return "invalid";
}

std::string to_string(const data& x) {
  std::string out;
  append(x, false, out);
  return out;
}

std::ostream& operator<<(std::ostream& out, const data& x) {
  return out << to_string(x);
}

} // namespace broker
