// The single pass of the JSON decoder (json.hh, json_internal.hh): the layout Broker's own
// encoder writes, decoded straight into broker::data without a token tape. It accepts a
// subset of what the general path accepts and gives the same result there; on anything
// else it answers false, and the caller runs the general path, which words the error.
//
// Finished values wait on a stack (one per decoder, reused from message to message) until
// their container closes; each container is then built with its exact size, so no vector
// grows by doubling and nothing is reserved beyond what the input holds. The nesting limit
// is checked at every opening bracket exactly as the tokenizer checks it, which also bounds
// the recursion (two levels per nested Broker container).

#include "broker/internal/codec/json_internal.hh"

#include "broker/topic.hh"

#include <algorithm>
#include <iterator>
#include <limits>

namespace broker::internal::json::detail {

namespace {

/// A stack grown beyond this many values (14 KiB) by one large message is released
/// afterwards: a session keeps one, and a typical event needs a few dozen.
constexpr size_t max_retained_values = 256;

constexpr auto slot_of(data::type type) noexcept {
  return static_cast<size_t>(type);
}

class single_pass {
public:
  single_pass(std::string_view in, size_t max_depth, std::vector<data>& stack, data* top)
    : in_(in), max_depth_(std::min(max_depth, max_depth_limit)), stack_(stack), top_(top) {}

  /// `{["type":<string>,]"topic":<string>,"@data-type":...,"data":...}`.
  bool data_message(std::string& topic) {
    if (max_depth_ < 1)
      return false;
    if (glue("{\"type\":")) {
      std::string_view raw;
      uint8_t flags = 0;
      if (!literal("\"data-message\"") && !string_token(raw, flags))
        return false;
      if (!glue(",\"topic\":"))
        return false;
    } else if (!glue("{\"topic\":")) {
      return false;
    }
    if (!string_into(topic) || is_reserved_topic(topic))
      return false; // the general path words the reserved topic
    return glue(",\"@data-type\":") && value_body(true, 1) && glue("}") && at_end();
  }

  /// `{"@data-type":...,"data":...}`.
  bool value_object() {
    return max_depth_ >= 1 && glue("{\"@data-type\":") && value_body(true, 1) && glue("}")
           && at_end();
  }

  /// `[<string>, ...]`.
  bool filter(std::vector<std::string>& out) {
    if (max_depth_ < 1 || !glue("["))
      return false;
    if (!consume(']')) {
      do {
        if (!string_into(out.emplace_back()))
          return false;
      } while (glue(","));
      if (!glue("]"))
        return false;
    }
    return at_end();
  }

private:
  // -- the cursor ---------------------------------------------------------------------------

  char peek() const noexcept { return pos_ < in_.size() ? in_[pos_] : '\0'; }

  void ws() noexcept {
    // Compact JSON has no whitespace: one comparison rules it out.
    while (pos_ < in_.size() && static_cast<uint8_t>(in_[pos_]) <= ' '
           && is_json_whitespace(in_[pos_]))
      ++pos_;
  }

  bool consume(char c) noexcept {
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }

  /// True if only whitespace remains.
  bool at_end() noexcept {
    ws();
    return pos_ == in_.size();
  }

  /// Consumes the constant `word` if it comes next (one comparison of known size).
  template <size_t N>
  __attribute__((always_inline)) bool literal(const char (&word)[N]) noexcept {
    constexpr auto size = N - 1;
    if (in_.size() - pos_ < size || std::memcmp(in_.data() + pos_, word, size) != 0)
      return false;
    pos_ += size;
    return true;
  }

  /// Consumes `word` if it comes next.
  bool literal(std::string_view word) noexcept {
    if (in_.size() - pos_ < word.size()
        || std::memcmp(in_.data() + pos_, word.data(), word.size()) != 0)
      return false;
    pos_ += word.size();
    return true;
  }

  /// Consumes `pattern`, a run of structural characters and quoted keys such as
  /// `,"data":`, with any whitespace before each of its tokens, and the whitespace before
  /// the value that follows; on a mismatch, nothing. (Brackets in patterns are opened
  /// after a check of the nesting limit by the caller.) Compact text matches at once.
  template <size_t N>
  __attribute__((always_inline)) bool glue(const char (&pattern)[N]) noexcept {
    constexpr auto size = N - 1;
    if (in_.size() - pos_ >= size && std::memcmp(in_.data() + pos_, pattern, size) == 0) {
      pos_ += size;
      auto last = pattern[size - 1];
      if (last == ':' || last == ',' || last == '[')
        ws();
      return true;
    }
    return glue_mismatch({pattern, size});
  }

  /// glue() after a mismatch: where the text first differs from the pattern, only
  /// whitespace can make it match.
  __attribute__((noinline)) bool glue_mismatch(std::string_view pattern) noexcept {
    auto size = pattern.size();
    auto avail = in_.size() - pos_;
    size_t i = 0;
    while (i < avail && i < size && in_[pos_ + i] == pattern[i])
      ++i;
    if (i == avail || !is_json_whitespace(in_[pos_ + i]))
      return false;
    return glue_spaced(pattern);
  }

  /// glue() for text with whitespace (or no match).
  __attribute__((noinline)) bool glue_spaced(std::string_view pattern) noexcept {
    auto start = pos_;
    for (size_t i = 0; i < pattern.size();) {
      ws();
      auto token_size = size_t{1};
      if (pattern[i] == '"')
        token_size = pattern.find('"', i + 1) + 1 - i;
      if (!literal(pattern.substr(i, token_size))) {
        pos_ = start;
        return false;
      }
      i += token_size;
    }
    ws();
    return true;
  }

  // -- tokens -------------------------------------------------------------------------------

  /// Scans the string whose opening quote is next; `raw` is its body.
  bool string_token(std::string_view& raw, uint8_t& flags) noexcept {
    if (peek() != '"')
      return false;
    auto res = scan_string(in_, pos_ + 1, flags);
    if (!res.ok)
      return false;
    raw = in_.substr(pos_ + 1, res.pos - pos_ - 1);
    pos_ = res.pos + 1;
    return true;
  }

  /// Decodes the next string token into `out`, reusing its capacity.
  bool string_into(std::string& out) {
    std::string_view raw;
    uint8_t flags = 0;
    if (!string_token(raw, flags))
      return false;
    if (flags & (flag_escaped | flag_non_ascii)) {
      decode_string(raw, (flags & flag_non_ascii) != 0, out);
    } else {
      out.clear(); // then append: cheaper than assign(), which allows for overlap
      out.append(raw.data(), raw.size());
    }
    return true;
  }

  /// Scans the number token that comes next (not `-Infinity` or `-inf`).
  bool number(number_scan& num) noexcept {
    auto c = peek();
    if (c != '-' && !is_json_digit(c))
      return false;
    // Most numbers are short integers: up to 18 digits (no overflow possible), not "0"
    // (which must not have more digits) and then no digit, '.', 'e' or 'E'.
    auto size = in_.size();
    auto pos = pos_ + (c == '-');
    auto end = size - pos > 18 ? pos + 18 : size;
    if (pos < end && in_[pos] >= '1' && in_[pos] <= '9') {
      uint64_t magnitude = 0;
      do {
        magnitude = magnitude * 10 + static_cast<uint64_t>(in_[pos] - '0');
        ++pos;
      } while (pos < end && is_json_digit(in_[pos]));
      if (pos == size
          || (!is_json_digit(in_[pos]) && in_[pos] != '.' && in_[pos] != 'e'
              && in_[pos] != 'E')) {
        num.magnitude = magnitude;
        num.flags = c == '-' ? flag_integral | flag_negative : flag_integral;
        pos_ = pos;
        return true;
      }
    }
    auto res = scan_number(in_, pos_, num);
    if (!res.ok)
      return false;
    pos_ = res.pos;
    return true;
  }

  /// Reads the quoted type name that comes next. Dispatches on the first letter (and the
  /// second or length where letters repeat), then compares the whole name and the closing
  /// quote at once.
  bool type_name(data::type& type) noexcept {
    if (in_.size() - pos_ < 5 || in_[pos_] != '"')
      return false;
    auto is = [&](const auto& quoted, data::type candidate) {
      if (!literal(quoted))
        return false;
      type = candidate;
      return true;
    };
    using t = data::type;
    switch (in_[pos_ + 1]) {
      case 'a':
        return is("\"address\"", t::address);
      case 'b':
        return is("\"boolean\"", t::boolean);
      case 'c':
        return is("\"count\"", t::count);
      case 'e':
        return is("\"enum-value\"", t::enum_value);
      case 'i':
        return is("\"integer\"", t::integer);
      case 'n':
        return is("\"none\"", t::none);
      case 'p':
        return is("\"port\"", t::port);
      case 'r':
        return is("\"real\"", t::real);
      case 's':
        switch (in_[pos_ + 2]) {
          case 't':
            return is("\"string\"", t::string);
          case 'e':
            return is("\"set\"", t::set);
          case 'u':
            return is("\"subnet\"", t::subnet);
        }
        return false;
      case 't':
        if (in_[pos_ + 2] == 'a')
          return is("\"table\"", t::table);
        return is("\"timestamp\"", t::timestamp) || is("\"timespan\"", t::timespan);
      case 'v':
        return is("\"vector\"", t::vector);
    }
    return false;
  }

  // -- values -------------------------------------------------------------------------------
  //
  // Each value goes to one of two places: the caller's value (`top`), whose string or
  // vector keeps its capacity, or a new element on the stack, constructed in place.

  /// Stores `x`, of the alternative `T`.
  template <data::type T, class V>
  void put(bool top, V&& x) {
    if (top)
      top_->get_data().template emplace<slot_of(T)>(std::forward<V>(x));
    else
      stack_.emplace_back(std::forward<V>(x));
  }

  /// The alternative `T` (default-constructed, or as it was in the caller's value) to fill.
  template <data::type T>
  auto& place(bool top) {
    using type = std::variant_alternative_t<slot_of(T), data::variant_type>;
    auto& var = top ? top_->get_data() : stack_.emplace_back(type{}).get_data();
    if (var.index() != slot_of(T))
      var.template emplace<slot_of(T)>();
    return *std::get_if<slot_of(T)>(&var);
  }

  /// After `{"@data-type":` of an object at nesting `depth`: `"<T>","data":<V>`, or for
  /// none `"none"` with no data, `,"data":{}` or `,"data":null`. The caller reads the `}`
  /// (together with what follows it).
  bool value_body(bool top, size_t depth) {
    data::type type;
    if (!type_name(type))
      return false;
    if (type == data::type::none) {
      if (glue(",\"data\":") && !(depth + 1 <= max_depth_ && glue("{}")) && !literal("null"))
        return false;
      put<data::type::none>(top, none{});
      return true;
    }
    return glue(",\"data\":") && value_data(type, top, depth);
  }

  bool value_data(data::type type, bool top, size_t depth) {
    using t = data::type;
    switch (type) {
      case t::boolean:
        if (literal("true"))
          put<t::boolean>(top, true);
        else if (literal("false"))
          put<t::boolean>(top, false);
        else
          return false;
        return true;
      case t::count: {
        number_scan num;
        if (!number(num) || !(num.flags & flag_integral)
            || ((num.flags & flag_negative) && num.magnitude != 0)) // "-0" is zero
          return false;
        put<t::count>(top, count{num.magnitude});
        return true;
      }
      case t::integer: {
        number_scan num;
        if (!number(num) || !(num.flags & flag_integral))
          return false;
        if (num.flags & flag_negative)
          put<t::integer>(top, num.magnitude == max_negative_magnitude
                                 ? std::numeric_limits<integer>::min()
                                 : -static_cast<integer>(num.magnitude));
        else if (num.magnitude > static_cast<uint64_t>(std::numeric_limits<integer>::max()))
          return false;
        else
          put<t::integer>(top, static_cast<integer>(num.magnitude));
        return true;
      }
      case t::real:
        return real_data(top);
      case t::string:
        return string_into(place<t::string>(top));
      case t::enum_value:
        return string_into(place<t::enum_value>(top).name);
      case t::address:
        return parsed<t::address>(top, address::parse);
      case t::subnet:
        return parsed<t::subnet>(top, subnet::parse);
      case t::port:
        return parsed<t::port>(top, port::parse);
      case t::timestamp:
        return parsed<t::timestamp>(top, parse_timestamp);
      case t::timespan:
        return parsed<t::timespan>(top, parse_timespan);
      case t::set:
        return set_data(top, depth + 1);
      case t::table:
        return table_data(top, depth + 1);
      case t::vector:
        return vector_data(top, depth + 1);
      default: // none has no data
        return false;
    }
  }

  bool real_data(bool top) {
    using t = data::type;
    auto c = peek();
    if (c == '-' || is_json_digit(c)) {
      if (literal("-Infinity") || literal("-inf")) {
        put<t::real>(top, -std::numeric_limits<real>::infinity());
        return true;
      }
      auto start = pos_;
      number_scan num;
      if (!number(num))
        return false;
      // Integer tokens are accepted too [fix], as in the general path.
      put<t::real>(top, to_double(in_.substr(start, pos_ - start)));
      return true;
    }
    if (literal("NaN") || literal("nan")) {
      put<t::real>(top, std::numeric_limits<real>::quiet_NaN());
      return true;
    }
    if (literal("Infinity") || literal("inf")) {
      put<t::real>(top, std::numeric_limits<real>::infinity());
      return true;
    }
    return false;
  }

  /// A string parsed by `parse` (which returns an optional).
  template <data::type T, class Parse>
  bool parsed(bool top, Parse parse) {
    std::string_view raw;
    uint8_t flags = 0;
    if (!string_token(raw, flags))
      return false;
    auto text = raw;
    if (flags & (flag_escaped | flag_non_ascii)) {
      decode_string(raw, (flags & flag_non_ascii) != 0, scratch_);
      text = scratch_;
    }
    auto value = parse(text);
    if (!value)
      return false;
    put<T>(top, *value);
    return true;
  }

  /// The elements of the array that comes next (at nesting `depth`), pushed on the stack.
  /// Table entries push key and value. Each element's `}` is read together with what
  /// follows it, e.g. `},{"@data-type":` between elements.
  template <bool IsTable>
  bool elements(size_t depth) {
    if (depth > max_depth_ || !glue("["))
      return false;
    if (consume(']')) // glue() took the whitespace after '['
      return true;
    if constexpr (IsTable) {
      if (depth + 2 > max_depth_ || !glue("{\"key\":{\"@data-type\":"))
        return false;
      for (;;) {
        if (!value_body(false, depth + 2) || !glue("},\"value\":{\"@data-type\":")
            || !value_body(false, depth + 2))
          return false;
        if (literal("}}]"))
          return true;
        if (!glue("}},{\"key\":{\"@data-type\":"))
          return glue("}}]");
      }
    } else {
      if (depth + 1 > max_depth_ || !glue("{\"@data-type\":"))
        return false;
      for (;;) {
        if (!value_body(false, depth + 1))
          return false;
        if (literal("}]"))
          return true;
        if (!glue("},{\"@data-type\":"))
          return glue("}]");
      }
    }
  }

  bool vector_data(bool top, size_t depth) {
    auto base = stack_.size();
    if (!elements<false>(depth))
      return false;
    auto first = std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(base));
    auto last = std::make_move_iterator(stack_.end());
    if (top) {
      auto& xs = place<data::type::vector>(true);
      xs.clear(); // then move-construct: cheaper than assign(), which move-assigns
      xs.insert(xs.end(), first, last);
      stack_.resize(base);
    } else {
      broker::vector xs(first, last);
      stack_.resize(base);
      stack_.emplace_back(std::move(xs));
    }
    return true;
  }

  bool set_data(bool top, size_t depth) {
    auto base = stack_.size();
    if (!elements<false>(depth))
      return false;
    broker::set xs;
    for (auto i = base; i < stack_.size(); ++i)
      if (!xs.insert(std::move(stack_[i])).second)
        return false; // a duplicate: the general path decides what to report
    stack_.resize(base);
    put<data::type::set>(top, std::move(xs));
    return true;
  }

  bool table_data(bool top, size_t depth) {
    auto base = stack_.size();
    if (!elements<true>(depth))
      return false;
    broker::table xs;
    for (auto i = base; i < stack_.size(); i += 2)
      if (!xs.emplace(std::move(stack_[i]), std::move(stack_[i + 1])).second)
        return false; // a duplicate key
    stack_.resize(base);
    put<data::type::table>(top, std::move(xs));
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  size_t max_depth_;
  std::vector<data>& stack_;
  data* top_;
  std::string scratch_; ///< Decoded text of escaped addresses, ports and times.
};

/// Empties the stack, releasing it if one message made it large.
void reset(std::vector<data>& stack) {
  if (stack.capacity() > max_retained_values)
    std::vector<data>{}.swap(stack);
  else
    stack.clear();
}

} // namespace

bool fast_data_message(std::string_view text, std::string& topic, data& value,
                       size_t max_depth, std::vector<data>& stack) {
  if (text.size() >= max_input_size)
    return false;
  stack.clear();
  auto ok = single_pass{text, max_depth, stack, &value}.data_message(topic);
  reset(stack);
  return ok;
}

bool fast_decode(std::string_view text, data& value, size_t max_depth,
                 std::vector<data>& stack) {
  if (text.size() >= max_input_size)
    return false;
  stack.clear();
  auto ok = single_pass{text, max_depth, stack, &value}.value_object();
  reset(stack);
  return ok;
}

bool fast_filter(std::string_view text, size_t max_depth, std::vector<std::string>& out) {
  if (text.size() >= max_input_size)
    return false;
  std::vector<data> unused;
  out.clear();
  return single_pass{text, max_depth, unused, nullptr}.filter(out);
}

} // namespace broker::internal::json::detail
