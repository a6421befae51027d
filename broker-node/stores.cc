#include "stores.hh"

#include "node_session.hh"

#include <chrono>
#include <thread>

namespace broker_node {

namespace {

/// How long a node with masters waits for its --peers before attaching them. A master
/// attached before its peerings are up cannot see an existing master there.
constexpr auto peers_wait_limit = std::chrono::seconds{3};

constexpr auto peers_poll_interval = std::chrono::milliseconds{20};

void wait_for_peers(broker::endpoint& ep, size_t count) {
  auto deadline = std::chrono::steady_clock::now() + peers_wait_limit;
  while (ep.peers().size() < count && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(peers_poll_interval);
}

broker::error attach_failed(const char* key, const std::string& name, const broker::error& err) {
  return broker::error{err.code(), std::string{key} + ": cannot attach \"" + name
                                     + "\": " + to_string(err)};
}

} // namespace

broker::expected<std::vector<broker::store>> attach_stores(broker::endpoint& ep,
                                                           const node_options& opts) {
  std::vector<broker::store> result;
  if (!opts.master_stores.empty() && !opts.peers.empty())
    wait_for_peers(ep, opts.peers.size());
  for (auto& name : opts.master_stores) {
    auto st = ep.attach_master(name, opts.store.backend,
                               broker_tools::backend_options_for(opts.store, name));
    if (!st)
      return attach_failed("master-stores", name, st.error_value());
    print_event("store", {{"role", "master"}, {"name", name}},
                "store master " + escape_line(name));
    result.push_back(std::move(*st));
  }
  for (auto& name : opts.clone_stores) {
    auto st = ep.attach_clone(name);
    if (!st)
      return attach_failed("clone-stores", name, st.error_value());
    print_event("store", {{"role", "clone"}, {"name", name}},
                "store clone " + escape_line(name));
    result.push_back(std::move(*st));
  }
  return result;
}

} // namespace broker_node
