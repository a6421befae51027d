#pragma once

// prefix_trie: an immutable, compressed byte trie of topic prefixes, each carrying up to one
// value per slot (the rule set keeps one slot for publish rules and one for subscribe
// rules). Built once; read by any number of threads.
//
// Layout: every node is a flat record in one array; the children of a node are contiguous
// and sorted by the first byte of their edge label, which a parallel byte array holds for
// the search (linear for up to 8 children, binary beyond). Edge labels live in one
// string. longest() walks one edge per matched label, so it costs O(topic length) byte
// comparisons plus a search among the children at each node it passes, and allocates
// nothing.
//
// Prefixes are raw bytes, as Broker's topic matching is: "/zeek" is a prefix of "/zeekx".

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace broker::internal::security {

class prefix_trie {
public:
  /// No value.
  static constexpr int32_t none = -1;

  /// Number of value slots per prefix.
  static constexpr int slots = 2;

  /// One input of build(): `prefix` gets `value` (>= 0) in `slot`.
  struct item {
    std::string_view prefix;
    int slot = 0;
    int32_t value = 0;
  };

  /// A node with a value below the prefix given to below(), in depth-first pre-order.
  struct below_entry {
    int32_t value;
    /// Index (into the result) of the nearest entry above this one, or -1.
    int32_t parent;
  };

  /// An empty trie: longest() is always none.
  prefix_trie();

  /// Builds the trie. A (prefix, slot) given twice keeps the later value; callers resolve
  /// conflicts before.
  explicit prefix_trie(const std::vector<item>& items);

  /// The value of the longest prefix of `topic` that has one in `slot`, or none.
  int32_t longest(int slot, std::string_view topic) const noexcept;

  /// The values in `slot` of the prefixes strictly longer than `prefix` that start with it,
  /// in depth-first pre-order (shorter before longer, siblings in byte order), each with
  /// its nearest such ancestor.
  std::vector<below_entry> below(int slot, std::string_view prefix) const;

  /// Number of nodes (the root included).
  size_t size() const noexcept { return nodes_.size(); }

private:
  struct node {
    uint32_t label_offset = 0;
    uint32_t label_size = 0;
    uint32_t first_child = 0;
    uint32_t child_count = 0;
    int32_t value[slots] = {none, none};
  };

  /// The child of `parent` whose label starts with `byte`, or 0 (the root is no child).
  uint32_t child(const node& parent, unsigned char byte) const noexcept;

  std::string_view label(const node& n) const noexcept {
    return std::string_view{labels_}.substr(n.label_offset, n.label_size);
  }

  std::vector<node> nodes_;              ///< nodes_[0] is the root (empty label).
  std::vector<unsigned char> first_;     ///< First label byte of each node.
  std::string labels_;
};

} // namespace broker::internal::security
