#pragma once

// broker-store's operations: the words of one operation, checked and parsed before anything
// touches the store (doc/broker-store.md "Operations").
//
//   put KEY VALUE [EXPIRY]          get KEY                  wait-size N TIMEOUT
//   put_unique KEY VALUE [EXPIRY]   exists KEY               wait-get KEY VALUE TIMEOUT
//   erase KEY                       keys
//   clear                           get_index_from_value KEY INDEX
//   increment KEY AMOUNT [EXPIRY]   decrement KEY AMOUNT [EXPIRY]
//   append KEY STRING [EXPIRY]      push KEY VALUE [EXPIRY]      pop KEY [EXPIRY]
//   insert_into KEY ELEMENT [EXPIRY]     (a set)
//   insert_into KEY INDEX VALUE [EXPIRY] (a table)
//   remove_from KEY ELEMENT [EXPIRY]
//
// EXPIRY and TIMEOUT are durations (`10s`, `500ms`); N is a decimal count. Where an
// operation may end in an EXPIRY, a trailing duration is the expiry, although a duration
// is also a timespan value (doc/literals.md): a timespan there must be written typed.

#include <broker/data.hh>
#include <broker/error.hh>
#include <broker/time.hh>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace broker_store {

enum class op_kind : uint8_t {
  put,
  put_unique,
  get,
  exists,
  keys,
  erase,
  clear,
  increment,
  decrement,
  append,
  insert_into,
  remove_from,
  push,
  pop,
  get_index_from_value,
  wait_size,
  wait_get,
};

/// The name as written on the command line, e.g. "put_unique", "wait-size".
std::string_view to_string(op_kind x) noexcept;

/// True for the operations that change the store.
bool is_write(op_kind x) noexcept;

/// One parsed operation.
struct operation {
  op_kind kind = op_kind::get;
  /// KEY, VALUE, INDEX, ... in the order of the synopsis.
  std::vector<broker::data> args;
  /// EXPIRY of a write, TIMEOUT of a wait.
  std::optional<broker::timespan> duration;
  /// N of wait-size.
  uint64_t size = 0;
};

/// Splits an input line into words at blanks; a JSON string, array or object is one word
/// even with blanks inside (`put k [1, 2]`, `put k "a b"`). Errors (invalid_message): an
/// unterminated string or bracket.
broker::expected<std::vector<std::string>> split_words(std::string_view line);

/// Parses the words of one operation. Errors name the operation: invalid_message (unknown
/// operation, wrong number of arguments, a bad N, EXPIRY or TIMEOUT), invalid_json or
/// invalid_data (a KEY or VALUE; values.hh).
broker::expected<operation> parse_operation(const std::vector<std::string>& words);

} // namespace broker_store
