#include "broker/internal/core/topic_index.hh"

#include <algorithm>

namespace broker::internal {

struct topic_index::node {
  /// Bytes on the edge from the parent to this node (empty only for the root).
  std::string label;
  /// Children sorted by the first byte of their label; first bytes are distinct.
  std::vector<std::unique_ptr<node>> children;
  /// Targets whose subscription ends exactly here.
  std::vector<index_target*> targets;

  using child_iter = std::vector<std::unique_ptr<node>>::iterator;

  child_iter lower_bound(unsigned char first) {
    return std::lower_bound(children.begin(), children.end(), first,
                            [](const std::unique_ptr<node>& x, unsigned char y) {
                              return static_cast<unsigned char>(x->label[0]) < y;
                            });
  }

  /// The child whose label starts with `first`, or nullptr.
  node* find_child(unsigned char first) {
    auto i = lower_bound(first);
    if (i != children.end() && static_cast<unsigned char>((*i)->label[0]) == first)
      return i->get();
    return nullptr;
  }

  child_iter find_child_iter(const node* child) {
    return lower_bound(static_cast<unsigned char>(child->label[0]));
  }
};

namespace {

size_t common_prefix_length(std::string_view x, std::string_view y) {
  auto n = std::min(x.size(), y.size());
  size_t i = 0;
  while (i < n && x[i] == y[i])
    ++i;
  return i;
}

} // namespace

topic_index::topic_index(size_t cache_capacity)
  : root_(std::make_unique<node>()), cache_capacity_(cache_capacity) {
  cache_.resize(cache_capacity_);
}

topic_index::~topic_index() = default;

void topic_index::changed() {
  ++generation_; // Every slot filled before is stale now.
}

size_t topic_index::subscribe(index_target* target, const filter_type& prefixes) {
  size_t added = 0;
  for (const auto& prefix_topic : prefixes) {
    std::string_view prefix = prefix_topic.view();
    node* cur = root_.get();
    size_t pos = 0;
    while (pos < prefix.size()) {
      auto rest = prefix.substr(pos);
      auto i = cur->lower_bound(static_cast<unsigned char>(rest[0]));
      if (i == cur->children.end() || (*i)->label[0] != rest[0]) {
        // No edge starts with this byte: the rest of the prefix becomes one new leaf.
        auto leaf = std::make_unique<node>();
        leaf->label = std::string{rest};
        cur = cur->children.insert(i, std::move(leaf))->get();
        pos = prefix.size();
        break;
      }
      node* child = i->get();
      auto common = common_prefix_length(child->label, rest);
      if (common < child->label.size()) {
        // The prefix ends inside the edge or diverges from it: split the edge.
        auto middle = std::make_unique<node>();
        middle->label = child->label.substr(0, common);
        std::unique_ptr<node> old = std::move(*i);
        old->label.erase(0, common);
        middle->children.push_back(std::move(old));
        *i = std::move(middle);
        child = i->get();
      }
      cur = child;
      pos += common;
    }
    auto& ts = cur->targets;
    if (std::find(ts.begin(), ts.end(), target) == ts.end()) {
      ts.push_back(target);
      ++added;
    }
  }
  subscriptions_ += added;
  changed();
  return added;
}

size_t topic_index::unsubscribe(index_target* target, const filter_type& prefixes) {
  size_t removed = 0;
  std::vector<node*> path; // root .. node of the prefix
  for (const auto& prefix_topic : prefixes) {
    std::string_view prefix = prefix_topic.view();
    path.clear();
    node* cur = root_.get();
    path.push_back(cur);
    size_t pos = 0;
    while (cur != nullptr && pos < prefix.size()) {
      auto rest = prefix.substr(pos);
      node* child = cur->find_child(static_cast<unsigned char>(rest[0]));
      if (child == nullptr || rest.substr(0, child->label.size()) != child->label) {
        cur = nullptr;
        break;
      }
      pos += child->label.size();
      cur = child;
      path.push_back(cur);
    }
    if (cur == nullptr)
      continue;
    auto& ts = cur->targets;
    auto i = std::find(ts.begin(), ts.end(), target);
    if (i == ts.end())
      continue;
    ts.erase(i);
    ++removed;
    // Prune bottom-up: drop empty leaves, merge pass-through nodes into their only child.
    for (size_t depth = path.size() - 1; depth > 0; --depth) {
      node* n = path[depth];
      node* parent = path[depth - 1];
      if (!n->targets.empty())
        break;
      auto pos_in_parent = parent->find_child_iter(n);
      if (n->children.empty()) {
        parent->children.erase(pos_in_parent);
        continue; // The parent may now be prunable too.
      }
      if (n->children.size() == 1) {
        std::unique_ptr<node> only = std::move(n->children.front());
        only->label.insert(0, n->label);
        *pos_in_parent = std::move(only); // Destroys n.
      }
      break;
    }
  }
  subscriptions_ -= removed;
  changed();
  return removed;
}

void topic_index::collect(std::string_view topic, result_type& out) {
  out.clear();
  auto mark = ++epoch_;
  auto take = [&](const node* n) {
    for (auto* t : n->targets) {
      if (t->index_mark_ != mark) {
        t->index_mark_ = mark;
        out.push_back(t);
      }
    }
  };
  const node* cur = root_.get();
  take(cur);
  size_t pos = 0;
  while (pos < topic.size()) {
    auto rest = topic.substr(pos);
    node* child = const_cast<node*>(cur)->find_child(static_cast<unsigned char>(rest[0]));
    if (child == nullptr || rest.substr(0, child->label.size()) != child->label)
      break;
    pos += child->label.size();
    cur = child;
    take(cur);
  }
}

const topic_index::result_type& topic_index::lookup(std::string_view topic) {
  if (cache_capacity_ == 0) {
    collect(topic, scratch_);
    return scratch_;
  }
  auto& slot = cache_[std::hash<std::string_view>{}(topic) % cache_capacity_];
  if (slot.generation == generation_ && slot.key == topic) {
    ++cache_hits_;
    return slot.targets;
  }
  // Refill the slot in place: assign() and collect() reuse the slot's buffers.
  slot.key.assign(topic.data(), topic.size());
  collect(topic, slot.targets);
  slot.generation = generation_;
  return slot.targets;
}

size_t topic_index::node_count() const noexcept {
  size_t result = 0;
  std::vector<const node*> todo{root_.get()};
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
    const node* n;
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
