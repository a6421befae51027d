#pragma once

// Findings in code whose owners fix it (store/, peering/, core/), reported with a reproducer
// in fuzz/findings/ and listed in doc/fuzzing.md. Each predicate recognises the inputs that
// trigger one open finding, so that the targets step around it and keep searching (and CI
// stays green) until it is fixed. BROKER_FUZZ_KNOWN_ISSUES=trip turns every predicate off:
// the reproducers then fail until the code is fixed. After the fix, delete the predicate
// and its call sites, and move the reproducer to the target's corpus.

#include "broker/data.hh"
#include "broker/internal/store/replication_channel.hh"

#include <cstdint>

namespace broker::fuzz::known_issues {

/// F1, store/replication_channel.cc consumer::tick(): a handshake's heartbeat_interval
/// (hostile) times the consumer's timeout_intervals overflows int64 nanoseconds, which is
/// undefined behaviour. True for a handshake where that product does not fit.
bool channel_interval_overflows(const internal::channel::message& msg,
                                uint32_t timeout_intervals);

/// F2, store/store_logic.cc master_logic::deadline() and changed(): a write's expiry
/// (hostile when it comes through a clone's write channel) is added to the clock without a
/// range check, and the sum overflows int64 nanoseconds (undefined behaviour). True for a
/// put, put_unique, add or subtract whose expiry exceeds half the int64 range (our clocks
/// stay below the other half).
bool write_expiry_overflows(const data& op);

/// True if a store command (store/store_logic.hh envelopes) carries a channel message that
/// trips any open store finding above, for consumers with up to `timeout_intervals`.
bool store_command_trips(const data& cmd, uint32_t timeout_intervals);

} // namespace broker::fuzz::known_issues
