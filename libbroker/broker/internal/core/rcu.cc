#include "broker/internal/core/rcu.hh"

#include <thread>

namespace broker::internal::rcu {

namespace {

/// Threads that may read at the same time with a slot of their own; more share a counter.
constexpr size_t max_slots = 256;

/// One reading thread's announcement, on its own cache line: 0 while not reading.
struct alignas(64) slot {
  std::atomic<uint64_t> epoch{0};
  std::atomic<bool> taken{false};
};

struct domain {
  std::atomic<uint64_t> epoch{1};
  std::atomic<uint64_t> shared_readers{0};
  slot slots[max_slots];
};

domain& global() {
  static domain instance; // Never destroyed before the threads that use it: see below.
  return instance;
}

/// The calling thread's slot index (-1: none left, use the shared counter) and nesting.
struct thread_state {
  int index = -1;
  bool claimed = false;
  unsigned depth = 0;

  ~thread_state() {
    if (index >= 0)
      global().slots[index].taken.store(false, std::memory_order_release);
  }

  void claim() {
    claimed = true;
    auto& d = global();
    for (size_t i = 0; i < max_slots; ++i) {
      bool expected = false;
      if (!d.slots[i].taken.load(std::memory_order_relaxed)
          && d.slots[i].taken.compare_exchange_strong(expected, true,
                                                      std::memory_order_acq_rel)) {
        index = static_cast<int>(i);
        return;
      }
    }
  }
};

thread_state& self() {
  thread_local thread_state state;
  return state;
}

/// The oldest epoch any reader announced, or UINT64_MAX if nobody reads. Returns 0 if a
/// thread without a slot reads (its epoch is unknown).
uint64_t oldest_reader() {
  auto& d = global();
  if (d.shared_readers.load(std::memory_order_seq_cst) != 0)
    return 0;
  uint64_t result = UINT64_MAX;
  for (auto& s : d.slots) {
    auto e = s.epoch.load(std::memory_order_seq_cst);
    if (e != 0 && e < result)
      result = e;
  }
  return result;
}

} // namespace

read_guard::read_guard() noexcept {
  auto& st = self();
  if (st.depth++ > 0)
    return;
  if (!st.claimed)
    st.claim();
  auto& d = global();
  if (st.index >= 0)
    d.slots[st.index].epoch.store(d.epoch.load(std::memory_order_seq_cst),
                                  std::memory_order_seq_cst);
  else
    d.shared_readers.fetch_add(1, std::memory_order_seq_cst);
}

read_guard::~read_guard() {
  auto& st = self();
  if (--st.depth > 0)
    return;
  auto& d = global();
  if (st.index >= 0)
    d.slots[st.index].epoch.store(0, std::memory_order_release);
  else
    d.shared_readers.fetch_sub(1, std::memory_order_release);
}

uint64_t current_epoch() noexcept {
  return global().epoch.load(std::memory_order_seq_cst);
}

retire_list::~retire_list() {
  drain();
}

void retire_list::retire(std::function<void()> free) {
  auto& d = global();
  items_.push_back(item{d.epoch.load(std::memory_order_seq_cst), std::move(free)});
  d.epoch.fetch_add(1, std::memory_order_seq_cst);
}

bool retire_list::collect() {
  if (items_.empty())
    return false;
  auto oldest = oldest_reader();
  // items_ is in retirement order, so its epochs ascend: free a prefix.
  size_t n = 0;
  while (n < items_.size() && items_[n].epoch < oldest)
    ++n;
  if (n == 0)
    return true;
  std::vector<item> ready(std::make_move_iterator(items_.begin()),
                          std::make_move_iterator(items_.begin() + static_cast<ptrdiff_t>(n)));
  items_.erase(items_.begin(), items_.begin() + static_cast<ptrdiff_t>(n));
  for (auto& x : ready)
    x.free();
  return !items_.empty();
}

void retire_list::drain() {
  while (collect())
    std::this_thread::yield();
}

} // namespace broker::internal::rcu
