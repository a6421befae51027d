#pragma once

// Z85 (ZeroMQ RFC 32), the text form of CURVE keys: 4 bytes become 5 printable characters
// from an 85-letter alphabet, so a 32-byte key is 40 characters (doc/protocol/zeromq.md §5.1).
// Pure functions, safe from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace broker::internal::zmtp {

/// The Z85 text of `bytes`; nullopt unless the size is a multiple of 4.
std::optional<std::string> z85_encode(std::string_view bytes);

/// The bytes of Z85 `text`; nullopt unless the size is a multiple of 5, every character is
/// in the alphabet and every 5-character group is below 2^32.
std::optional<std::string> z85_decode(std::string_view text);

} // namespace broker::internal::zmtp
