// rcu: a retired version lives exactly as long as a reader may hold it.
//
// Versions are `version` objects whose destructor poisons a canary and marks them dead in a
// registry, and whose memory goes to a graveyard instead of back to malloc: a reader that
// uses a freed version reads the poison (deterministically, also without ASan) instead of
// whatever the allocator put there.

#include "broker/internal/core/rcu.hh"

#include "broker/internal/threads.test.hh"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

using namespace broker::internal;
using broker::internal::test::bounded_thread;
using broker::internal::test::eventually;

namespace {

constexpr uint64_t live = 0x11fe11fe11fe11feULL;
constexpr uint64_t poison = 0xdeaddeaddeaddeadULL;

/// How often each version number was freed (indexed by number).
class registry {
public:
  explicit registry(size_t n) : frees_(new std::atomic<int>[n]), size_(n) {
    for (size_t i = 0; i < n; ++i)
      frees_[i] = 0;
  }

  void freed(uint64_t number) {
    frees_[number].fetch_add(1);
    total_.fetch_add(1);
  }

  /// Frees of all versions so far.
  uint64_t total() const { return total_.load(); }

  int frees(uint64_t number) const { return frees_[number].load(); }

  bool alive(uint64_t number) const { return frees(number) == 0; }

  size_t size() const noexcept { return size_; }

private:
  std::unique_ptr<std::atomic<int>[]> frees_;
  size_t size_;
  std::atomic<uint64_t> total_{0};
};

/// Keeps the memory of the newest deleted versions (see the file comment).
class graveyard {
public:
  static constexpr size_t keep = 1 << 16;

  static void bury(void* p) {
    std::lock_guard<std::mutex> guard{mtx()};
    auto& xs = graves();
    xs.push_back(p);
    if (xs.size() > keep) {
      ::operator delete(xs.front());
      xs.pop_front();
    }
  }

  /// Frees what is buried; call when no reader runs.
  static void release() {
    std::lock_guard<std::mutex> guard{mtx()};
    for (auto* p : graves())
      ::operator delete(p);
    graves().clear();
  }

private:
  static std::mutex& mtx() {
    static std::mutex instance;
    return instance;
  }

  static std::deque<void*>& graves() {
    static std::deque<void*> instance;
    return instance;
  }
};

struct version {
  version(uint64_t n, registry& r) : number(n), reg(&r) {
    for (auto& x : payload)
      x = n;
  }

  ~version() {
    canary.store(poison);
    reg->freed(number);
  }

  static void* operator new(size_t size) { return ::operator new(size); }
  static void operator delete(void* p) { graveyard::bury(p); }

  /// True if this looks like a live version: canary intact, not freed, payload intact.
  bool intact() const {
    if (canary.load() != live || !reg->alive(number))
      return false;
    for (auto& x : payload)
      if (x != number)
        return false;
    return true;
  }

  const uint64_t number;
  registry* const reg;
  std::atomic<uint64_t> canary{live};
  uint64_t payload[8];
};

using cell = rcu::cell<version>;

std::unique_ptr<const version> make(uint64_t n, registry& r) {
  return std::make_unique<const version>(n, r);
}

/// Frees the graveyard at the end of a test.
struct graveyard_guard {
  ~graveyard_guard() { graveyard::release(); }
};

} // namespace

TEST_CASE("collect with nothing retired has nothing left", "[rcu]") {
  rcu::retire_list g;
  CHECK(g.empty());
  CHECK_FALSE(g.collect());
}

TEST_CASE("publishing into an empty cell retires nothing", "[rcu]") {
  graveyard_guard gy;
  registry reg{4};
  rcu::retire_list g;
  auto e0 = rcu::current_epoch();
  {
    cell c;
    CHECK(c.load() == nullptr);
    c.publish(make(1, reg), g);
    CHECK(g.empty());
    CHECK(rcu::current_epoch() == e0);
    REQUIRE(c.load() != nullptr);
    CHECK(c.load()->number == 1);
  }
  CHECK(reg.frees(1) == 1); // The cell frees its last version.
}

TEST_CASE("a version nobody reads is freed by the next collect", "[rcu]") {
  graveyard_guard gy;
  registry reg{4};
  rcu::retire_list g;
  cell c;
  c.publish(make(1, reg), g);
  auto e0 = rcu::current_epoch();
  c.publish(make(2, reg), g);
  CHECK(rcu::current_epoch() == e0 + 1); // Each retirement advances the epoch.
  CHECK_FALSE(g.empty());
  CHECK(reg.alive(1));
  CHECK_FALSE(g.collect());
  CHECK(g.empty());
  CHECK(reg.frees(1) == 1);
  CHECK(reg.alive(2));
  c.publish(nullptr, g);
  CHECK(c.load() == nullptr);
  g.drain();
  CHECK(reg.frees(2) == 1);
}

TEST_CASE("a retired version lives while an older reader on another thread holds it",
          "[rcu]") {
  graveyard_guard gy;
  registry reg{4};
  rcu::retire_list g;
  cell c;
  c.publish(make(1, reg), g);
  std::atomic<int> step{0};
  bool reader_saw_intact = false;
  uint64_t reader_saw = 0;
  bounded_thread reader{"reader", [&] {
    rcu::read_guard guard;
    const auto* v = c.load();
    reader_saw = v->number;
    step = 1;
    eventually([&] { return step.load() == 2; });
    reader_saw_intact = v->intact(); // After the writer retired it and tried to free it.
  }};
  REQUIRE(eventually([&] { return step.load() == 1; }));
  c.publish(make(2, reg), g);
  CHECK(g.collect()); // Something is left: version 1.
  CHECK(reg.alive(1));
  // A reader that starts now sees the new version, even while the old one lives.
  {
    rcu::read_guard guard;
    CHECK(c.load()->number == 2);
  }
  step = 2;
  reader.join();
  CHECK(reader_saw == 1);
  CHECK(reader_saw_intact);
  CHECK_FALSE(g.collect());
  CHECK(reg.frees(1) == 1);
  CHECK(reg.alive(2));
}

TEST_CASE("a reader that started after the publish does not hold the old version back",
          "[rcu]") {
  graveyard_guard gy;
  registry reg{4};
  rcu::retire_list g;
  cell c;
  c.publish(make(1, reg), g);
  c.publish(make(2, reg), g);
  std::atomic<int> step{0};
  uint64_t reader_saw = 0;
  bounded_thread reader{"reader", [&] {
    rcu::read_guard guard;
    reader_saw = c.load()->number;
    step = 1;
    eventually([&] { return step.load() == 2; });
  }};
  REQUIRE(eventually([&] { return step.load() == 1; }));
  CHECK_FALSE(g.collect()); // The reader reads, but only version 2.
  CHECK(reg.frees(1) == 1);
  CHECK(reg.alive(2));
  step = 2;
  reader.join();
  CHECK(reader_saw == 2);
}

TEST_CASE("nested guards protect until the outermost one ends", "[rcu]") {
  graveyard_guard gy;
  registry reg{4};
  rcu::retire_list g;
  cell c;
  c.publish(make(1, reg), g);
  std::atomic<int> step{0};
  bool intact_after_inner = false;
  bounded_thread reader{"reader", [&] {
    rcu::read_guard outer;
    const auto* v = c.load();
    { rcu::read_guard inner; }
    step = 1;
    eventually([&] { return step.load() == 2; });
    { rcu::read_guard inner; } // Ending an inner guard again must not end the outer one.
    step = 3;
    eventually([&] { return step.load() == 4; });
    intact_after_inner = v->intact();
  }};
  REQUIRE(eventually([&] { return step.load() == 1; }));
  c.publish(make(2, reg), g);
  CHECK(g.collect());
  step = 2;
  REQUIRE(eventually([&] { return step.load() == 3; }));
  CHECK(g.collect());
  CHECK(reg.alive(1));
  step = 4;
  reader.join();
  CHECK(intact_after_inner);
  CHECK_FALSE(g.collect());
  CHECK(reg.frees(1) == 1);
}

TEST_CASE("readers beyond the slots hold back everything until they leave", "[rcu]") {
  // More reading threads than slots: the rest count themselves in a shared counter, and
  // while it is non-zero nothing is freed, even what they cannot have seen.
  constexpr int readers = 300;
  graveyard_guard gy;
  registry reg{4};
  rcu::retire_list g;
  cell c;
  c.publish(make(1, reg), g);
  c.publish(make(2, reg), g); // Version 1 is retired before any reader starts.
  std::atomic<int> holding{0};
  std::atomic<bool> release{false};
  std::atomic<int> saw_old{0};
  std::vector<bounded_thread> ts;
  for (int i = 0; i < readers; ++i)
    ts.emplace_back("reader", [&] {
      rcu::read_guard guard;
      if (c.load()->number != 2)
        ++saw_old;
      ++holding;
      eventually([&] { return release.load(); });
    });
  REQUIRE(eventually([&] { return holding.load() == readers; }));
  CHECK(g.collect());
  CHECK(reg.alive(1));
  release = true;
  for (auto& t : ts)
    t.join();
  CHECK(saw_old == 0);
  CHECK_FALSE(g.collect());
  CHECK(reg.frees(1) == 1);
}

TEST_CASE("under a stream of publishes, readers only ever see live, current versions",
          "[rcu]") {
  // One writer publishes versions 1, 2, ... and collects after each, as the router does;
  // it publishes the next only once some reader finished a read since the last one, so
  // it cannot run away from the readers. Reader threads, in two waves (so that slots are
  // returned and claimed again), read the current version under a guard, yield while
  // holding it so that the writer publishes and collects meanwhile, and check that it is
  // still intact; every seventh read nests a guard. Each reader also checks that it never
  // sees a version older than one published before its guard began.
  constexpr int waves = 2;
  constexpr int readers = 3;
  constexpr int reads = 4000; // Per reader.
  constexpr uint64_t min_versions = 1000;
  constexpr uint64_t max_versions = 60000;
  graveyard_guard gy;
  registry reg{max_versions + 2};
  rcu::retire_list g;
  auto c = std::make_unique<cell>();
  c->publish(make(1, reg), g);
  std::atomic<uint64_t> published{1};
  std::atomic<int> readers_done{0};
  std::atomic<int> dead{0};
  std::atomic<int> stale{0};
  std::atomic<int> went_back{0};
  std::atomic<uint64_t> reads_done{0};
  std::atomic<uint64_t> overlaps{0};
  uint64_t last = 1;
  uint64_t freed_while_reading = 0;
  auto all_done = [&] { return readers_done.load() == waves * readers; };
  auto write = [&] {
    for (uint64_t n = 2; n <= max_versions; ++n) {
      if (n > min_versions && all_done())
        break;
      auto seen = reads_done.load();
      c->publish(make(n, reg), g);
      published.store(n);
      last = n;
      g.collect();
      if (!all_done())
        freed_while_reading = reg.total();
      eventually([&] { return reads_done.load() != seen || all_done(); });
    }
  };
  auto read = [&](int r) {
    for (int i = 0; i < reads; ++i) {
      auto before = published.load();
      rcu::read_guard guard;
      const auto* v = c->load();
      if (v->number < before)
        ++stale;
      if (!v->intact())
        ++dead;
      for (int k = 0; k < (i + r) % 4; ++k)
        std::this_thread::yield();
      if (i % 7 == 0) {
        rcu::read_guard inner;
        const auto* w = c->load();
        if (w->number < v->number)
          ++went_back;
        if (!w->intact())
          ++dead;
      }
      if (!v->intact())
        ++dead;
      if (published.load() > v->number)
        ++overlaps; // The writer published (and collected) during this read.
      ++reads_done;
    }
    ++readers_done;
  };
  std::optional<bounded_thread> writer;
  for (int w = 0; w < waves; ++w) {
    std::vector<bounded_thread> ts;
    for (int r = 0; r < readers; ++r)
      ts.emplace_back("reader", [&read, r] { read(r); });
    if (w == 0)
      writer.emplace("writer", write); // Once the first readers exist.
    for (auto& t : ts)
      t.join();
  }
  writer->join();
  CHECK(dead == 0);
  CHECK(stale == 0);
  CHECK(went_back == 0);
  CHECK(reads_done == static_cast<uint64_t>(waves * readers * reads));
  CHECK(last >= min_versions);
  // The test did what it says: readers held versions across publishes, and reclamation
  // kept up while they read (not only at the end).
  CHECK(overlaps > 0);
  CHECK(freed_while_reading > 0);
  g.drain();
  // Every retired version was freed exactly once; the current one lives.
  int wrong = 0;
  for (uint64_t n = 1; n < last; ++n)
    wrong += reg.frees(n) == 1 ? 0 : 1;
  CHECK(wrong == 0);
  CHECK(reg.alive(last));
  c.reset();
  CHECK(reg.frees(last) == 1);
}
