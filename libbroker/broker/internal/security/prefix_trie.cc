#include "broker/internal/security/prefix_trie.hh"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

namespace broker::internal::security {

namespace {

/// Nodes with at most this many children are searched linearly.
constexpr size_t small_limit = 8;

/// The trie while it is built: nodes own their children, keyed by the first label byte.
struct build_node {
  std::string label;
  std::map<unsigned char, std::unique_ptr<build_node>> kids;
  int32_t value[prefix_trie::slots] = {prefix_trie::none, prefix_trie::none};
};

size_t common_length(std::string_view x, std::string_view y) noexcept {
  size_t n = std::min(x.size(), y.size());
  size_t i = 0;
  while (i < n && x[i] == y[i])
    ++i;
  return i;
}

/// Inserts `prefix` below `root` (iteratively: prefixes may be long) and returns its node.
build_node& insert(build_node& root, std::string_view prefix) {
  auto* cur = &root;
  while (!prefix.empty()) {
    auto byte = static_cast<unsigned char>(prefix.front());
    auto& slot = cur->kids[byte];
    if (!slot) {
      slot = std::make_unique<build_node>();
      slot->label = std::string{prefix};
      return *slot;
    }
    auto common = common_length(slot->label, prefix);
    if (common < slot->label.size()) {
      // Split the edge: a new node for the common part, the old child below it.
      auto mid = std::make_unique<build_node>();
      mid->label = slot->label.substr(0, common);
      slot->label.erase(0, common);
      auto old_byte = static_cast<unsigned char>(slot->label.front());
      mid->kids[old_byte] = std::move(slot);
      slot = std::move(mid);
    }
    cur = slot.get();
    prefix.remove_prefix(common);
  }
  return *cur;
}

} // namespace

prefix_trie::prefix_trie() : nodes_(1), first_(1, 0) {
}

prefix_trie::prefix_trie(const std::vector<item>& items) {
  build_node root;
  for (const auto& x : items)
    insert(root, x.prefix).value[x.slot] = x.value;
  // Flatten breadth-first, so that the children of each node are contiguous.
  std::vector<const build_node*> order{&root};
  nodes_.emplace_back();
  first_.push_back(0);
  for (size_t i = 0; i < order.size(); ++i) {
    const auto* b = order[i];
    nodes_[i].first_child = static_cast<uint32_t>(order.size());
    nodes_[i].child_count = static_cast<uint32_t>(b->kids.size());
    for (int s = 0; s < slots; ++s)
      nodes_[i].value[s] = b->value[s];
    for (const auto& [byte, kid] : b->kids) {
      node n;
      n.label_offset = static_cast<uint32_t>(labels_.size());
      n.label_size = static_cast<uint32_t>(kid->label.size());
      labels_ += kid->label;
      nodes_.push_back(n);
      first_.push_back(byte);
      order.push_back(kid.get());
    }
  }
}

uint32_t prefix_trie::child(const node& parent, unsigned char byte) const noexcept {
  const auto* begin = first_.data() + parent.first_child;
  // Most nodes have a handful of children: a linear scan beats a binary search there.
  if (parent.child_count <= small_limit) {
    for (uint32_t i = 0; i < parent.child_count; ++i) {
      if (begin[i] == byte)
        return parent.first_child + i;
      if (begin[i] > byte)
        break;
    }
    return 0;
  }
  const auto* end = begin + parent.child_count;
  const auto* pos = std::lower_bound(begin, end, byte);
  if (pos == end || *pos != byte)
    return 0;
  return parent.first_child + static_cast<uint32_t>(pos - begin);
}

int32_t prefix_trie::longest(int slot, std::string_view topic) const noexcept {
  const node* cur = nodes_.data();
  int32_t best = cur->value[slot];
  size_t pos = 0;
  while (pos < topic.size() && cur->child_count > 0) {
    auto index = child(*cur, static_cast<unsigned char>(topic[pos]));
    if (index == 0)
      break;
    const auto& kid = nodes_[index];
    if (kid.label_size > topic.size() - pos)
      break;
    // The first byte matched in child(); labels are short, so compare byte by byte
    // rather than call memcmp.
    const char* lbl = labels_.data() + kid.label_offset;
    const char* txt = topic.data() + pos;
    uint32_t i = 1;
    while (i < kid.label_size && lbl[i] == txt[i])
      ++i;
    if (i < kid.label_size)
      break;
    pos += kid.label_size;
    cur = &kid;
    if (kid.value[slot] != none)
      best = kid.value[slot];
  }
  return best;
}

std::vector<prefix_trie::below_entry> prefix_trie::below(int slot,
                                                          std::string_view prefix) const {
  std::vector<below_entry> result;
  // Find where `prefix` ends: at a node (its children are below), or inside an edge (the
  // node that edge leads to is below, itself included).
  uint32_t cur = 0;
  bool include_cur = false;
  size_t pos = 0;
  while (pos < prefix.size()) {
    auto index = child(nodes_[cur], static_cast<unsigned char>(prefix[pos]));
    if (index == 0)
      return result;
    auto lbl = label(nodes_[index]);
    auto rest = prefix.substr(pos);
    auto common = common_length(lbl, rest);
    if (common < std::min(lbl.size(), rest.size()))
      return result; // Diverges: nothing starts with `prefix`.
    cur = index;
    if (lbl.size() > rest.size()) {
      include_cur = true;
      break;
    }
    pos += lbl.size();
  }
  // Iterative depth-first walk; each stack entry carries its nearest valued ancestor.
  std::vector<std::pair<uint32_t, int32_t>> stack;
  auto push_children = [&](uint32_t index, int32_t parent) {
    const auto& n = nodes_[index];
    for (uint32_t i = n.child_count; i > 0; --i)
      stack.emplace_back(n.first_child + i - 1, parent);
  };
  if (include_cur)
    stack.emplace_back(cur, -1);
  else
    push_children(cur, -1);
  while (!stack.empty()) {
    auto [index, parent] = stack.back();
    stack.pop_back();
    auto value = nodes_[index].value[slot];
    if (value != none) {
      result.push_back(below_entry{value, parent});
      parent = static_cast<int32_t>(result.size() - 1);
    }
    push_children(index, parent);
  }
  return result;
}

} // namespace broker::internal::security
