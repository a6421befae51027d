#pragma once

// The benchmark's event shapes (README.md lists them in full):
//   0: a 64-byte string  "<send time, ns since the epoch> xxx...x"  (a raw payload of the
//      size Broker's and our other benchmarks use; not a Zeek message)
//   1: a Zeek event  [count 1, count 1, ["event_1", [integer 42, "test"]]]
//      (with --latency: a third element, Zeek's metadata [[count 1, <send time>]])
//   2: a Zeek log write  [count 1, count 3, [enum "Conn::LOG", enum "Log::WRITER_ASCII",
//      "conn", <conn.log record>]]  whose record starts with its timestamp
//   3: a Zeek event  [count 1, count 1, ["event_3", [<timestamp>, <table of 100 keys to
//      sets of 10 strings>]]]  (Broker's broker-benchmark type 3)
//
// Every event is a fresh value stamped with its send time, so each message costs what a real
// application's message costs (built, encoded and routed once), and the receiver can read
// the send time back with sent_time().
//
// Threads: an event_factory is immutable after construction; make() may run on any thread.

#include <broker/data.hh>
#include <broker/time.hh>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace broker_throughput {

/// Size of a type-0 event's string.
inline constexpr size_t raw_payload_size = 64;

/// Builds events of one type (see the file comment).
class event_factory {
public:
  /// Pre: type <= 3. With `with_metadata`, type 1 carries its send time as Zeek
  /// metadata (types 0, 2 and 3 always carry it: in the string's leading digits or in their
  /// first field).
  event_factory(uint64_t type, bool with_metadata);

  /// A fresh event stamped with `sent`.
  broker::data make(broker::timestamp sent) const;

private:
  uint64_t type_;
  bool with_metadata_;
  /// What does not change between events: the conn.log record (type 2) or the table
  /// (type 3); none for type 1.
  broker::data prototype_;
};

/// The send time an event_factory stamped into `event`, or nullopt for any other value.
std::optional<broker::timestamp> sent_time(const broker::data& event);

} // namespace broker_throughput
