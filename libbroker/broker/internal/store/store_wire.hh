#pragma once

// store_wire: Zeek Broker's data-store commands, the payload of peering command frames
// (type 2), as values and bytes. doc/protocol/stores.md is the byte-level reference;
// store_wire.test.cc holds its vectors.
//
// A command is `seq u64 · sender entity · receiver entity · kind u8 · fields`, integers
// big-endian, an entity being a 16-byte endpoint id and a u64 object id, a `data` field one
// value in the binary encoding (doc/protocol/binary.md), an optional a flag byte (0/1) and the
// value. Fourteen kinds, numbered as Broker numbers them:
//
//   actions (master <-> clones, sequenced by a channel): put, put_unique, put_unique_result,
//     erase, expire, add, subtract, clear
//   producer control: attach_writer, keepalive, ack_clone (carries the snapshot),
//     retransmit_failed
//   consumer control: cumulative_ack, nack
//
// Stateless free functions; any thread. decode() is total: every byte string yields a
// command or an error naming the problem and its offset, with no allocation beyond what the
// bytes present justify and bounded nesting (max_depth).

#include "broker/data.hh"
#include "broker/endpoint_id.hh"
#include "broker/error.hh"
#include "broker/internal/codec/bin.hh"
#include "broker/time.hh"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace broker::internal::store_wire {

/// Names one store actor in the network: the hosting endpoint and an object id that the
/// endpoint chooses (Broker: the actor id; ours: a random id per store incarnation).
struct entity_id {
  endpoint_id endpoint;
  uint64_t object = 0;

  /// Broker's nil: no endpoint (a broadcast's receiver, an unknown publisher).
  bool is_nil() const noexcept { return endpoint.is_nil(); }

  friend bool operator==(const entity_id& x, const entity_id& y) noexcept {
    return x.endpoint == y.endpoint && x.object == y.object;
  }
  friend bool operator!=(const entity_id& x, const entity_id& y) noexcept { return !(x == y); }
  friend bool operator<(const entity_id& x, const entity_id& y) noexcept {
    return x.endpoint < y.endpoint || (x.endpoint == y.endpoint && x.object < y.object);
  }
};

/// "<endpoint id>:<object>", or "nil".
std::string to_string(const entity_id& x);

/// A 64-bit digest of an entity (FNV-1a over its 24 bytes), e.g. a channel epoch.
uint64_t digest(const entity_id& x) noexcept;

/// A master's full state as it travels in ack_clone: key-value pairs, keys distinct.
using snapshot = std::vector<std::pair<data, data>>;

// -- the fourteen kinds, in wire order ---------------------------------------------------

struct put {
  data key;
  data value;
  std::optional<timespan> expiry; ///< Relative to the moment the master applies it.
  entity_id publisher;
};

struct put_unique {
  data key;
  data value;
  std::optional<timespan> expiry;
  entity_id who;       ///< Whom the result concerns (with req_id).
  uint64_t req_id = 0;
  entity_id publisher;
};

struct put_unique_result {
  bool inserted = false;
  entity_id who;
  uint64_t req_id = 0;
  entity_id publisher;
};

struct erase {
  data key;
  entity_id publisher;
};

struct expire {
  data key;
  entity_id publisher;
};

struct add {
  data key;
  data value;
  data::type init_type = data::type::none; ///< The type a missing key starts as.
  std::optional<timespan> expiry;
  entity_id publisher;
};

struct subtract {
  data key;
  data value;
  std::optional<timespan> expiry;
  entity_id publisher;
};

struct clear {
  entity_id publisher;
};

/// A clone's writer opens its channel to the master: the master expects offset + 1 next.
struct attach_writer {
  uint64_t offset = 0;
  uint16_t heartbeat_interval = 0; ///< In the sender's ticks.
};

/// A producer is alive; `seq` is the last sequence number it produced.
struct keepalive {
  uint64_t seq = 0;
};

/// The consumer has everything up to and including `seq`.
struct cumulative_ack {
  uint64_t seq = 0;
};

/// Please resend these; {0} asks for a (new) handshake.
struct nack {
  std::vector<uint64_t> seqs;
};

/// The master's answer to a clone's nack{0}: apply `state`, then expect offset + 1.
struct ack_clone {
  uint64_t offset = 0;
  uint16_t heartbeat_interval = 0; ///< In the sender's ticks.
  /// Shared: a master resends the same snapshot while a clone has not confirmed it.
  std::shared_ptr<const snapshot> state;
};

/// The producer no longer holds event `seq`.
struct retransmit_failed {
  uint64_t seq = 0;
};

/// Any command's fields; the index is the wire's kind byte.
using content = std::variant<put, put_unique, put_unique_result, erase, expire, add, subtract,
                             clear, attach_writer, keepalive, cumulative_ack, nack, ack_clone,
                             retransmit_failed>;

/// Number of kinds (valid kind bytes are 0 .. num_kinds - 1).
inline constexpr uint8_t num_kinds = std::variant_size_v<content>;

/// How Broker sorts the kinds: who sends them, and whether a channel sequences them.
enum class tag : uint8_t { action, producer_control, consumer_control };

tag tag_of(const content& x) noexcept;

/// "put", "ack_clone", ...
const char* kind_name(const content& x) noexcept;

/// One command message.
struct command {
  /// An action's sequence number on its channel (0 for control messages, except that
  /// ack_clone repeats its offset here, as Broker does).
  uint64_t seq = 0;
  entity_id sender;
  /// Nil for broadcasts; otherwise the one store actor meant (the others ignore it).
  entity_id receiver;
  store_wire::content content;
};

/// True if both commands hold equal fields (snapshots compared by contents).
bool same(const command& x, const command& y);

/// Appends the encoding of `x` to `out`. Fails (with `out` holding a partial encoding) only
/// if a value cannot be encoded (bin::encode's limits).
error encode(const command& x, std::string& out);

/// The encoding of `x`; see above.
expected<std::string> encode(const command& x);

/// Decodes one command that fills `bytes` completely. Errors are ec::invalid_message with a
/// text such as "truncated sender entity at offset 8", "unknown kind 14 at offset 56",
/// "duplicate snapshot key at offset 90" or "3 trailing bytes at offset 71".
expected<command> decode(std::string_view bytes, size_t max_depth = bin::default_max_depth);

/// For logs and test failures, e.g. "put(seq=2, sender=..., receiver=nil, key=...)".
std::string to_string(const command& x);

} // namespace broker::internal::store_wire
