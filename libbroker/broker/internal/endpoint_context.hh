#pragma once

// endpoint_context: what an endpoint shares with the objects it hands out.
//
// Subscribers, publishers and hubs keep a shared_ptr to it, so they may outlive the
// endpoint. The runtime pointer is read under the mutex only to copy the shared_ptr; after
// shutdown it is null and every operation reports the endpoint as gone.

#include "broker/configuration.hh"
#include "broker/endpoint_id.hh"
#include "broker/internal/core/core_runtime.hh"
#include "broker/internal/io/io_runtime.hh"
#include "broker/internal/web/server.hh"
#include "broker/internal/zeromq/server.hh"
#include "broker/internal/ops/snapshot.hh"
#include "broker/internal/peering/peer_manager.hh"
#include "broker/internal/security/runtime.hh"
#include "broker/internal/store/store_actor.hh"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace broker::internal {

class endpoint_context {
public:
  endpoint_context(configuration cfg, endpoint_id id)
    : cfg_(std::move(cfg)), id_(id) {}

  const configuration& config() const noexcept { return cfg_; }
  const endpoint_id& id() const noexcept { return id_; }

  /// What the metrics server asks the endpoint (node_probe.hh); set once at start.
  std::shared_ptr<const node_probe> probe() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return probe_;
  }

  void set_probe(std::shared_ptr<const node_probe> x) {
    std::lock_guard<std::mutex> guard{mtx_};
    probe_ = std::move(x);
  }

  /// Access control (security/runtime.hh): the rules, their reload, the audit counters;
  /// set once at start.
  std::shared_ptr<security::runtime> security() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return security_;
  }

  void set_security(std::shared_ptr<security::runtime> x) {
    std::lock_guard<std::mutex> guard{mtx_};
    security_ = std::move(x);
  }

  /// A fresh id for a handler or source (0 is the core itself).
  uint64_t next_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  /// The running core, or nullptr after shutdown.
  std::shared_ptr<core_runtime> runtime() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return rt_;
  }

  void start(std::shared_ptr<core_runtime> rt) {
    std::lock_guard<std::mutex> guard{mtx_};
    rt_ = std::move(rt);
  }

  /// Takes the runtime out (the caller shuts it down).
  std::shared_ptr<core_runtime> stop() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::move(rt_);
  }

  /// The I/O runtime that peerings and servers share (doc/architecture.md, "Threads"), or
  /// nullptr after shutdown.
  std::shared_ptr<io_runtime> io() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return io_;
  }

  void start_io(std::shared_ptr<io_runtime> io) {
    std::lock_guard<std::mutex> guard{mtx_};
    io_ = std::move(io);
  }

  std::shared_ptr<io_runtime> stop_io() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::move(io_);
  }

  /// The network side, or nullptr after shutdown.
  std::shared_ptr<peer_manager> network() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return net_;
  }

  void start_network(std::shared_ptr<peer_manager> net) {
    std::lock_guard<std::mutex> guard{mtx_};
    net_ = std::move(net);
  }

  std::shared_ptr<peer_manager> stop_network() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::move(net_);
  }

  void add_server(std::shared_ptr<http_server> srv) {
    std::lock_guard<std::mutex> guard{mtx_};
    servers_.push_back(std::move(srv));
  }

  /// The running HTTP servers (WebSocket and metrics).
  std::vector<std::shared_ptr<http_server>> servers() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return servers_;
  }

  /// The ZeroMQ forwarder (null unless broker.zeromq.xsub-port or xpub-port is set).
  void set_zeromq(std::shared_ptr<zeromq::server> srv) {
    std::lock_guard<std::mutex> guard{mtx_};
    zeromq_ = std::move(srv);
  }

  std::shared_ptr<zeromq::server> zeromq() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return zeromq_;
  }

  std::shared_ptr<zeromq::server> stop_zeromq() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::move(zeromq_);
  }

  std::vector<std::shared_ptr<http_server>> stop_servers() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::move(servers_);
  }

  /// Registers a store; fails (returns false) for a second master of the same name.
  bool add_store(std::shared_ptr<store_frontend> fe) {
    std::lock_guard<std::mutex> guard{mtx_};
    if (fe->is_master())
      for (auto& x : stores_)
        if (x->is_master() && x->name() == fe->name())
          return false;
    stores_.push_back(std::move(fe));
    return true;
  }

  /// True if a local master of `name` runs.
  bool has_master(const std::string& name) const {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& x : stores_)
      if (x->is_master() && x->name() == name)
        return true;
    return false;
  }

  void remove_store(const std::shared_ptr<store_frontend>& fe) {
    std::lock_guard<std::mutex> guard{mtx_};
    stores_.erase(std::remove(stores_.begin(), stores_.end(), fe), stores_.end());
  }

  /// The stores attached right now.
  std::vector<std::shared_ptr<store_frontend>> stores() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return stores_;
  }

  std::vector<std::shared_ptr<store_frontend>> stop_stores() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::move(stores_);
  }

private:
  configuration cfg_;
  endpoint_id id_;
  std::atomic<uint64_t> next_id_{1};
  mutable std::mutex mtx_;
  std::shared_ptr<core_runtime> rt_;
  std::shared_ptr<io_runtime> io_;
  std::shared_ptr<peer_manager> net_;
  std::vector<std::shared_ptr<http_server>> servers_;
  std::shared_ptr<zeromq::server> zeromq_;
  std::vector<std::shared_ptr<store_frontend>> stores_;
  std::shared_ptr<const node_probe> probe_;
  std::shared_ptr<security::runtime> security_;
};

} // namespace broker::internal
