#pragma once

// topic_index: the central prefix index, mapping subscription prefixes to the targets
// (handlers) that subscribed them.
//
// Ownership and threads: the core actor owns the topic_index and is its only writer. Every
// thread that routes reads an index_snapshot: an immutable version that the core publishes
// after each batch of changes (read-copy-update, core/rcu.hh). A lookup takes no lock, and
// a change never waits for a lookup.
//
// Structure: a persistent byte radix trie. Each node holds the targets whose subscription
// ends exactly at that node, sorted by address. A lookup walks the topic once from the root
// and collects the targets of every node it passes, so it costs O(topic length + matches)
// whatever the number of subscriptions. When only one node on the way has targets (the
// usual case) the answer is that node's list itself; otherwise the sorted lists are merged,
// which also removes duplicates ("/a" and "/a/b" both subscribed by one target), into the
// caller's scratch buffer: no sort, no set, and no allocation once the buffer has grown.
//
// Versions: a snapshot shares every node it did not change with its predecessor. The writer
// changes nodes in place only if they were created since the last snapshot; any other node
// on the path of a change is copied first (path copying). So a batch of changes costs its
// paths, not the size of the index, and a published snapshot never changes.
//
// Cache: a lookup_scratch (one per routing thread) memoizes results by exact topic in a few
// direct-mapped slots, keyed by the snapshot's generation (unique in the process), so a
// cached answer is never stale and invalidation costs nothing.
//
// Update flow (core thread):
//   1. subscribe(target, prefixes) / unsubscribe(target, prefixes): one pass over the
//      prefixes. unsubscribe prunes bottom-up: a node with no targets and no children is
//      deleted; a node with no targets and one child is merged with that child.
//   2. snapshot(): freezes the current nodes and returns the version to publish.

#include "broker/topic.hh"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal {

/// Base for everything the index can point to.
class index_target {
public:
  virtual ~index_target() = default;
};

/// A contiguous, read-only list of targets.
struct target_span {
  index_target* const* first = nullptr;
  size_t count = 0;

  index_target* const* begin() const noexcept { return first; }
  index_target* const* end() const noexcept { return first + count; }
  size_t size() const noexcept { return count; }
  bool empty() const noexcept { return count == 0; }
  index_target* operator[](size_t i) const noexcept { return first[i]; }
};

/// A routing thread's scratch memory and result cache for lookups (see the file comment).
class lookup_scratch {
public:
  /// @param cache_slots number of cached topics; 0 disables the cache.
  explicit lookup_scratch(size_t cache_slots = 64);

  void resize_cache(size_t cache_slots);

  /// Lookups answered from the cache (for tests).
  uint64_t cache_hits() const noexcept { return cache_hits_; }

private:
  friend class index_snapshot;

  struct slot {
    uint64_t generation = 0; // 0: empty (generations start at 1).
    std::string key;
    std::vector<index_target*> targets;
  };

  std::vector<index_target*> merged_;
  std::vector<index_target*> tmp_;
  std::vector<slot> cache_;
  uint64_t cache_hits_ = 0;
};

struct index_node;

/// An immutable version of the index (see the file comment).
class index_snapshot {
public:
  index_snapshot(std::shared_ptr<const index_node> root, uint64_t generation)
    : root_(std::move(root)), generation_(generation) {}

  /// All targets with a prefix of `topic`, each exactly once, sorted by address. Valid
  /// until the next lookup with the same scratch, and while this snapshot lives.
  target_span lookup(std::string_view topic, lookup_scratch& scratch) const;

  /// Unique in the process: no two snapshots share a generation.
  uint64_t generation() const noexcept { return generation_; }

private:
  target_span collect(std::string_view topic, lookup_scratch& scratch) const;

  std::shared_ptr<const index_node> root_;
  uint64_t generation_;
};

/// The writer's side (see the file comment).
class topic_index {
public:
  topic_index();
  ~topic_index();

  topic_index(const topic_index&) = delete;
  topic_index& operator=(const topic_index&) = delete;

  /// Adds `target` under every prefix in `prefixes` (duplicates are harmless).
  /// Returns the number of prefixes that were new for this target.
  size_t subscribe(index_target* target, const filter_type& prefixes);

  /// Removes `target` from every prefix in `prefixes`; prunes empty nodes.
  /// Returns the number of prefixes the target actually had.
  size_t unsubscribe(index_target* target, const filter_type& prefixes);

  /// Freezes the current state and returns it as a snapshot to publish.
  std::unique_ptr<const index_snapshot> snapshot();

  /// True if anything changed since the last snapshot().
  bool dirty() const noexcept { return dirty_; }

  /// Convenience for tests and benchmarks: a lookup in a fresh snapshot of the current
  /// state (the result stays valid until the next call to any member function).
  std::vector<index_target*> lookup(std::string_view topic);

  /// Total number of (prefix, target) subscriptions.
  size_t size() const noexcept { return subscriptions_; }

  /// Number of trie nodes including the root (for pruning tests).
  size_t node_count() const noexcept;

  /// The distinct prefixes that have at least one target, sorted (the node's filter).
  filter_type prefixes() const;

private:
  index_node* mutable_root();
  std::shared_ptr<index_node> own(const std::shared_ptr<index_node>& x);

  std::shared_ptr<index_node> root_;
  uint64_t edit_ = 1; // Nodes with this edit number were made since the last snapshot.
  bool dirty_ = true;
  size_t subscriptions_ = 0;
  lookup_scratch scratch_{0};
  std::unique_ptr<const index_snapshot> last_;
};

} // namespace broker::internal
