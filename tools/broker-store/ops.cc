#include "ops.hh"

#include "values.hh"

#include <broker/json.hh>

#include <array>

namespace broker_store {

using broker::ec;
using broker::error;
using broker::expected;

namespace {

/// What follows the data arguments of an operation.
enum class tail : uint8_t {
  none,
  expiry,  ///< An optional EXPIRY.
  timeout, ///< A required TIMEOUT.
};

/// The shape of one operation's arguments.
struct op_spec {
  op_kind kind;
  std::string_view name;
  std::string_view synopsis;
  size_t min_args; ///< KEY/VALUE-like arguments, at least.
  size_t max_args; ///< ... and at most.
  tail after;
};

constexpr std::array<op_spec, 17> specs{{
  {op_kind::put, "put", "put KEY VALUE [EXPIRY]", 2, 2, tail::expiry},
  {op_kind::put_unique, "put_unique", "put_unique KEY VALUE [EXPIRY]", 2, 2, tail::expiry},
  {op_kind::get, "get", "get KEY", 1, 1, tail::none},
  {op_kind::exists, "exists", "exists KEY", 1, 1, tail::none},
  {op_kind::keys, "keys", "keys", 0, 0, tail::none},
  {op_kind::erase, "erase", "erase KEY", 1, 1, tail::none},
  {op_kind::clear, "clear", "clear", 0, 0, tail::none},
  {op_kind::increment, "increment", "increment KEY AMOUNT [EXPIRY]", 2, 2, tail::expiry},
  {op_kind::decrement, "decrement", "decrement KEY AMOUNT [EXPIRY]", 2, 2, tail::expiry},
  {op_kind::append, "append", "append KEY STRING [EXPIRY]", 2, 2, tail::expiry},
  {op_kind::insert_into, "insert_into",
   "insert_into KEY ELEMENT [EXPIRY] or insert_into KEY INDEX VALUE [EXPIRY]", 2, 3,
   tail::expiry},
  {op_kind::remove_from, "remove_from", "remove_from KEY ELEMENT [EXPIRY]", 2, 2,
   tail::expiry},
  {op_kind::push, "push", "push KEY VALUE [EXPIRY]", 2, 2, tail::expiry},
  {op_kind::pop, "pop", "pop KEY [EXPIRY]", 1, 1, tail::expiry},
  {op_kind::get_index_from_value, "get_index_from_value", "get_index_from_value KEY INDEX", 2,
   2, tail::none},
  {op_kind::wait_size, "wait-size", "wait-size N TIMEOUT", 0, 0, tail::timeout},
  {op_kind::wait_get, "wait-get", "wait-get KEY VALUE TIMEOUT", 2, 2, tail::timeout},
}};

const op_spec* find_spec(std::string_view name) {
  for (auto& spec : specs)
    if (spec.name == name)
      return &spec;
  return nullptr;
}

const op_spec& spec_of(op_kind kind) {
  return specs[static_cast<size_t>(kind)];
}

error bad_op(const op_spec& spec, std::string what) {
  return error{ec::invalid_message,
               std::string{spec.name} + ": " + what + " (usage: " + std::string{spec.synopsis}
                 + ")"};
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/// Index one past the JSON string starting at `pos` (a '"'), or npos if it never ends.
size_t skip_string(std::string_view line, size_t pos) {
  for (size_t i = pos + 1; i < line.size(); ++i) {
    if (line[i] == '\\')
      ++i;
    else if (line[i] == '"')
      return i + 1;
  }
  return std::string_view::npos;
}

/// Index one past the JSON array or object starting at `pos`, or npos if it never closes.
size_t skip_container(std::string_view line, size_t pos) {
  size_t depth = 0;
  for (size_t i = pos; i < line.size();) {
    auto c = line[i];
    if (c == '"') {
      i = skip_string(line, i);
      if (i == std::string_view::npos)
        return i;
      continue;
    }
    if (c == '[' || c == '{')
      ++depth;
    else if ((c == ']' || c == '}') && --depth == 0)
      return i + 1;
    ++i;
  }
  return std::string_view::npos;
}

std::optional<uint64_t> parse_size(std::string_view word) {
  if (word.empty() || word.size() > 19)
    return std::nullopt;
  uint64_t result = 0;
  for (auto c : word) {
    if (c < '0' || c > '9')
      return std::nullopt;
    result = result * 10 + static_cast<uint64_t>(c - '0');
  }
  return result;
}

} // namespace

std::string_view to_string(op_kind x) noexcept {
  return spec_of(x).name;
}

bool is_write(op_kind x) noexcept {
  switch (x) {
    case op_kind::put:
    case op_kind::erase:
    case op_kind::clear:
    case op_kind::increment:
    case op_kind::decrement:
    case op_kind::append:
    case op_kind::insert_into:
    case op_kind::remove_from:
    case op_kind::push:
    case op_kind::pop:
      return true;
    default:
      // put_unique changes the store too, but answers for itself: it is a query here.
      return false;
  }
}

expected<std::vector<std::string>> split_words(std::string_view line) {
  std::vector<std::string> result;
  size_t i = 0;
  while (i < line.size()) {
    if (is_blank(line[i])) {
      ++i;
      continue;
    }
    auto start = i;
    // A word runs to the next blank, except inside a JSON string or container, which
    // may start anywhere in the word (`{"@data-type": "count", "data": 1}`).
    while (i < line.size() && !is_blank(line[i])) {
      auto c = line[i];
      size_t end = i + 1;
      if (c == '"')
        end = skip_string(line, i);
      else if (c == '[' || c == '{')
        end = skip_container(line, i);
      if (end == std::string_view::npos)
        return error{ec::invalid_message,
                     "unterminated " + std::string{c == '"' ? "string" : "bracket"}
                       + " starting at column " + std::to_string(i + 1)};
      i = end;
    }
    result.emplace_back(line.substr(start, i - start));
  }
  return result;
}

expected<operation> parse_operation(const std::vector<std::string>& words) {
  if (words.empty())
    return error{ec::invalid_message, "empty operation"};
  auto* spec = find_spec(words.front());
  if (spec == nullptr)
    return error{ec::invalid_message,
                 "unknown operation \"" + words.front()
                   + "\" (put, put_unique, get, exists, keys, erase, clear, increment, "
                     "decrement, append, insert_into, remove_from, push, pop, "
                     "get_index_from_value, wait-size, wait-get)"};
  operation result;
  result.kind = spec->kind;
  size_t first = 1;
  size_t last = words.size(); // One past the data arguments.
  if (spec->kind == op_kind::wait_size) {
    if (words.size() != 3)
      return bad_op(*spec, "expects 2 arguments, got " + std::to_string(words.size() - 1));
    auto n = parse_size(words[1]);
    if (!n)
      return bad_op(*spec, "N must be a decimal count, got \"" + words[1] + "\"");
    result.size = *n;
    first = 2;
  }
  auto given = last - first;
  switch (spec->after) {
    case tail::none:
      break;
    case tail::timeout:
      if (given == 0 || given != spec->max_args + 1)
        return bad_op(*spec, "expects " + std::to_string(spec->max_args + 1 + first - 1)
                               + " arguments, got " + std::to_string(words.size() - 1));
      result.duration = broker::parse_timespan(words[last - 1]);
      if (!result.duration)
        return bad_op(*spec, "TIMEOUT must be a duration such as 10s or 500ms, got \""
                               + words[last - 1] + "\"");
      --last;
      break;
    case tail::expiry:
      // The last word is an expiry when there are more words than data arguments, and, for
      // insert_into with 3 words, when it is a duration (a timespan value there is typed).
      if (given > spec->max_args
          || (given > spec->min_args && broker::parse_timespan(words[last - 1]))) {
        result.duration = broker::parse_timespan(words[last - 1]);
        if (!result.duration)
          return bad_op(*spec, "EXPIRY must be a duration such as 10s or 500ms, got \""
                                 + words[last - 1] + "\"");
        --last;
      }
      break;
  }
  given = last - first;
  if (given < spec->min_args || given > spec->max_args)
    return bad_op(*spec, "wrong number of arguments: " + std::to_string(words.size() - 1));
  for (auto i = first; i < last; ++i) {
    auto x = parse_value(words[i]);
    if (!x)
      return error{x.error_value().code(),
                   std::string{spec->name} + ": " + x.error_value().message()};
    result.args.push_back(std::move(*x));
  }
  return result;
}

} // namespace broker_store
