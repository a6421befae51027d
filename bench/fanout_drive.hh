#pragma once

// fanout-drive: a fan-out load driver that is cheap enough per delivery not to be the
// ceiling of what it measures (bench/README.md, "Fan-out cost"). The older driver
// (fanout_client.cc) runs every subscriber on one Asio thread and tops out near 2-3 M
// deliveries/s on the development machine, below what the servers can do.
//
// Processes: the parent holds the publisher connection and runs the phases; --procs
// children each own a slice of the N subscriber connections. Each process is one thread
// with one epoll loop (level-triggered, non-blocking sockets); a readable socket is read
// once into its own buffer and parsed in place (fanout_wire.hh); no allocation per message.
//
// Coordination (all set up before fork): a shared anonymous mapping (shared_block) holds
// the current checkpoint, each child's progress and, at the end, its counts and latency
// histograms; eventfds carry the wake-ups: one per child (parent -> child: the checkpoint
// moved, or stop) and one shared (children -> parent: a child reached the checkpoint, or
// finished). Flow control is the old driver's: at most `window` messages beyond the
// slowest subscriber, checked every window/2 messages.
//
// Phases: connect; latency (a fixed rate, every delivery timed); throughput (as fast as
// flow control allows, for `seconds`; every delivery's sequence number checked, one in 8
// timed: load_p50/p99); drain; RESULT line. While the throughput phase
// runs, the parent reads the CPU time of the server (--server-pid), of itself and of the
// children from /proc (schedstat: nanoseconds), so the RESULT line shows both sides.
// With N = 0 (ingest) the publisher writes as fast as the server reads, then waits until
// the server's CPU goes quiet, and reports the server's CPU per message. With --idle S it
// only connects the N subscribers, holds them S seconds and reports the server's RSS.

#include "fanout_stats.hh"
#include "fanout_wire.hh"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fanout {

/// Command-line settings of one run.
struct drive_options {
  protocol proto = protocol::ws;
  std::string system = "broker"; ///< broker, redis, nats (RESULT line)
  std::string mode = "ws";       ///< ws, channel, pattern, wildcard, exact
  bool variant_b = false;        ///< redis pattern / nats exact
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  size_t subscribers = 10;
  size_t procs = 1;
  double seconds = 2;
  double latency_seconds = 1;
  double latency_rate = 0; ///< 0: default_latency_rate(N)
  size_t window = 0;       ///< 0: default_window(N)
  size_t burst = 32;
  size_t connect_parallel = 64;
  double timeout = 120;
  int server_pid = 0;
  double idle = 0;
};

/// Per-child results and progress in the shared mapping.
struct child_slot {
  std::atomic<uint64_t> ready{0};   ///< Subscribers of this child that are ready.
  std::atomic<uint64_t> reached{0}; ///< Highest checkpoint all of them have reached.
  std::atomic<int> failed{0};
  std::atomic<int> done{0};         ///< Results below are written.
  uint64_t delivered = 0;           ///< Throughput-phase deliveries.
  uint64_t lost = 0;
  uint64_t last_delivery_ns = 0;
  uint64_t latency_max = 0;
  uint64_t loaded_max = 0;
  uint32_t latency_used = 0;
  uint32_t loaded_used = 0;
  char error[256] = {};
  std::pair<uint64_t, uint64_t> latency[histogram::buckets];
  std::pair<uint64_t, uint64_t> loaded[histogram::buckets];
};

struct shared_block {
  std::atomic<uint64_t> checkpoint{0};
  std::atomic<int> stop{0};
};

/// CPU time of every thread of `pid` in nanoseconds (/proc/<pid>/task/*/schedstat); -1 if
/// the process is gone.
int64_t process_cpu_ns(int pid);

/// VmRSS or VmHWM ("VmRSS", "VmHWM") of `pid` in KiB; 0 if unknown.
uint64_t process_memory_kib(int pid, const char* key);

/// Runs one child: connects subscribers [first, first + count), counts deliveries until
/// told to stop, writes the results into `slot`. Never returns (_exit).
[[noreturn]] void run_child(const drive_options& o, size_t first, size_t count,
                            shared_block& shared, child_slot& slot, int wake_fd,
                            int notify_parent_fd);

/// Runs the parent (publisher, phases); returns the exit code.
int run_parent(const drive_options& o);

} // namespace fanout
