#pragma once

// topic_index: the central prefix index, mapping subscription prefixes to the targets
// (handlers) that subscribed them.
//
// Ownership and threads: one instance lives inside the core actor; only the core actor
// thread reads or writes it. No locks.
//
// Structure: a byte radix trie. Each node holds the targets whose subscription ends exactly
// at that node. A lookup walks the topic once from the root and collects the targets of
// every node it passes, so it costs O(topic length + matches) whatever the number of
// subscriptions. A target subscribed to several matching prefixes ("/a" and "/a/b") is
// reported once: each target carries a visit mark compared against a per-lookup epoch, so
// deduplication needs no sort and no set.
//
// Cache: lookups are memoized by exact topic in a fixed array of slots chosen by hash
// (direct-mapped). A slot keeps its key and result buffers and overwrites them on a miss,
// so after warm-up no lookup allocates. Every change to the trie bumps a generation
// counter; a slot filled under an older generation is a miss, so a cached result is never
// stale and invalidation costs O(1).
//
// Update flow:
//   1. subscribe(target, prefixes) / unsubscribe(target, prefixes): one pass over the
//      prefixes, one generation bump for the whole batch.
//   2. unsubscribe prunes nodes bottom-up: a node with no targets and no children is
//      deleted; a node with no targets and one child is merged with that child.

#include "broker/topic.hh"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal {

/// Base for everything the index can point to. The index only touches `index_mark_`.
class index_target {
public:
  virtual ~index_target() = default;

private:
  friend class topic_index;
  uint64_t index_mark_ = 0;
};

/// Raw-prefix topic index with a bounded result cache (see the file comment).
class topic_index {
public:
  using result_type = std::vector<index_target*>;

  /// @param cache_capacity maximum number of cached topics; 0 disables the cache.
  explicit topic_index(size_t cache_capacity = 1024);
  ~topic_index();

  topic_index(const topic_index&) = delete;
  topic_index& operator=(const topic_index&) = delete;

  /// Adds `target` under every prefix in `prefixes` (duplicates are harmless).
  /// Returns the number of prefixes that were new for this target.
  size_t subscribe(index_target* target, const filter_type& prefixes);

  /// Removes `target` from every prefix in `prefixes`; prunes empty nodes.
  /// Returns the number of prefixes the target actually had.
  size_t unsubscribe(index_target* target, const filter_type& prefixes);

  /// All targets with a prefix of `topic`, each exactly once, in no particular order.
  /// The reference stays valid until the next call to any member function.
  const result_type& lookup(std::string_view topic);

  /// Total number of (prefix, target) subscriptions.
  size_t size() const noexcept { return subscriptions_; }

  /// Number of trie nodes including the root (for pruning tests).
  size_t node_count() const noexcept;

  /// Bumped on every change; cached results carry the generation they were made in.
  uint64_t generation() const noexcept { return generation_; }

  /// Number of lookups answered from the cache (for tests and metrics).
  uint64_t cache_hits() const noexcept { return cache_hits_; }

  /// The distinct prefixes that have at least one target, sorted (the node's filter).
  filter_type prefixes() const;

private:
  struct node;

  struct cache_slot {
    uint64_t generation = 0; // 0: never filled (generations start at 1).
    std::string key;
    result_type targets;
  };

  void collect(std::string_view topic, result_type& out);
  void changed();

  std::unique_ptr<node> root_;
  size_t subscriptions_ = 0;
  uint64_t generation_ = 1;
  uint64_t epoch_ = 0;
  uint64_t cache_hits_ = 0;
  size_t cache_capacity_;
  std::vector<cache_slot> cache_;
  result_type scratch_;
};

} // namespace broker::internal
