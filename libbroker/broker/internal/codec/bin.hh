#pragma once

// Binary codec for broker::data ("bin v1", doc/protocol/binary.md; section numbers in
// codec/bin.* are that page's).
//
// Stateless free functions; safe to call from any thread. The decoder is total: any byte
// string yields a value or an error, with bounded recursion (max_depth), no allocation larger
// than the input justifies (counts are checked against the bytes present) and no UB.

#include "broker/data.hh"
#include "broker/error.hh"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace broker::internal::bin {

/// Default nesting limit for containers (doc/protocol/binary.md §6).
inline constexpr size_t default_max_depth = 128;

/// Appends varbyte(n) (1-5 bytes, LEB128-style). Pre: n <= 2^32-1.
void write_varbyte(uint32_t n, std::string& out);

/// Reads a varbyte at `pos`, advancing `pos`. Accepts 1-5 bytes incl. non-minimal forms;
/// rejects a 6th continuation byte and values > 2^32-1. Returns false on error/truncation.
bool read_varbyte(std::string_view in, size_t& pos, uint32_t& result) noexcept;

/// Appends the encoding of `x` (tag + body). Sets and tables are written in ascending total
/// order. Fails (returns an error, `out` then holds a partial encoding) only if a string or
/// container is too large for a 32-bit length, or a container holds NaN together with other
/// reals (Broker could not decode it).
error encode(const data& x, std::string& out);

/// Convenience: the encoding of `x` as a fresh string.
expected<std::string> encode(const data& x);

/// The number of bytes encode() appends for `x` (lets framing code reserve exact sizes).
size_t encoded_size(const data& x) noexcept;

/// Decodes exactly one value that must fill `bytes` completely (a data-message payload).
/// `max_depth` bounds container nesting: a top-level vector is level 1, so the default
/// accepts 128 nested containers and rejects 129. Errors are ec::deserialization_failed with
/// a message naming the problem and its byte offset, e.g. "truncated count at offset 1".
expected<data> decode(std::string_view bytes, size_t max_depth = default_max_depth);

/// Decodes one value starting at `pos` and advances `pos` past it; trailing bytes allowed.
/// Used by the peering and store-command codecs, which embed values in larger frames.
/// On failure `pos` is left unchanged.
expected<data> decode_prefix(std::string_view bytes, size_t& pos,
                             size_t max_depth = default_max_depth);

/// Checks that `bytes` hold exactly one value that decode() accepts, with the same errors,
/// without building it where it does not have to: scalars, strings and vectors are only
/// scanned; sets and tables are decoded (their elements must be distinct). A received
/// message is checked once this way and decoded only when somebody reads its value.
error validate(std::string_view bytes, size_t max_depth = default_max_depth);

/// Counts the calls to encode() in this process (tests use it to prove "encode once").
uint64_t encode_calls() noexcept;

} // namespace broker::internal::bin
