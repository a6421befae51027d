#include "broker/internal/core/topic_index.hh"

#include <algorithm>
#include <atomic>
#include <functional>
#include <iterator>

namespace broker::internal {

/// One node of the trie. Immutable once its edit number is older than the writer's.
struct index_node {
  /// Bytes on the edge from the parent to this node (empty only for the root).
  std::string label;
  /// Targets whose subscription ends exactly here, sorted by address.
  std::vector<index_target*> targets;
  /// Children sorted by the first byte of their label; first bytes are distinct.
  std::vector<std::shared_ptr<index_node>> children;
  /// The writer's edit number when this node was made (topic_index::edit_).
  uint64_t edit = 0;

  using children_type = std::vector<std::shared_ptr<index_node>>;

  children_type::const_iterator lower_bound(unsigned char first) const {
    return std::lower_bound(children.begin(), children.end(), first,
                            [](const std::shared_ptr<index_node>& x, unsigned char y) {
                              return static_cast<unsigned char>(x->label[0]) < y;
                            });
  }

  /// The index of the child whose label starts with `first`, or -1.
  ptrdiff_t find_child(unsigned char first) const {
    auto i = lower_bound(first);
    if (i != children.end() && static_cast<unsigned char>((*i)->label[0]) == first)
      return i - children.begin();
    return -1;
  }
};

namespace {

/// Generations are unique in the process, so lookup caches never confuse two indexes.
std::atomic<uint64_t> next_generation{1};

size_t common_prefix_length(std::string_view x, std::string_view y) {
  auto n = std::min(x.size(), y.size());
  size_t i = 0;
  while (i < n && x[i] == y[i])
    ++i;
  return i;
}

bool starts_with(std::string_view x, std::string_view prefix) {
  return x.size() >= prefix.size() && x.compare(0, prefix.size(), prefix) == 0;
}

} // namespace

// -- lookup_scratch -----------------------------------------------------------------------

lookup_scratch::lookup_scratch(size_t cache_slots) {
  resize_cache(cache_slots);
}

void lookup_scratch::resize_cache(size_t cache_slots) {
  cache_.clear();
  cache_.resize(cache_slots);
}

// -- index_snapshot -----------------------------------------------------------------------

target_span index_snapshot::collect(std::string_view topic, lookup_scratch& s) const {
  const std::vector<index_target*>* single = nullptr;
  bool merged = false;
  auto take = [&](const index_node& n) {
    const auto& ts = n.targets;
    if (ts.empty())
      return;
    if (single == nullptr) {
      single = &ts;
      return;
    }
    if (!merged) {
      s.merged_.assign(single->begin(), single->end());
      merged = true;
    }
    s.tmp_.clear();
    std::set_union(s.merged_.begin(), s.merged_.end(), ts.begin(), ts.end(),
                   std::back_inserter(s.tmp_));
    s.merged_.swap(s.tmp_);
  };
  const index_node* cur = root_.get();
  take(*cur);
  size_t pos = 0;
  while (pos < topic.size()) {
    auto rest = topic.substr(pos);
    auto i = cur->find_child(static_cast<unsigned char>(rest[0]));
    if (i < 0)
      break;
    const index_node* child = cur->children[static_cast<size_t>(i)].get();
    if (!starts_with(rest, child->label))
      break;
    pos += child->label.size();
    cur = child;
    take(*cur);
  }
  if (merged)
    return target_span{s.merged_.data(), s.merged_.size()};
  if (single != nullptr)
    return target_span{single->data(), single->size()};
  return target_span{};
}

target_span index_snapshot::lookup(std::string_view topic, lookup_scratch& s) const {
  if (s.cache_.empty())
    return collect(topic, s);
  auto& slot = s.cache_[std::hash<std::string_view>{}(topic) % s.cache_.size()];
  if (slot.generation == generation_ && slot.key == topic) {
    ++s.cache_hits_;
    return target_span{slot.targets.data(), slot.targets.size()};
  }
  auto result = collect(topic, s);
  // Refill the slot in place: assign() reuses its buffers.
  slot.key.assign(topic.data(), topic.size());
  slot.targets.assign(result.begin(), result.end());
  slot.generation = generation_;
  return target_span{slot.targets.data(), slot.targets.size()};
}

// -- topic_index --------------------------------------------------------------------------

topic_index::topic_index() : root_(std::make_shared<index_node>()) {
  root_->edit = edit_;
}

topic_index::~topic_index() = default;

std::shared_ptr<index_node> topic_index::own(const std::shared_ptr<index_node>& x) {
  if (x->edit == edit_)
    return x;
  auto copy = std::make_shared<index_node>(*x);
  copy->edit = edit_;
  return copy;
}

index_node* topic_index::mutable_root() {
  root_ = own(root_);
  dirty_ = true;
  return root_.get();
}

size_t topic_index::subscribe(index_target* target, const filter_type& prefixes) {
  size_t added = 0;
  for (const auto& prefix_topic : prefixes) {
    std::string_view rest = prefix_topic.view();
    index_node* cur = mutable_root();
    while (!rest.empty()) {
      auto i = cur->lower_bound(static_cast<unsigned char>(rest[0]));
      auto idx = i - cur->children.begin();
      if (i == cur->children.end() || (*i)->label[0] != rest[0]) {
        // No edge starts with this byte: the rest of the prefix becomes one new leaf.
        auto leaf = std::make_shared<index_node>();
        leaf->label = std::string{rest};
        leaf->edit = edit_;
        cur->children.insert(cur->children.begin() + idx, leaf);
        cur = leaf.get();
        rest = {};
        break;
      }
      auto& slot = cur->children[static_cast<size_t>(idx)];
      slot = own(slot);
      auto common = common_prefix_length(slot->label, rest);
      if (common < slot->label.size()) {
        // The prefix ends inside the edge or diverges from it: split the edge.
        auto middle = std::make_shared<index_node>();
        middle->label = slot->label.substr(0, common);
        middle->edit = edit_;
        slot->label.erase(0, common);
        middle->children.push_back(std::move(slot));
        slot = std::move(middle);
      }
      cur = slot.get();
      rest.remove_prefix(common);
    }
    auto& ts = cur->targets;
    auto pos = std::lower_bound(ts.begin(), ts.end(), target);
    if (pos == ts.end() || *pos != target) {
      ts.insert(pos, target);
      ++added;
    }
  }
  subscriptions_ += added;
  return added;
}

size_t topic_index::unsubscribe(index_target* target, const filter_type& prefixes) {
  size_t removed = 0;
  std::vector<std::pair<index_node*, size_t>> path; // (parent, index of the child in it)
  for (const auto& prefix_topic : prefixes) {
    std::string_view prefix = prefix_topic.view();
    // Find the node read-only first: a prefix we do not have must not copy any node.
    {
      const index_node* cur = root_.get();
      std::string_view rest = prefix;
      while (cur != nullptr && !rest.empty()) {
        auto i = cur->find_child(static_cast<unsigned char>(rest[0]));
        const index_node* child = i < 0 ? nullptr : cur->children[static_cast<size_t>(i)].get();
        if (child == nullptr || !starts_with(rest, child->label)) {
          cur = nullptr;
          break;
        }
        rest.remove_prefix(child->label.size());
        cur = child;
      }
      if (cur == nullptr || !std::binary_search(cur->targets.begin(), cur->targets.end(), target))
        continue;
    }
    // Walk again, owning every node on the path.
    path.clear();
    index_node* cur = mutable_root();
    std::string_view rest = prefix;
    while (!rest.empty()) {
      auto i = static_cast<size_t>(cur->find_child(static_cast<unsigned char>(rest[0])));
      auto& slot = cur->children[i];
      slot = own(slot);
      path.emplace_back(cur, i);
      rest.remove_prefix(slot->label.size());
      cur = slot.get();
    }
    auto& ts = cur->targets;
    ts.erase(std::lower_bound(ts.begin(), ts.end(), target));
    ++removed;
    // Prune bottom-up: drop empty leaves, merge pass-through nodes into their only child.
    for (auto step = path.rbegin(); step != path.rend(); ++step) {
      auto [parent, i] = *step;
      auto& slot = parent->children[i];
      index_node* n = slot.get();
      if (!n->targets.empty())
        break;
      if (n->children.empty()) {
        parent->children.erase(parent->children.begin() + static_cast<ptrdiff_t>(i));
        continue; // The parent may now be prunable too.
      }
      if (n->children.size() == 1) {
        auto only = own(n->children.front());
        only->label.insert(0, n->label);
        slot = std::move(only); // Releases n.
      }
      break;
    }
  }
  subscriptions_ -= removed;
  return removed;
}

std::unique_ptr<const index_snapshot> topic_index::snapshot() {
  auto result = std::make_unique<const index_snapshot>(
    root_, next_generation.fetch_add(1, std::memory_order_relaxed));
  ++edit_; // Every node made so far is shared with the snapshot now.
  dirty_ = false;
  return result;
}

std::vector<index_target*> topic_index::lookup(std::string_view topic) {
  if (!last_ || dirty_)
    last_ = snapshot();
  auto xs = last_->lookup(topic, scratch_);
  return {xs.begin(), xs.end()};
}

size_t topic_index::node_count() const noexcept {
  size_t result = 0;
  std::vector<const index_node*> todo{root_.get()};
  while (!todo.empty()) {
    auto* n = todo.back();
    todo.pop_back();
    ++result;
    for (auto& c : n->children)
      todo.push_back(c.get());
  }
  return result;
}

filter_type topic_index::prefixes() const {
  filter_type result;
  // Depth-first walk carrying the concatenated labels; children are in byte order, and a
  // node is emitted before its children, so the output comes out sorted.
  struct frame {
    const index_node* n;
    size_t prefix_len;
  };
  std::string prefix;
  std::vector<frame> todo{{root_.get(), 0}};
  while (!todo.empty()) {
    auto [n, len] = todo.back();
    todo.pop_back();
    prefix.resize(len);
    prefix += n->label;
    if (!n->targets.empty())
      result.emplace_back(prefix);
    for (auto i = n->children.rbegin(); i != n->children.rend(); ++i)
      todo.push_back({i->get(), prefix.size()});
  }
  return result;
}

} // namespace broker::internal
