#include "codec_checks.hh"

#include "fuzz_common.hh"

#include "broker/internal/codec/bin.hh"
#include "broker/internal/codec/json.hh"

#include <algorithm>
#include <string>

namespace broker::fuzz {

namespace bin = internal::bin;
namespace json = internal::json;

namespace {

// The earliest timestamp whose JSON text (floored to the millisecond, doc/protocol/websocket.md §6.7) parses back:
// the int64 minimum rounded up to a whole millisecond. json.test.cc documents the gap.
constexpr int64_t earliest_printable_ns = -9'223'372'036'854'000'000;

bool has_unprintable_timestamp(const data& x) {
  if (auto* ts = get_if<timestamp>(x))
    return ts->time_since_epoch().count() < earliest_printable_ns;
  if (auto* xs = get_if<vector>(x))
    return std::any_of(xs->begin(), xs->end(), has_unprintable_timestamp);
  if (auto* xs = get_if<set>(x))
    return std::any_of(xs->begin(), xs->end(), has_unprintable_timestamp);
  if (auto* xs = get_if<table>(x))
    return std::any_of(xs->begin(), xs->end(), [](const auto& kv) {
      return has_unprintable_timestamp(kv.first) || has_unprintable_timestamp(kv.second);
    });
  return false;
}

} // namespace

bool json_may_reject(const data& x, json::decode_status status) {
  if (status == json::decode_status::internal_error)
    return true;
  return status == json::decode_status::invalid_data && has_unprintable_timestamp(x);
}

std::optional<data> check_bin_decode(std::string_view bytes, size_t max_depth) {
  size_t pos = 0;
  auto prefix = bin::decode_prefix(bytes, pos, max_depth);
  auto whole = bin::decode(bytes, max_depth);
  if (!prefix) {
    FUZZ_CHECK(pos == 0);
    FUZZ_CHECK(!whole);
    FUZZ_CHECK(prefix.error_value() == ec::deserialization_failed);
    return std::nullopt;
  }
  FUZZ_CHECK(pos > 0 && pos <= bytes.size());
  FUZZ_CHECK(whole.has_value() == (pos == bytes.size()));
  if (!whole) {
    FUZZ_CHECK(whole.error_value() == ec::deserialization_failed);
    return std::nullopt;
  }
  const auto& x = *whole;
  FUZZ_CHECK(*prefix == x);
  auto encoded = bin::encode(x);
  FUZZ_CHECK_MSG(encoded, to_string(encoded.error_value()));
  FUZZ_CHECK(encoded->size() == bin::encoded_size(x));
  FUZZ_CHECK_MSG(encoded->size() <= bytes.size(), to_hex(*encoded));
  auto again = bin::decode(*encoded, max_depth);
  FUZZ_CHECK_MSG(again, to_string(again.error_value()) + " for " + to_hex(*encoded));
  FUZZ_CHECK_MSG(*again == x, to_string(*again) + " != " + to_string(x));
  auto reencoded = bin::encode(*again);
  FUZZ_CHECK(reencoded && *reencoded == *encoded);
  return x;
}

void check_json_encoding(const data& x) {
  // Round 1 normalises: invalid UTF-8 becomes U+FFFD (which may reorder a set or table),
  // timestamps lose their sub-millisecond digits. From then on the text must be stable.
  auto text = json::encode(x);
  data y;
  // Each binary container costs two JSON levels: allow what bin's own limit allows.
  auto res = json::decode(text, y, json::max_depth_limit);
  if (!res) {
    FUZZ_CHECK_MSG(json_may_reject(x, res.status), "our own JSON fails to decode: " + text);
    return;
  }
  auto normal = json::encode(y);
  data z;
  res = json::decode(normal, z, json::max_depth_limit);
  FUZZ_CHECK_MSG(res, "normalised JSON fails to decode: " + normal);
  auto again = json::encode(z);
  FUZZ_CHECK_MSG(again == normal, normal + " became " + again);
}

void check_bin_encoding(const data& x) {
  auto encoded = bin::encode(x);
  if (!encoded) {
    FUZZ_CHECK(encoded.error_value() == ec::serialization_failed);
    return;
  }
  FUZZ_CHECK(encoded->size() == bin::encoded_size(x));
  auto decoded = bin::decode(*encoded, json::max_depth_limit);
  FUZZ_CHECK_MSG(decoded, to_string(decoded.error_value()) + " for " + to_hex(*encoded));
  FUZZ_CHECK_MSG(*decoded == x, to_string(*decoded) + " != " + to_string(x));
}

} // namespace broker::fuzz
