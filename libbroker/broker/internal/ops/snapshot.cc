#include "broker/internal/ops/snapshot.hh"

#include "broker/internal/core/core_runtime.hh"

#include <mutex>

namespace broker::internal {

node_probe::~node_probe() {
}

snapshot_request::~snapshot_request() {
}

namespace {

/// Collects the parts. Its destructor hands the snapshot over, so that whoever releases
/// the last reference (the core task, a store task, or their destruction unrun) finishes;
/// finish_now() may do it earlier.
class snapshot_gather : public snapshot_request {
public:
  explicit snapshot_gather(std::function<void(node_snapshot)> done) : done_(std::move(done)) {}

  ~snapshot_gather() override { finish(true); }

  void finish_now() override { finish(false); }

  template <class F>
  void update(F f) {
    std::lock_guard<std::mutex> guard{mtx_};
    if (done_)
      f(snap_);
  }

private:
  void finish(bool complete) {
    std::function<void(node_snapshot)> done;
    node_snapshot snap;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (!done_)
        return;
      done.swap(done_);
      snap = std::move(snap_);
    }
    snap.stores_complete = complete;
    done(std::move(snap));
  }

  std::mutex mtx_;
  node_snapshot snap_;
  std::function<void(node_snapshot)> done_;
};

} // namespace

std::weak_ptr<snapshot_request> collect_snapshot(core_runtime& rt,
                                                 std::shared_ptr<const node_probe> probe,
                                                 size_t client_filters,
                                                 std::function<void(node_snapshot)> done) {
  auto gather = std::make_shared<snapshot_gather>(std::move(done));
  std::weak_ptr<snapshot_request> result = gather;
  auto network = probe->network();
  gather->update([&](node_snapshot& snap) {
    snap.node = probe->identity();
    snap.network = std::move(network);
    snap.taken = std::chrono::system_clock::now();
    snap.taken_steady = std::chrono::steady_clock::now();
  });
  rt.post([gather, probe, client_filters](core_state& st) mutable {
    auto core = collect_core_status(st, client_filters);
    gather->update([&](node_snapshot& snap) {
      snap.core = std::move(core);
      snap.core_answered = true;
    });
    auto sink = std::make_shared<std::function<void(store_report)>>(
      [gather](store_report rep) {
        gather->update([&](node_snapshot& snap) { snap.stores.push_back(std::move(rep)); });
      });
    probe->stores(std::move(sink));
    gather.reset();
  });
  return result;
}

} // namespace broker::internal
