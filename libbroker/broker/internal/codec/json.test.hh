#pragma once

// Helpers shared by the JSON codec tests (json.test.cc, json_fast.test.cc,
// json_fallback.test.cc): the check that the decoder's two paths agree, and shorthands for
// the single pass's tests. Test-only; nothing in the library includes this.

#include "broker/internal/codec/json.hh"
#include "broker/internal/codec/json_internal.hh"

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::json::test {

/// Decodes `text` as a data message (with a fresh and with a long-lived json::decoder), as a
/// value object and as a filter, each once through the public function (single pass, then
/// the general path) and once through the general path alone, and CHECKs that both give the
/// same status, syntax error position, error text, topic and value (compared by their
/// encodings too, which tell -0.0 from 0.0). Returns true if the single pass decoded the
/// data message itself. Defined in json_fast.test.cc.
bool check_paths_agree(std::string_view text, size_t max_depth = default_max_depth);

/// `text` with every byte outside printable ASCII as \xNN, for failure messages.
inline std::string printable(std::string_view text) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string result;
  for (auto ch : text) {
    auto c = static_cast<uint8_t>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      result += ch;
    } else {
      result += "\\x";
      result += digits[c >> 4];
      result += digits[c & 0x0f];
    }
  }
  return result;
}

/// A data message on topic "/t" in Broker's layout: `{..."@data-type":"<type>","data":<v>}`.
inline std::string message(std::string_view type, std::string_view data_json) {
  return R"({"type":"data-message","topic":"/t","@data-type":")" + std::string{type}
         + R"(","data":)" + std::string{data_json} + "}";
}

/// Decodes `text` through the single pass, which must take it and agree with the general
/// path; returns the value.
inline data fast_ok(std::string_view text, size_t max_depth = default_max_depth) {
  INFO("input: " << printable(text));
  REQUIRE(check_paths_agree(text, max_depth));
  std::string topic;
  data value;
  std::vector<data> stack;
  REQUIRE(detail::fast_data_message(text, topic, value, max_depth, stack));
  return value;
}

/// The single pass must leave `text` to the general path, which answers as always.
inline void falls_back(std::string_view text, size_t max_depth = default_max_depth) {
  INFO("input: " << printable(text));
  CHECK_FALSE(check_paths_agree(text, max_depth));
}

/// Inserts `space` after every ',' and ':' outside strings (Python's json.dumps style) or,
/// with `everywhere`, also before them and around every bracket.
inline std::string respace(std::string_view text, std::string_view space,
                           bool everywhere = false) {
  std::string result;
  auto in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = text[i];
    if (in_string) {
      result += c;
      if (c == '\\' && i + 1 < text.size())
        result += text[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    auto structural = c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']';
    if (everywhere && structural)
      result += space;
    result += c;
    if (c == '"')
      in_string = true;
    else if (c == ',' || c == ':' || (everywhere && structural))
      result += space;
  }
  return result;
}

/// Damages `text` once: a byte overwritten, one of `tokens` inserted, bytes erased, or a
/// stretch repeated, at a random place (`pick(n)` draws from [0, n)). For the tests that
/// the decoder never crashes and that its two paths agree on damaged input.
template <class Pick, size_t N>
void mutate_once(std::string& text, Pick& pick, const std::string_view (&tokens)[N]) {
  auto pos = pick(text.size() + 1);
  switch (pick(4)) {
    case 0:
      if (pos < text.size())
        text[pos] = static_cast<char>(pick(256));
      break;
    case 1:
      text.insert(pos, tokens[pick(N)]);
      break;
    case 2:
      text.erase(pos, 1 + pick(8));
      break;
    default:
      if (pos < text.size())
        text.insert(pos, text.substr(pos, pick(16)));
  }
}

} // namespace broker::internal::json::test
