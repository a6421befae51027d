#pragma once

// Invariants of the two value codecs, shared by every target that decodes values (bin_data,
// json_v1, the peering targets). Each function aborts through FUZZ_CHECK when one breaks.

#include "broker/data.hh"
#include "broker/internal/codec/json.hh"

#include <cstddef>
#include <optional>
#include <string_view>

namespace broker::fuzz {

/// Decodes `bytes` as one binary value (a data-message payload) and checks:
/// - decode() and decode_prefix() agree (success, consumed bytes, value; pos untouched on
///   failure);
/// - a decoded value encodes, encoded_size() predicts the size, the encoding is no longer
///   than the input, and it decodes to an equal value that re-encodes byte for byte.
/// Returns the value, or nullopt if the bytes are no valid value.
std::optional<data> check_bin_decode(std::string_view bytes, size_t max_depth);

/// True if the JSON decoder may reject our own encoding of `x` with `status`: JSON keeps
/// timestamps to the millisecond and replaces invalid UTF-8, so distinct values may encode
/// alike (a duplicate set element or table key), and a timestamp within a millisecond of the
/// int64 minimum prints as a time before it (doc/protocol/websocket.md §6.7, documented in json.test.cc).
bool json_may_reject(const data& x, internal::json::decode_status status);

/// Checks that the JSON encoding of `x` decodes (but see json_may_reject()), and that after
/// this first round the text is a fixed point of decode and encode.
void check_json_encoding(const data& x);

/// Checks that `x` (from the JSON decoder) survives the binary codec: it encodes (or fails
/// with serialization_failed, e.g. NaN next to another real in a set) and decodes equal.
void check_bin_encoding(const data& x);

} // namespace broker::fuzz
