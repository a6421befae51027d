#include "broker/internal/codec/bin.hh"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

namespace broker::internal::bin {

namespace {

// -- constants (doc/protocol/binary.md) -------------------------------------------------------

constexpr uint32_t varbyte_payload_mask = 0x7f;
constexpr uint8_t varbyte_continuation = 0x80;
constexpr unsigned varbyte_group_bits = 7;
constexpr size_t varbyte_max_bytes = 5;
// In the 5th byte only the low 4 bits still fit into 32 bits (4 * 7 = 28 bits before it).
constexpr uint8_t varbyte_last_byte_max = 0x0f;
constexpr uint64_t max_length = std::numeric_limits<uint32_t>::max();

constexpr size_t fixed_body_size = 8; // count, integer, real, timestamp, timespan
constexpr size_t address_size = 16;
constexpr size_t subnet_size = address_size + 1;
constexpr size_t port_size = 3;
constexpr uint8_t max_port_protocol = static_cast<uint8_t>(port::protocol::icmp);
constexpr uint8_t max_tag = static_cast<uint8_t>(data::type::vector);
constexpr unsigned bits_per_byte = 8;

// Broker's real patterns (§4.3): CAF's pack754 swaps the infinities and uses all-ones for NaN.
constexpr uint64_t broker_pos_inf = 0xfff0000000000000;
constexpr uint64_t broker_neg_inf = 0x7ff0000000000000;
constexpr uint64_t broker_nan = 0xffffffffffffffff;
constexpr uint64_t ieee_exponent_mask = 0x7ff0000000000000;

// -- shared helpers ---------------------------------------------------------------------------

std::atomic<uint64_t> encode_counter{0};

template <class T>
const T& as(const data& x) noexcept {
  return *std::get_if<T>(&x.get_data());
}

// Broker orders NaN as equivalent to every real, so it fails to decode a set (or table keys)
// that holds NaN next to another real (§7). Under our order NaN is the largest real and all
// NaNs are equal, so it suffices to look at the element just before the NaN.
template <class Container>
bool nan_with_other_real(const Container& xs) {
  if (xs.size() < 2)
    return false;
  auto i = xs.find(data{std::numeric_limits<real>::quiet_NaN()});
  if (i == xs.end() || i == xs.begin())
    return false;
  const auto& prev = *std::prev(i);
  if constexpr (std::is_same_v<Container, table>)
    return prev.first.get_type() == data::type::real;
  else
    return prev.get_type() == data::type::real;
}

// Writes varbyte(n) to `out`, which must have room for 5 bytes; returns the bytes written.
size_t put_varbyte(uint32_t n, char* out) noexcept {
  size_t len = 0;
  while (n > varbyte_payload_mask) {
    out[len++] = static_cast<char>((n & varbyte_payload_mask) | varbyte_continuation);
    n >>= varbyte_group_bits;
  }
  out[len++] = static_cast<char>(n);
  return len;
}

// -- size computation -------------------------------------------------------------------------

size_t varbyte_size(uint64_t n) noexcept {
  size_t result = 1;
  while (n > varbyte_payload_mask) {
    n >>= varbyte_group_bits;
    ++result;
  }
  return result;
}

size_t encoded_size_impl(const data& x) noexcept {
  constexpr size_t tag_size = 1;
  switch (x.get_type()) {
    case data::type::none:
      return tag_size;
    case data::type::boolean:
      return tag_size + 1;
    case data::type::count:
    case data::type::integer:
    case data::type::real:
    case data::type::timestamp:
    case data::type::timespan:
      return tag_size + fixed_body_size;
    case data::type::string: {
      auto n = as<std::string>(x).size();
      return tag_size + varbyte_size(n) + n;
    }
    case data::type::address:
      return tag_size + address_size;
    case data::type::subnet:
      return tag_size + subnet_size;
    case data::type::port:
      return tag_size + port_size;
    case data::type::enum_value: {
      auto n = as<enum_value>(x).name.size();
      return tag_size + varbyte_size(n) + n;
    }
    case data::type::set: {
      const auto& xs = as<set>(x);
      size_t result = tag_size + varbyte_size(xs.size());
      for (const auto& elem : xs)
        result += encoded_size_impl(elem);
      return result;
    }
    case data::type::table: {
      const auto& xs = as<table>(x);
      size_t result = tag_size + varbyte_size(xs.size());
      for (const auto& [key, value] : xs)
        result += encoded_size_impl(key) + encoded_size_impl(value);
      return result;
    }
    case data::type::vector: {
      const auto& xs = as<vector>(x);
      size_t result = tag_size + varbyte_size(xs.size());
      for (const auto& elem : xs)
        result += encoded_size_impl(elem);
      return result;
    }
  }
  return tag_size;
}

// -- encoder ----------------------------------------------------------------------------------

uint64_t real_to_bits(real x) noexcept {
  if (std::isnan(x))
    return broker_nan;
  if (std::isinf(x))
    return x > 0 ? broker_pos_inf : broker_neg_inf;
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

real bits_to_real(uint64_t bits) noexcept {
  if (bits == broker_pos_inf)
    return std::numeric_limits<real>::infinity();
  if (bits == broker_neg_inf)
    return -std::numeric_limits<real>::infinity();
  if ((bits & ieee_exponent_mask) == ieee_exponent_mask)
    return std::numeric_limits<real>::quiet_NaN(); // Broker's NaN or a foreign one
  real result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

// Writes into a buffer that encode_impl() sized exactly with encoded_size_impl(), so every
// write is a plain store without capacity checks. Like the decoder, it records the first error
// and unwinds with bools to keep error objects off the happy path.
class encoder {
public:
  explicit encoder(char* pos) noexcept : pos_(pos) {}

  bool value(const data& x);

  char* pos() const noexcept { return pos_; }

  error take_error() { return std::move(err_); }

private:
  void byte(uint8_t x) noexcept { *pos_++ = static_cast<char>(x); }

  template <class T>
  void big_endian(T x) noexcept {
    static_assert(std::is_unsigned_v<T>);
    for (size_t i = 0; i < sizeof(T); ++i)
      byte(static_cast<uint8_t>(x >> (bits_per_byte * (sizeof(T) - 1 - i))));
  }

  void raw(const void* src, size_t n) noexcept {
    std::memcpy(pos_, src, n);
    pos_ += n;
  }

  bool length(std::string_view what, size_t n) {
    if (n > max_length) {
      err_ = error{ec::serialization_failed, std::string{what} + " of " + std::to_string(n)
                                               + " exceeds the 32-bit length limit"};
      return false;
    }
    pos_ += put_varbyte(static_cast<uint32_t>(n), pos_);
    return true;
  }

  bool bytes(std::string_view what, const std::string& str) {
    if (!length(what, str.size()))
      return false;
    raw(str.data(), str.size());
    return true;
  }

  template <class Container>
  bool sorted(std::string_view what, const Container& xs);

  char* pos_;
  error err_;
};

template <class Container>
bool encoder::sorted(std::string_view what, const Container& xs) {
  if (nan_with_other_real(xs)) {
    err_ = error{ec::serialization_failed,
                 std::string{what} + " holds NaN together with another real"};
    return false;
  }
  if (!length(what, xs.size()))
    return false;
  for (const auto& elem : xs) {
    if constexpr (std::is_same_v<Container, table>) {
      if (!value(elem.first) || !value(elem.second))
        return false;
    } else {
      if (!value(elem))
        return false;
    }
  }
  return true;
}

bool encoder::value(const data& x) {
  auto type = x.get_type();
  byte(static_cast<uint8_t>(type));
  switch (type) {
    case data::type::none:
      return true;
    case data::type::boolean:
      byte(as<boolean>(x) ? 1 : 0);
      return true;
    case data::type::count:
      big_endian(as<count>(x));
      return true;
    case data::type::integer:
      big_endian(static_cast<uint64_t>(as<integer>(x)));
      return true;
    case data::type::real:
      big_endian(real_to_bits(as<real>(x)));
      return true;
    case data::type::string:
      return bytes("string", as<std::string>(x));
    case data::type::address:
      raw(as<address>(x).bytes().data(), address_size);
      return true;
    case data::type::subnet: {
      const auto& sn = as<subnet>(x);
      raw(sn.network().bytes().data(), address_size);
      byte(sn.raw_length());
      return true;
    }
    case data::type::port: {
      auto p = as<port>(x);
      big_endian(p.number());
      byte(static_cast<uint8_t>(p.type()));
      return true;
    }
    case data::type::timestamp:
      big_endian(static_cast<uint64_t>(as<timestamp>(x).time_since_epoch().count()));
      return true;
    case data::type::timespan:
      big_endian(static_cast<uint64_t>(as<timespan>(x).count()));
      return true;
    case data::type::enum_value:
      return bytes("enum value", as<enum_value>(x).name);
    case data::type::set:
      return sorted("set", as<set>(x));
    case data::type::table:
      return sorted("table", as<table>(x));
    case data::type::vector: {
      const auto& xs = as<vector>(x);
      if (!length("vector", xs.size()))
        return false;
      for (const auto& elem : xs)
        if (!value(elem))
          return false;
      return true;
    }
  }
  return true;
}

error encode_impl(const data& x, std::string& out) {
  auto old_size = out.size();
  auto needed = old_size + encoded_size_impl(x);
  // Grow geometrically so that appending many values to one buffer stays linear.
  if (needed > out.capacity())
    out.reserve(std::max(needed, 2 * out.capacity()));
  out.resize(needed);
  encoder enc{out.data() + old_size};
  if (!enc.value(x)) {
    out.resize(static_cast<size_t>(enc.pos() - out.data()));
    return enc.take_error();
  }
  assert(enc.pos() == out.data() + out.size());
  return {};
}

// -- decoder ----------------------------------------------------------------------------------

enum class varbyte_status { ok, truncated, too_long, too_large };

varbyte_status read_varbyte_impl(std::string_view in, size_t& pos, uint32_t& result) noexcept {
  uint32_t value = 0;
  size_t i = pos;
  for (size_t n = 0; n < varbyte_max_bytes; ++n) {
    if (i >= in.size())
      return varbyte_status::truncated;
    auto byte = static_cast<uint8_t>(in[i++]);
    auto payload = static_cast<uint32_t>(byte & varbyte_payload_mask);
    if (n == varbyte_max_bytes - 1) {
      if (byte & varbyte_continuation)
        return varbyte_status::too_long;
      if (payload > varbyte_last_byte_max)
        return varbyte_status::too_large;
    }
    value |= payload << (varbyte_group_bits * n);
    if ((byte & varbyte_continuation) == 0) {
      pos = i;
      result = value;
      return varbyte_status::ok;
    }
  }
  return varbyte_status::too_long; // unreachable: the 5th byte returns above
}

// One decoding run. Errors are recorded once in `err_` and every level returns false, so the
// happy path carries no error objects around.
class decoder {
public:
  decoder(std::string_view in, size_t pos, size_t max_depth) noexcept
    : in_(in), pos_(pos), max_depth_(max_depth) {}

  bool value(data& out, size_t depth);

  /// Like value() without building the value, except sets and tables (see validate()).
  bool skip(size_t depth);

  size_t pos() const noexcept { return pos_; }

  error take_error() { return std::move(err_); }

private:
  size_t remaining() const noexcept { return in_.size() - pos_; }

  bool fail(std::string message, size_t offset) {
    err_ = error{ec::deserialization_failed,
                 std::move(message) + " at offset " + std::to_string(offset)};
    return false;
  }

  bool need(size_t n, data::type type) {
    if (remaining() < n)
      return fail("truncated " + std::string{to_string(type)}, pos_);
    return true;
  }

  uint64_t read_u64() noexcept {
    uint64_t result = 0;
    for (size_t i = 0; i < fixed_body_size; ++i)
      result = (result << bits_per_byte) | static_cast<uint8_t>(in_[pos_++]);
    return result;
  }

  bool length(std::string_view what, std::string_view field, uint32_t& result);
  bool bytes(data::type type, std::string& out);
  bool address_body(address& out);
  bool enter(size_t depth, uint32_t& count, std::string_view what);
  bool set_body(data& out, size_t depth);
  bool table_body(data& out, size_t depth);
  bool vector_body(data& out, size_t depth);

  std::string_view in_;
  size_t pos_;
  size_t max_depth_;
  error err_;
};

// `what` and `field` name the length in error messages ("string" "length", "set" "count");
// they stay views so that the happy path builds no strings.
bool decoder::length(std::string_view what, std::string_view field, uint32_t& result) {
  auto start = pos_;
  auto status = read_varbyte_impl(in_, pos_, result);
  if (status == varbyte_status::ok)
    return true;
  auto name = std::string{what} + ' ' + std::string{field};
  switch (status) {
    case varbyte_status::truncated:
      return fail("truncated " + name, start);
    case varbyte_status::too_long:
      return fail(name + " varbyte longer than 5 bytes", start);
    default:
      return fail(name + " varbyte exceeds 2^32-1", start);
  }
}

bool decoder::bytes(data::type type, std::string& out) {
  uint32_t len = 0;
  if (!length(to_string(type), "length", len))
    return false;
  if (len > remaining())
    return fail("truncated " + std::string{to_string(type)} + " (length " + std::to_string(len)
                  + ", " + std::to_string(remaining()) + " bytes left)",
                pos_);
  out.assign(in_.data() + pos_, len);
  pos_ += len;
  return true;
}

bool decoder::address_body(address& out) {
  std::memcpy(out.bytes().data(), in_.data() + pos_, address_size);
  pos_ += address_size;
  return true;
}

// Reads a container's count after checking the depth limit; rejects counts that the
// remaining bytes cannot hold (each element needs at least its tag byte) before anything
// gets reserved.
bool decoder::enter(size_t depth, uint32_t& count, std::string_view what) {
  if (depth > max_depth_)
    return fail("nesting deeper than " + std::to_string(max_depth_), pos_ - 1);
  if (!length(what, "count", count))
    return false;
  if (count > remaining())
    return fail(std::string{what} + " count " + std::to_string(count) + " exceeds the "
                  + std::to_string(remaining()) + " bytes left",
                pos_);
  return true;
}

bool decoder::set_body(data& out, size_t depth) {
  uint32_t count = 0;
  if (!enter(depth, count, "set"))
    return false;
  auto& xs = out.get_data().emplace<set>();
  for (uint32_t i = 0; i < count; ++i) {
    auto start = pos_;
    data elem;
    if (!value(elem, depth))
      return false;
    // The hint makes sorted input (what Broker usually sends) insert in amortized O(1).
    auto before = xs.size();
    xs.emplace_hint(xs.end(), std::move(elem));
    if (xs.size() == before)
      return fail("duplicate set element", start);
  }
  if (nan_with_other_real(xs))
    return fail("set holds NaN together with another real", pos_);
  return true;
}

bool decoder::table_body(data& out, size_t depth) {
  uint32_t count = 0;
  if (!enter(depth, count, "table"))
    return false;
  auto& xs = out.get_data().emplace<table>();
  for (uint32_t i = 0; i < count; ++i) {
    auto start = pos_;
    data key;
    data val;
    if (!value(key, depth) || !value(val, depth))
      return false;
    auto before = xs.size();
    xs.emplace_hint(xs.end(), std::move(key), std::move(val));
    if (xs.size() == before)
      return fail("duplicate table key", start);
  }
  if (nan_with_other_real(xs))
    return fail("table holds NaN together with another real key", pos_);
  return true;
}

bool decoder::vector_body(data& out, size_t depth) {
  uint32_t count = 0;
  if (!enter(depth, count, "vector"))
    return false;
  auto& xs = out.get_data().emplace<vector>();
  xs.resize(count);
  for (auto& elem : xs)
    if (!value(elem, depth))
      return false;
  return true;
}

// `depth` counts the containers enclosing `out`; a container's children are at depth + 1.
bool decoder::value(data& out, size_t depth) {
  if (remaining() == 0)
    return fail("truncated value", pos_);
  auto tag_offset = pos_;
  auto tag = static_cast<uint8_t>(in_[pos_++]);
  if (tag > max_tag)
    return fail("unknown type tag " + std::to_string(tag), tag_offset);
  auto type = static_cast<data::type>(tag);
  auto& v = out.get_data();
  switch (type) {
    case data::type::none:
      v.emplace<none>();
      return true;
    case data::type::boolean:
      if (!need(1, type))
        return false;
      v.emplace<boolean>(in_[pos_++] != 0);
      return true;
    case data::type::count:
      if (!need(fixed_body_size, type))
        return false;
      v.emplace<count>(read_u64());
      return true;
    case data::type::integer:
      if (!need(fixed_body_size, type))
        return false;
      v.emplace<integer>(static_cast<integer>(read_u64()));
      return true;
    case data::type::real:
      if (!need(fixed_body_size, type))
        return false;
      v.emplace<real>(bits_to_real(read_u64()));
      return true;
    case data::type::string:
      return bytes(type, v.emplace<std::string>());
    case data::type::address:
      if (!need(address_size, type))
        return false;
      return address_body(v.emplace<address>());
    case data::type::subnet: {
      if (!need(subnet_size, type))
        return false;
      address network;
      address_body(network);
      auto raw_len = static_cast<uint8_t>(in_[pos_]);
      auto sn = subnet::from_raw(network, raw_len);
      if (!sn)
        return fail("invalid subnet prefix length " + std::to_string(raw_len), pos_);
      ++pos_;
      v.emplace<subnet>(*sn);
      return true;
    }
    case data::type::port: {
      if (!need(port_size, type))
        return false;
      auto hi = static_cast<uint8_t>(in_[pos_]);
      auto lo = static_cast<uint8_t>(in_[pos_ + 1]);
      auto proto = static_cast<uint8_t>(in_[pos_ + 2]);
      if (proto > max_port_protocol)
        return fail("invalid port protocol " + std::to_string(proto), pos_ + 2);
      pos_ += port_size;
      auto number = static_cast<uint16_t>((hi << bits_per_byte) | lo);
      v.emplace<port>(number, static_cast<port::protocol>(proto));
      return true;
    }
    case data::type::timestamp:
      if (!need(fixed_body_size, type))
        return false;
      v.emplace<timestamp>(timespan{static_cast<int64_t>(read_u64())});
      return true;
    case data::type::timespan:
      if (!need(fixed_body_size, type))
        return false;
      v.emplace<timespan>(static_cast<int64_t>(read_u64()));
      return true;
    case data::type::enum_value:
      return bytes(type, v.emplace<enum_value>().name);
    case data::type::set:
      return set_body(out, depth + 1);
    case data::type::table:
      return table_body(out, depth + 1);
    case data::type::vector:
      return vector_body(out, depth + 1);
  }
  return false;
}

// Mirrors value() case by case, so that validate() accepts exactly what decode() accepts.
bool decoder::skip(size_t depth) {
  if (remaining() == 0)
    return fail("truncated value", pos_);
  auto tag_offset = pos_;
  auto tag = static_cast<uint8_t>(in_[pos_]);
  if (tag > max_tag)
    return fail("unknown type tag " + std::to_string(tag), tag_offset);
  auto type = static_cast<data::type>(tag);
  switch (type) {
    case data::type::set:
    case data::type::table: {
      // Distinct elements can only be checked on built values.
      data tmp;
      return value(tmp, depth);
    }
    case data::type::vector: {
      ++pos_;
      uint32_t count = 0;
      if (!enter(depth + 1, count, "vector"))
        return false;
      for (uint32_t i = 0; i < count; ++i)
        if (!skip(depth + 1))
          return false;
      return true;
    }
    case data::type::string:
    case data::type::enum_value: {
      ++pos_;
      uint32_t len = 0;
      if (!length(to_string(type), "length", len))
        return false;
      if (len > remaining())
        return fail("truncated " + std::string{to_string(type)} + " (length "
                      + std::to_string(len) + ", " + std::to_string(remaining())
                      + " bytes left)",
                    pos_);
      pos_ += len;
      return true;
    }
    default: {
      // Fixed-size scalars: decode them (cheap, no allocation) to share the checks.
      data tmp;
      return value(tmp, depth);
    }
  }
}

} // namespace

error validate(std::string_view bytes, size_t max_depth) {
  if (bytes.empty())
    return error{ec::deserialization_failed, "empty payload"};
  decoder dec{bytes, 0, max_depth};
  if (!dec.skip(0))
    return dec.take_error();
  if (dec.pos() != bytes.size())
    return error{ec::deserialization_failed,
                 std::to_string(bytes.size() - dec.pos()) + " trailing bytes at offset "
                   + std::to_string(dec.pos())};
  return {};
}

void write_varbyte(uint32_t n, std::string& out) {
  char buf[varbyte_max_bytes];
  out.append(buf, put_varbyte(n, buf));
}

bool read_varbyte(std::string_view in, size_t& pos, uint32_t& result) noexcept {
  return read_varbyte_impl(in, pos, result) == varbyte_status::ok;
}

size_t encoded_size(const data& x) noexcept {
  return encoded_size_impl(x);
}

error encode(const data& x, std::string& out) {
  encode_counter.fetch_add(1, std::memory_order_relaxed);
  return encode_impl(x, out);
}

expected<std::string> encode(const data& x) {
  encode_counter.fetch_add(1, std::memory_order_relaxed);
  std::string out;
  if (auto err = encode_impl(x, out))
    return err;
  return out;
}

expected<data> decode(std::string_view bytes, size_t max_depth) {
  if (bytes.empty())
    return error{ec::deserialization_failed, "empty payload"};
  size_t pos = 0;
  auto result = decode_prefix(bytes, pos, max_depth);
  if (result && pos != bytes.size())
    return error{ec::deserialization_failed,
                 std::to_string(bytes.size() - pos) + " trailing bytes at offset "
                   + std::to_string(pos)};
  return result;
}

expected<data> decode_prefix(std::string_view bytes, size_t& pos, size_t max_depth) {
  if (pos > bytes.size())
    return error{ec::deserialization_failed, "start offset " + std::to_string(pos)
                                               + " lies past the end of the input"};
  decoder dec{bytes, pos, max_depth};
  data result;
  if (!dec.value(result, 0))
    return dec.take_error();
  pos = dec.pos();
  return result;
}

uint64_t encode_calls() noexcept {
  return encode_counter.load(std::memory_order_relaxed);
}

} // namespace broker::internal::bin
