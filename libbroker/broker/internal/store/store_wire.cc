#include "broker/internal/store/store_wire.hh"

#include <algorithm>
#include <sstream>
#include <type_traits>

namespace broker::internal::store_wire {

namespace {

constexpr size_t entity_size = 16 + sizeof(uint64_t);
constexpr size_t seq_size = sizeof(uint64_t);
constexpr uint64_t fnv_offset = 14695981039346656037ull;
constexpr uint64_t fnv_prime = 1099511628211ull;
constexpr unsigned bits_per_byte = 8;
constexpr uint8_t max_data_tag = static_cast<uint8_t>(data::type::vector);

/// Longest snapshot to_string() lists entry by entry.
constexpr size_t max_listed_entries = 4;

// -- encoding ---------------------------------------------------------------------------

class writer {
public:
  explicit writer(std::string& out) : out_(out) {}

  void u8(uint8_t x) { out_.push_back(static_cast<char>(x)); }

  void u16(uint16_t x) {
    u8(static_cast<uint8_t>(x >> bits_per_byte));
    u8(static_cast<uint8_t>(x));
  }

  void u64(uint64_t x) {
    for (int shift = 56; shift >= 0; shift -= bits_per_byte)
      u8(static_cast<uint8_t>(x >> shift));
  }

  void entity(const entity_id& x) {
    auto& bytes = x.endpoint.bytes();
    out_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    u64(x.object);
  }

  void expiry(const std::optional<timespan>& x) {
    u8(x ? 1 : 0);
    if (x)
      u64(static_cast<uint64_t>(x->count()));
  }

  bool value(const data& x) {
    if (err_)
      return false;
    err_ = bin::encode(x, out_);
    return !err_;
  }

  error take_error() { return std::move(err_); }

private:
  std::string& out_;
  error err_;
};

void write_fields(writer& w, const put& x) {
  w.value(x.key);
  w.value(x.value);
  w.expiry(x.expiry);
  w.entity(x.publisher);
}

void write_fields(writer& w, const put_unique& x) {
  w.value(x.key);
  w.value(x.value);
  w.expiry(x.expiry);
  w.entity(x.who);
  w.u64(x.req_id);
  w.entity(x.publisher);
}

void write_fields(writer& w, const put_unique_result& x) {
  w.u8(x.inserted ? 1 : 0);
  w.entity(x.who);
  w.u64(x.req_id);
  w.entity(x.publisher);
}

void write_fields(writer& w, const erase& x) {
  w.value(x.key);
  w.entity(x.publisher);
}

void write_fields(writer& w, const expire& x) {
  w.value(x.key);
  w.entity(x.publisher);
}

void write_fields(writer& w, const add& x) {
  w.value(x.key);
  w.value(x.value);
  w.u8(static_cast<uint8_t>(x.init_type));
  w.expiry(x.expiry);
  w.entity(x.publisher);
}

void write_fields(writer& w, const subtract& x) {
  w.value(x.key);
  w.value(x.value);
  w.expiry(x.expiry);
  w.entity(x.publisher);
}

void write_fields(writer& w, const clear& x) {
  w.entity(x.publisher);
}

void write_fields(writer& w, const attach_writer& x) {
  w.u64(x.offset);
  w.u16(x.heartbeat_interval);
}

void write_fields(writer& w, const keepalive& x) {
  w.u64(x.seq);
}

void write_fields(writer& w, const cumulative_ack& x) {
  w.u64(x.seq);
}

void write_fields(writer& w, const retransmit_failed& x) {
  w.u64(x.seq);
}

/// Writes a sequence's element count; Broker's varbyte holds at most 2^32-1.
void write_count(std::string& out, size_t n, error& err) {
  if (n > UINT32_MAX) {
    err = error{ec::invalid_message, "store command: more than 2^32-1 elements"};
    return;
  }
  bin::write_varbyte(static_cast<uint32_t>(n), out);
}

// -- decoding ---------------------------------------------------------------------------

class reader {
public:
  reader(std::string_view in, size_t max_depth) : in_(in), max_depth_(max_depth) {}

  size_t pos() const noexcept { return pos_; }
  size_t remaining() const noexcept { return in_.size() - pos_; }

  bool fail(std::string what, size_t at) {
    if (!err_)
      err_ = error{ec::invalid_message, "store command: " + std::move(what) + " at offset "
                                          + std::to_string(at)};
    return false;
  }

  bool need(size_t n, const char* what) {
    if (remaining() >= n)
      return true;
    return fail(std::string{"truncated "} + what, pos_);
  }

  bool u8(uint8_t& x, const char* what) {
    if (!need(1, what))
      return false;
    x = static_cast<uint8_t>(in_[pos_++]);
    return true;
  }

  bool u16(uint16_t& x, const char* what) {
    if (!need(sizeof(uint16_t), what))
      return false;
    x = static_cast<uint16_t>((byte(0) << bits_per_byte) | byte(1));
    pos_ += sizeof(uint16_t);
    return true;
  }

  bool u64(uint64_t& x, const char* what) {
    if (!need(sizeof(uint64_t), what))
      return false;
    x = 0;
    for (size_t i = 0; i < sizeof(uint64_t); ++i)
      x = (x << bits_per_byte) | byte(i);
    pos_ += sizeof(uint64_t);
    return true;
  }

  bool flag(bool& x, const char* what) {
    auto at = pos_;
    uint8_t raw = 0;
    if (!u8(raw, what))
      return false;
    if (raw > 1)
      return fail(std::string{what} + " is " + std::to_string(raw) + ", not 0 or 1", at);
    x = raw == 1;
    return true;
  }

  bool entity(entity_id& x, const char* what) {
    if (!need(entity_size, what))
      return false;
    endpoint_id::bytes_type bytes;
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = byte(i);
    pos_ += bytes.size();
    x.endpoint = endpoint_id{bytes};
    return u64(x.object, what);
  }

  bool expiry(std::optional<timespan>& x) {
    bool present = false;
    if (!flag(present, "expiry flag"))
      return false;
    if (!present) {
      x.reset();
      return true;
    }
    uint64_t raw = 0;
    if (!u64(raw, "expiry"))
      return false;
    x = timespan{static_cast<int64_t>(raw)};
    return true;
  }

  bool value(data& x, const char* what) {
    auto at = pos_;
    auto result = bin::decode_prefix(in_, pos_, max_depth_);
    if (!result)
      return fail(std::string{what} + ": " + result.error_value().message(), at);
    x = std::move(*result);
    return true;
  }

  /// A varbyte count of elements that each take at least `min_size` bytes.
  bool count(size_t& n, size_t min_size, const char* what) {
    auto at = pos_;
    uint32_t raw = 0;
    if (!bin::read_varbyte(in_, pos_, raw))
      return fail(std::string{"bad "} + what + " count", at);
    if (raw > remaining() / min_size)
      return fail(std::string{what} + " count " + std::to_string(raw) + " exceeds the "
                    + std::to_string(remaining()) + " bytes left",
                  at);
    n = raw;
    return true;
  }

  error take_error() { return std::move(err_); }

private:
  uint8_t byte(size_t i) const noexcept { return static_cast<uint8_t>(in_[pos_ + i]); }

  std::string_view in_;
  size_t pos_ = 0;
  size_t max_depth_;
  error err_;
};

bool read_fields(reader& r, put& x) {
  return r.value(x.key, "key") && r.value(x.value, "value") && r.expiry(x.expiry)
         && r.entity(x.publisher, "publisher");
}

bool read_fields(reader& r, put_unique& x) {
  return r.value(x.key, "key") && r.value(x.value, "value") && r.expiry(x.expiry)
         && r.entity(x.who, "who") && r.u64(x.req_id, "req_id")
         && r.entity(x.publisher, "publisher");
}

bool read_fields(reader& r, put_unique_result& x) {
  return r.flag(x.inserted, "inserted") && r.entity(x.who, "who") && r.u64(x.req_id, "req_id")
         && r.entity(x.publisher, "publisher");
}

bool read_fields(reader& r, erase& x) {
  return r.value(x.key, "key") && r.entity(x.publisher, "publisher");
}

bool read_fields(reader& r, expire& x) {
  return r.value(x.key, "key") && r.entity(x.publisher, "publisher");
}

bool read_fields(reader& r, add& x) {
  if (!r.value(x.key, "key") || !r.value(x.value, "value"))
    return false;
  auto at = r.pos();
  uint8_t init = 0;
  if (!r.u8(init, "init_type"))
    return false;
  if (init > max_data_tag)
    return r.fail("init_type " + std::to_string(init) + " is no data type", at);
  x.init_type = static_cast<data::type>(init);
  return r.expiry(x.expiry) && r.entity(x.publisher, "publisher");
}

bool read_fields(reader& r, subtract& x) {
  return r.value(x.key, "key") && r.value(x.value, "value") && r.expiry(x.expiry)
         && r.entity(x.publisher, "publisher");
}

bool read_fields(reader& r, clear& x) {
  return r.entity(x.publisher, "publisher");
}

bool read_fields(reader& r, attach_writer& x) {
  return r.u64(x.offset, "offset") && r.u16(x.heartbeat_interval, "heartbeat_interval");
}

bool read_fields(reader& r, keepalive& x) {
  return r.u64(x.seq, "seq");
}

bool read_fields(reader& r, cumulative_ack& x) {
  return r.u64(x.seq, "seq");
}

bool read_fields(reader& r, retransmit_failed& x) {
  return r.u64(x.seq, "seq");
}

bool read_fields(reader& r, nack& x) {
  size_t n = 0;
  if (!r.count(n, seq_size, "nack"))
    return false;
  x.seqs.resize(n);
  for (auto& seq : x.seqs)
    if (!r.u64(seq, "nack seq"))
      return false;
  return true;
}

bool read_fields(reader& r, ack_clone& x) {
  if (!r.u64(x.offset, "offset") || !r.u16(x.heartbeat_interval, "heartbeat_interval"))
    return false;
  size_t n = 0;
  // Every entry holds two values of at least one byte each.
  if (!r.count(n, 2, "snapshot"))
    return false;
  auto state = std::make_shared<snapshot>();
  state->reserve(n);
  std::vector<size_t> offsets;
  offsets.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    offsets.push_back(r.pos());
    data key;
    data value;
    if (!r.value(key, "snapshot key") || !r.value(value, "snapshot value"))
      return false;
    state->emplace_back(std::move(key), std::move(value));
  }
  // Broker keeps a snapshot in a hash map and rejects a repeated key; so do we.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return (*state)[a].first < (*state)[b].first; });
  for (size_t i = 1; i < n; ++i)
    if ((*state)[order[i - 1]].first == (*state)[order[i]].first)
      return r.fail("duplicate snapshot key", offsets[std::max(order[i - 1], order[i])]);
  x.state = std::move(state);
  return true;
}

/// Builds alternative `I` of `content` and reads its fields.
template <size_t I = 0>
bool read_content(reader& r, uint8_t kind, content& out) {
  if constexpr (I < std::variant_size_v<content>) {
    if (kind == I)
      return read_fields(r, out.emplace<I>());
    return read_content<I + 1>(r, kind, out);
  } else {
    return false;
  }
}

void describe_entity(std::ostream& out, const char* name, const entity_id& x) {
  out << ", " << name << '=' << to_string(x);
}

void describe_expiry(std::ostream& out, const std::optional<timespan>& x) {
  out << ", expiry=" << (x ? broker::to_string(*x) : std::string{"none"});
}

} // namespace

std::string to_string(const entity_id& x) {
  if (x.is_nil() && x.object == 0)
    return "nil";
  return broker::to_string(x.endpoint) + ':' + std::to_string(x.object);
}

uint64_t digest(const entity_id& x) noexcept {
  auto h = fnv_offset;
  for (auto b : x.endpoint.bytes())
    h = (h ^ b) * fnv_prime;
  for (int shift = 56; shift >= 0; shift -= bits_per_byte)
    h = (h ^ static_cast<uint8_t>(x.object >> shift)) * fnv_prime;
  return h;
}

tag tag_of(const content& x) noexcept {
  switch (x.index()) {
    case 8:  // attach_writer
    case 9:  // keepalive
    case 12: // ack_clone
    case 13: // retransmit_failed
      return tag::producer_control;
    case 10: // cumulative_ack
    case 11: // nack
      return tag::consumer_control;
    default:
      return tag::action;
  }
}

const char* kind_name(const content& x) noexcept {
  static constexpr const char* names[] = {
    "put",           "put_unique", "put_unique_result", "erase",          "expire",
    "add",           "subtract",   "clear",             "attach_writer",  "keepalive",
    "cumulative_ack", "nack",      "ack_clone",         "retransmit_failed",
  };
  static_assert(std::size(names) == num_kinds);
  return names[x.index()];
}

error encode(const command& x, std::string& out) {
  writer w{out};
  w.u64(x.seq);
  w.entity(x.sender);
  w.entity(x.receiver);
  w.u8(static_cast<uint8_t>(x.content.index()));
  error err;
  std::visit(
    [&](const auto& fields) {
      using type = std::decay_t<decltype(fields)>;
      if constexpr (std::is_same_v<type, nack>) {
        write_count(out, fields.seqs.size(), err);
        for (auto seq : fields.seqs)
          w.u64(seq);
      } else if constexpr (std::is_same_v<type, ack_clone>) {
        w.u64(fields.offset);
        w.u16(fields.heartbeat_interval);
        auto n = fields.state ? fields.state->size() : 0;
        write_count(out, n, err);
        if (fields.state)
          for (auto& [key, value] : *fields.state)
            if (!w.value(key) || !w.value(value))
              break;
      } else {
        write_fields(w, fields);
      }
    },
    x.content);
  if (err)
    return err;
  return w.take_error();
}

expected<std::string> encode(const command& x) {
  std::string out;
  if (auto err = encode(x, out))
    return err;
  return out;
}

expected<command> decode(std::string_view bytes, size_t max_depth) {
  reader r{bytes, max_depth};
  command result;
  if (!r.u64(result.seq, "seq") || !r.entity(result.sender, "sender entity")
      || !r.entity(result.receiver, "receiver entity"))
    return r.take_error();
  auto at = r.pos();
  uint8_t kind = 0;
  if (!r.u8(kind, "kind"))
    return r.take_error();
  if (kind >= num_kinds) {
    r.fail("unknown kind " + std::to_string(kind), at);
    return r.take_error();
  }
  if (!read_content(r, kind, result.content))
    return r.take_error();
  if (r.remaining() > 0) {
    r.fail(std::to_string(r.remaining()) + " trailing bytes", r.pos());
    return r.take_error();
  }
  return result;
}

bool same(const command& x, const command& y) {
  if (x.seq != y.seq || x.sender != y.sender || x.receiver != y.receiver
      || x.content.index() != y.content.index())
    return false;
  // Every kind compares field by field through its encoding: equal bytes, equal fields.
  auto a = encode(x);
  auto b = encode(y);
  return a && b && *a == *b;
}

std::string to_string(const command& x) {
  std::ostringstream out;
  out << kind_name(x.content) << "(seq=" << x.seq;
  describe_entity(out, "sender", x.sender);
  describe_entity(out, "receiver", x.receiver);
  std::visit(
    [&](const auto& f) {
      using type = std::decay_t<decltype(f)>;
      if constexpr (std::is_same_v<type, put> || std::is_same_v<type, subtract>) {
        out << ", key=" << f.key << ", value=" << f.value;
        describe_expiry(out, f.expiry);
        describe_entity(out, "publisher", f.publisher);
      } else if constexpr (std::is_same_v<type, add>) {
        out << ", key=" << f.key << ", value=" << f.value
            << ", init_type=" << broker::to_string(f.init_type);
        describe_expiry(out, f.expiry);
        describe_entity(out, "publisher", f.publisher);
      } else if constexpr (std::is_same_v<type, put_unique>) {
        out << ", key=" << f.key << ", value=" << f.value;
        describe_expiry(out, f.expiry);
        describe_entity(out, "who", f.who);
        out << ", req_id=" << f.req_id;
        describe_entity(out, "publisher", f.publisher);
      } else if constexpr (std::is_same_v<type, put_unique_result>) {
        out << ", inserted=" << (f.inserted ? "true" : "false");
        describe_entity(out, "who", f.who);
        out << ", req_id=" << f.req_id;
        describe_entity(out, "publisher", f.publisher);
      } else if constexpr (std::is_same_v<type, erase> || std::is_same_v<type, expire>) {
        out << ", key=" << f.key;
        describe_entity(out, "publisher", f.publisher);
      } else if constexpr (std::is_same_v<type, clear>) {
        describe_entity(out, "publisher", f.publisher);
      } else if constexpr (std::is_same_v<type, attach_writer>) {
        out << ", offset=" << f.offset << ", heartbeat_interval=" << f.heartbeat_interval;
      } else if constexpr (std::is_same_v<type, ack_clone>) {
        out << ", offset=" << f.offset << ", heartbeat_interval=" << f.heartbeat_interval
            << ", state=[";
        auto n = f.state ? f.state->size() : 0;
        for (size_t i = 0; i < n && i < max_listed_entries; ++i)
          out << (i > 0 ? ", " : "") << (*f.state)[i].first << " -> " << (*f.state)[i].second;
        if (n > max_listed_entries)
          out << ", ... (" << n << " entries)";
        out << ']';
      } else if constexpr (std::is_same_v<type, nack>) {
        out << ", seqs=[";
        for (size_t i = 0; i < f.seqs.size(); ++i)
          out << (i > 0 ? ", " : "") << f.seqs[i];
        out << ']';
      } else {
        out << ", seq=" << f.seq;
      }
    },
    x.content);
  out << ')';
  return out.str();
}

} // namespace broker::internal::store_wire
