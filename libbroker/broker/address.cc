#include "broker/address.hh"

#include "broker/internal/codec/hex.hh"

#include <cstddef>

namespace broker {

namespace {

using internal::hex_value;

// Layout of the 16 stored bytes (doc/protocol/binary.md §4.4).
constexpr size_t num_bytes = 16;
constexpr size_t num_groups = 8;       // 16-bit groups of the IPv6 text form
constexpr size_t v4_offset = 12;       // where the IPv4 octets start when v4-mapped
constexpr size_t v4_octets = 4;
constexpr size_t max_group_digits = 4; // hex digits per IPv6 group
constexpr size_t max_octet_digits = 3; // decimal digits per IPv4 octet
constexpr unsigned max_octet = 255;
constexpr uint8_t v4_mapped_marker = 0xff; // bytes 10 and 11 of a v4-mapped address
constexpr size_t bits_per_byte = 8;
constexpr size_t min_zero_run = 2; // RFC 5952: "::" never replaces a single group


constexpr bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// Parses exactly a dotted quad into `out[0..3]`. Like glibc's inet_pton (and so Broker), we
// reject leading zeros: "010" is octal in some parsers and decimal in others.
bool parse_v4(std::string_view text, uint8_t* out) noexcept {
  size_t pos = 0;
  for (size_t i = 0; i < v4_octets; ++i) {
    if (i > 0) {
      if (pos >= text.size() || text[pos] != '.')
        return false;
      ++pos;
    }
    size_t start = pos;
    unsigned value = 0;
    while (pos < text.size() && is_digit(text[pos]) && pos - start < max_octet_digits)
      value = value * 10 + static_cast<unsigned>(text[pos++] - '0');
    size_t len = pos - start;
    if (len == 0 || value > max_octet || (len > 1 && text[start] == '0'))
      return false;
    out[i] = static_cast<uint8_t>(value);
  }
  return pos == text.size();
}

// Parses the RFC 4291 text forms: eight groups, one "::" standing for one or more zero
// groups, and optionally a dotted quad in place of the last two groups.
bool parse_v6(std::string_view text, address::bytes_type& out) noexcept {
  uint16_t groups[num_groups] = {};
  size_t count = 0;
  size_t gap = num_groups + 1; // index where "::" sits; num_groups + 1 means none
  size_t pos = 0;
  if (text.substr(0, 2) == "::") {
    gap = 0;
    pos = 2;
  } else if (!text.empty() && text[0] == ':') {
    return false;
  }
  uint8_t v4[v4_octets];
  bool has_v4 = false;
  while (pos < text.size()) {
    size_t start = pos;
    unsigned value = 0;
    while (pos < text.size() && hex_value(text[pos]) >= 0 && pos - start <= max_group_digits)
      value = (value << 4) | static_cast<unsigned>(hex_value(text[pos++]));
    if (pos < text.size() && text[pos] == '.') {
      // A trailing dotted quad: it must end the text and fill two groups.
      if (count + 2 > num_groups || !parse_v4(text.substr(start), v4))
        return false;
      has_v4 = true;
      break;
    }
    size_t len = pos - start;
    if (len == 0 || len > max_group_digits || count == num_groups)
      return false;
    groups[count++] = static_cast<uint16_t>(value);
    if (pos == text.size())
      break;
    if (text[pos] != ':')
      return false;
    ++pos;
    if (pos < text.size() && text[pos] == ':') {
      if (gap <= num_groups)
        return false;
      gap = count;
      ++pos;
    } else if (pos == text.size()) {
      return false; // a single trailing colon
    }
  }
  size_t total = count + (has_v4 ? 2 : 0);
  bool has_gap = gap <= num_groups;
  if (has_gap ? total >= num_groups : total != num_groups)
    return false;
  // Spread the groups: those after the gap move to the end, the gap is zero-filled.
  size_t tail = has_gap ? count - gap : 0;
  size_t head = count - tail;
  size_t zeros = num_groups - total;
  out = {};
  for (size_t i = 0; i < count; ++i) {
    size_t index = i < head ? i : i + zeros;
    out[2 * index] = static_cast<uint8_t>(groups[i] >> bits_per_byte);
    out[2 * index + 1] = static_cast<uint8_t>(groups[i]);
  }
  if (has_v4)
    for (size_t i = 0; i < v4_octets; ++i)
      out[v4_offset + i] = v4[i];
  return true;
}

void append_decimal(unsigned value, std::string& out) {
  char buf[max_octet_digits];
  size_t n = 0;
  do {
    buf[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0)
    out += buf[--n];
}

void append_hex_group(unsigned value, std::string& out) {
  static constexpr char digits[] = "0123456789abcdef";
  bool started = false;
  for (int shift = 12; shift >= 0; shift -= 4) {
    unsigned nibble = (value >> shift) & 0xfu;
    if (nibble != 0 || started || shift == 0) {
      out += digits[nibble];
      started = true;
    }
  }
}

} // namespace

address address::v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) noexcept {
  bytes_type bytes{};
  bytes[v4_offset - 2] = v4_mapped_marker;
  bytes[v4_offset - 1] = v4_mapped_marker;
  bytes[v4_offset] = a;
  bytes[v4_offset + 1] = b;
  bytes[v4_offset + 2] = c;
  bytes[v4_offset + 3] = d;
  return address{bytes};
}

std::optional<address> address::parse(std::string_view text) {
  if (text.find(':') == std::string_view::npos) {
    uint8_t octets[v4_octets];
    if (!parse_v4(text, octets))
      return std::nullopt;
    return v4(octets[0], octets[1], octets[2], octets[3]);
  }
  bytes_type bytes;
  if (!parse_v6(text, bytes))
    return std::nullopt;
  return address{bytes};
}

bool address::is_v4() const noexcept {
  for (size_t i = 0; i < v4_offset - 2; ++i)
    if (bytes_[i] != 0)
      return false;
  return bytes_[v4_offset - 2] == v4_mapped_marker && bytes_[v4_offset - 1] == v4_mapped_marker;
}

void address::mask(uint8_t prefix_len) noexcept {
  size_t full = prefix_len / bits_per_byte;
  if (full >= num_bytes)
    return;
  size_t partial = prefix_len % bits_per_byte;
  bytes_[full] &= static_cast<uint8_t>(0xffu << (bits_per_byte - partial));
  for (size_t i = full + 1; i < num_bytes; ++i)
    bytes_[i] = 0;
}

std::string to_string(const address& x) {
  const auto& b = x.bytes();
  std::string out;
  if (x.is_v4()) {
    for (size_t i = 0; i < v4_octets; ++i) {
      if (i > 0)
        out += '.';
      append_decimal(b[v4_offset + i], out);
    }
    return out;
  }
  unsigned groups[num_groups];
  for (size_t i = 0; i < num_groups; ++i)
    groups[i] = (unsigned{b[2 * i]} << bits_per_byte) | b[2 * i + 1];
  // RFC 5952 §4.2: compress the longest run of zero groups, the first one on a tie.
  size_t best_start = num_groups;
  size_t best_len = 0;
  for (size_t i = 0; i < num_groups;) {
    if (groups[i] != 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < num_groups && groups[j] == 0)
      ++j;
    if (j - i > best_len) {
      best_start = i;
      best_len = j - i;
    }
    i = j;
  }
  if (best_len < min_zero_run)
    best_start = num_groups;
  for (size_t i = 0; i < num_groups; ++i) {
    if (i == best_start) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (i > 0 && i != best_start + best_len)
      out += ':';
    append_hex_group(groups[i], out);
  }
  return out;
}

} // namespace broker
