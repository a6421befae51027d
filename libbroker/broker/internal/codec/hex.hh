#pragma once

// Hexadecimal digits, shared by the text codecs (addresses, endpoint ids, JSON escapes,
// to_string).

namespace broker::internal {

/// Lowercase digits, indexed by nibble value.
inline constexpr char hex_digits[] = "0123456789abcdef";

/// The value of one hex digit (either case), or -1.
constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace broker::internal
