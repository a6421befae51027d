#pragma once

// rcu: read-copy-update for the routing snapshot (doc/architecture.md, "Threads").
//
// One writer (a core actor) publishes immutable versions of a structure; any number of
// threads read the current version without a lock, and a version is freed only when no
// reader can still hold it. This is epoch-based reclamation:
//
//   Readers (any thread): a read_guard marks the thread as reading in the current global
//   epoch (one store to the thread's own slot), and clears the mark when it ends. A guard
//   costs two stores and one load; guards nest.
//
//   Writer (one thread per retire_list): publish() swaps the pointer, tags the old version
//   with the current epoch and then advances the epoch. A version tagged with epoch e may
//   be freed once every thread that is reading announced an epoch after e: those threads
//   started reading after the swap, so they cannot see the old version. collect() frees
//   what it can and says whether anything is left; the writer calls it again later (the
//   core does so after its next change, or on a short timer while something is left).
//
// All epoch and slot accesses are sequentially consistent: the proof that a reader which
// announced epoch e+1 sees the new pointer rests on one total order of the writer's swap,
// its epoch increment and its scan of the slots, and the reader's slot store and pointer
// load.
//
// Slots: each thread claims one of a fixed number of slots on its first read and returns it
// when it exits. Should all be taken, further threads count themselves in one shared
// counter instead; while that counter is non-zero nothing is freed (correct, just late).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace broker::internal::rcu {

/// Marks the calling thread as reading for its lifetime (see the file comment).
class read_guard {
public:
  read_guard() noexcept;
  ~read_guard();

  read_guard(const read_guard&) = delete;
  read_guard& operator=(const read_guard&) = delete;
};

/// The current global epoch (for tests).
uint64_t current_epoch() noexcept;

/// Versions retired by one writer, freed when no reader can hold them.
class retire_list {
public:
  retire_list() = default;
  ~retire_list();

  retire_list(const retire_list&) = delete;
  retire_list& operator=(const retire_list&) = delete;

  /// Hands over something readers may still use; `free` runs once they cannot. Advances
  /// the global epoch. Call after unpublishing it.
  void retire(std::function<void()> free);

  /// Frees what no reader can hold any more. Returns true if something is left.
  bool collect();

  /// Waits (yielding) until everything is freed. Only for shutdown: readers end quickly.
  void drain();

  bool empty() const noexcept { return items_.empty(); }

private:
  struct item {
    uint64_t epoch;
    std::function<void()> free;
  };
  std::vector<item> items_;
};

/// A pointer to the current version of a T, published by one writer and read under
/// read_guard by everybody else.
template <class T>
class cell {
public:
  cell() = default;
  ~cell() { delete ptr_.load(); }

  cell(const cell&) = delete;
  cell& operator=(const cell&) = delete;

  /// The current version, or nullptr. Pre: the caller holds a read_guard (or is the
  /// writer).
  const T* load() const noexcept { return ptr_.load(std::memory_order_seq_cst); }

  /// Publishes `next` (may be null) and retires the previous version into `garbage`.
  void publish(std::unique_ptr<const T> next, retire_list& garbage) {
    auto* old = ptr_.exchange(next.release(), std::memory_order_seq_cst);
    if (old != nullptr)
      garbage.retire([old] { delete old; });
  }

private:
  std::atomic<const T*> ptr_{nullptr};
};

} // namespace broker::internal::rcu
