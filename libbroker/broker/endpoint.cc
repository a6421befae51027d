#include "broker/endpoint.hh"

#include "broker/internal/endpoint_context.hh"
#include "broker/internal/config/address_text.hh"
#include "broker/internal/config/logger.hh"
#include "broker/internal/config/operations_options.hh"
#include "broker/internal/config/security_options.hh"
#include "broker/internal/config/zeromq_options.hh"
#include "broker/internal/ops/node_probe.hh"
#include "broker/internal/zeromq/node_client.hh"
#include "broker/internal/security/exposure.hh"

#include "broker/internal/core/local_queue.hh"
#include "broker/internal/core/local_source.hh"

#include <future>
#include <thread>

namespace broker {

using internal::core_state;

namespace {

/// The error of a server the configuration asked for, followed by the options (and their
/// environment variables) that asked: two servers fail with the same words otherwise.
error naming_options(const error& err, std::string_view port_key,
                     std::string_view address_key) {
  std::string names;
  for (auto key : {port_key, address_key}) {
    for (auto& row : configuration::options()) {
      if (row.key != key)
        continue;
      if (!names.empty())
        names += ", ";
      names += row.key;
      if (!row.env.empty())
        names += " (env " + row.env + ")";
    }
  }
  return error{err.code(), err.message() + "; set by " + names};
}

/// "cannot listen for <what> on *:9999: Address already in use" (config/address_text.hh).
error listen_error(const error& err, const char* what, const std::string& address,
                   uint16_t port) {
  if (err != ec::cannot_open_resource)
    return err;
  // The server says "cannot listen on <address>:<port>: <the system's reason>".
  const auto& text = err.message();
  auto pos = text.rfind(": ");
  auto reason = pos == std::string::npos ? text : text.substr(pos + 2);
  return error{err.code(), std::string{"cannot listen for "} + what + " on "
                             + internal::address_text(address, port) + ": " + reason};
}

error shutting_down() {
  return error{ec::shutting_down, "the endpoint has shut down"};
}

error reserved_topic(const std::string& name) {
  return error{ec::invalid_topic,
               "cannot publish to reserved topic \"" + name + "\" (prefix <$> is internal)"};
}

/// Logs who can reach a new listener and whether anyone is authenticated
/// (security/exposure.hh); a warning if other hosts can reach it and nobody is.
void log_exposure(const internal::io_runtime& io, internal::security::service what,
                  const std::string& address, uint16_t port,
                  const internal::security::runtime* access) {
  using internal::security::transport;
  auto how = transport::plain;
  if (what != internal::security::service::metrics) {
    switch (io.mode()) {
      case internal::tls_mode::plain:
        break;
      case internal::tls_mode::anonymous:
        how = transport::anonymous_tls;
        break;
      case internal::tls_mode::verified:
        how = transport::mutual_tls;
        break;
    }
  }
  bool rules = what != internal::security::service::metrics && access != nullptr
               && access->policy().current()->enforcing();
  auto level = internal::security::is_exposed(address, how, rules)
                 ? internal::log_level::warning
                 : internal::log_level::info;
  io.get_logger().write(level, "security",
                        internal::security::exposure_line(what, address, port, how, rules));
}

/// Creates and registers the source of a publisher or hub (its statistics go to the core).
std::shared_ptr<internal::local_source> attach_source(internal::core_runtime& rt,
                                                      uint64_t id) {
  auto src = std::make_shared<internal::local_source>(rt.routing(), id);
  rt.post([id, stats = src->stats()](core_state& st) { st.add_source(id, stats); });
  return src;
}

/// Creates, registers and returns the queue of a subscriber or hub; subscribed when this
/// returns (or closed if the endpoint is gone).
std::shared_ptr<internal::local_queue>
attach_queue(internal::endpoint_context& ctx, uint64_t id, handler_kind kind,
             const filter_type& filter, const queue_options& opts) {
  const auto& cfg = ctx.config();
  auto capacity = opts.capacity.value_or(cfg.subscriber_buffer_size());
  auto policy = opts.policy.value_or(cfg.subscriber_overflow_policy());
  auto queue = std::make_shared<internal::local_queue>(capacity, policy);
  auto rt = ctx.runtime();
  if (!rt) {
    queue->close();
    return queue;
  }
  bool ok = rt->run([queue, id, kind, filter](core_state& st) {
    st.add_handler(std::make_shared<internal::local_handler>(id, kind, queue), filter);
  });
  if (!ok)
    queue->close();
  return queue;
}

} // namespace

endpoint::endpoint() : endpoint(configuration{}) {
}

endpoint::endpoint(configuration cfg) {
  auto id = endpoint_id::random();
  ctx_ = std::make_shared<internal::endpoint_context>(std::move(cfg), id);
  const auto& conf = ctx_->config();
  // Each endpoint logs at its own level (logger.hh); JSON lines name it.
  auto ops = internal::read_operations_settings(conf);
  auto lg = std::make_shared<internal::logger>(
    ops.level, ops.format, ops.endpoint_name.empty() ? to_string(id) : ops.endpoint_name);
  internal::apply_log_file(*lg, conf, id); // An error is logged; the endpoint runs on.
  // Access control first: an invalid rules file must stop the node before it serves.
  auto sec = std::make_shared<internal::security::runtime>(internal::read_rules_file(conf), lg);
  if (auto err = sec->load()) // A missing file is the operator's configuration too.
    startup_error_ = error{ec::invalid_config, err.message()};
  ctx_->set_security(sec);
  internal::router_options opts;
  opts.id = id;
  opts.topic_cache_size = conf.topic_cache_size();
  opts.disable_forwarding = conf.disable_forwarding();
  opts.ttl = conf.ttl();
  auto rt = std::make_shared<internal::core_runtime>(std::move(opts),
                                                     ctx_->config().scheduler_max_threads());
  // The endpoint's own publish() calls form one source (id 1 is never handed out again).
  own_ = attach_source(*rt, ctx_->next_id());
  auto ctx = ctx_;
  auto io = std::make_shared<internal::io_runtime>(conf, std::move(lg));
  auto net = std::make_shared<internal::peer_manager>(id, conf, *io, rt,
                                                      [ctx] { return ctx->next_id(); }, sec);
  // The core tells the network what to offer in new handshakes whenever that changes.
  std::weak_ptr<internal::peer_manager> weak_net = net;
  std::weak_ptr<internal::endpoint_context> weak_ctx = ctx_;
  rt->run([weak_net, weak_ctx](core_state& st) {
    st.on_filter_change([weak_net, weak_ctx](const filter_type& f) {
      if (auto n = weak_net.lock())
        n->update_filter(f);
      if (auto c = weak_ctx.lock())
        if (auto z = c->zeromq())
          z->update_filter(f);
    });
    if (auto n = weak_net.lock())
      n->update_filter(st.announcement_for(0));
  });
  ctx_->set_probe(internal::make_node_probe(ctx_, ops.endpoint_name, BROKER_VERSION_STRING));
  ctx_->start(std::move(rt));
  ctx_->start_io(std::move(io));
  ctx_->start_network(std::move(net));
  // Servers the configuration asks for start with the endpoint, as in Broker (not
  // without the rules the configuration asks for).
  if (startup_error_)
    return;
  if (auto p = conf.web_socket_port(); p != 0)
    if (auto res = web_socket_listen(conf.web_socket_address(), p); !res)
      startup_error_ = naming_options(res.error_value(), "broker.web-socket.port",
                                      "broker.web-socket.address");
  if (!startup_error_) {
    auto zs = internal::read_zeromq_settings(conf);
    // Node mode: a node of an existing forwarder (zeromq/node_client.hh); it refuses the
    // forwarder's ports too (the modes exclude each other) and bad endpoints or keys.
    if (internal::zeromq::wants_node_mode(zs)) {
      auto name = ops.endpoint_name.empty() ? std::string{"broker-node"} : ops.endpoint_name;
      if (auto nc = internal::zeromq::node_client::start(*ctx_->io(), zs, ctx_->runtime(),
                                                         ctx_->next_id(), name);
          !nc) {
        startup_error_ = nc.error_value();
      } else {
        ctx_->io()->get_logger().write(
          internal::log_level::info, "zeromq",
          "joining the forwarder as a node: XPUB to " + zs.connect_xpub + ", XSUB to "
            + zs.connect_xsub + ", node id " + zs.node_id
            + (zs.client_secret_key.empty() ? ", NULL" : ", CURVE"));
        ctx_->set_zeromq(*nc);
        std::weak_ptr<internal::zeromq::server> weak_zs = *nc;
        ctx_->runtime()->run([weak_zs](core_state& st) {
          if (auto z = weak_zs.lock())
            z->update_filter(st.announcement_for(0));
        });
      }
    } else if (zs.xsub_port != 0 || zs.xpub_port != 0) {
      if (auto srv = internal::zeromq::server::start(*ctx_->io(), zs, ctx_->runtime(),
                                                     ctx_->next_id(), ctx_->security());
          !srv) {
        startup_error_ = srv.error_value();
      } else {
        auto& lg = ctx_->io()->get_logger();
        auto where = [&](uint16_t port) {
          return port == 0 ? std::string{"off"} : internal::address_text(zs.address, port);
        };
        auto sockets = "XSUB " + where((*srv)->xsub_port()) + ", XPUB " + where((*srv)->xpub_port());
        lg.write(internal::log_level::info, "zeromq",
                 "forwarder listening: " + sockets + ", node id " + zs.node_id
                   + (zs.server_secret_key.empty() ? ", NULL (no authentication)" : ", CURVE"));
        // Like the other listeners' exposure lines (security/exposure.hh): a forwarder
        // that other hosts reach without CURVE lets anyone publish and subscribe.
        if (zs.server_secret_key.empty()
            && internal::security::reach_of(zs.address) != internal::security::reach::loopback)
          lg.write(internal::log_level::warning, "security",
                   "zeromq (" + sockets + ") is reachable from other hosts with ZMTP NULL: anyone who connects "
                       "may publish and subscribe; set "
                       "broker.zeromq.curve-server-secret-key to require CURVE");
        ctx_->set_zeromq(*srv);
        // The bridge subscribes to what the node's other handlers want (and follows it).
        std::weak_ptr<internal::zeromq::server> weak_zs = *srv;
        ctx_->runtime()->run([weak_zs](core_state& st) {
          if (auto z = weak_zs.lock())
            z->update_filter(st.announcement_for(0));
        });
      }
    }
  }
  if (!startup_error_)
    if (auto p = conf.metrics_port(); p != 0)
      if (auto res = metrics_listen(conf.metrics_address(), p); !res)
        startup_error_ = naming_options(res.error_value(), "broker.metrics.port",
                                        "broker.metrics.address");
}

namespace {


expected<uint16_t> start_http(internal::endpoint_context& ctx,
                              const std::shared_ptr<internal::endpoint_context>& shared,
                              const std::string& address, uint16_t port, bool web_socket) {
  auto io = ctx.io();
  auto rt = ctx.runtime();
  if (!io || !rt)
    return error{ec::shutting_down, "the endpoint has shut down"};
  const auto& conf = ctx.config();
  internal::http_options opts;
  opts.web_socket = web_socket;
  opts.metrics = !web_socket;
  if (!web_socket) {
    auto ops = internal::read_operations_settings(conf);
    opts.status_page = ops.status_page;
    opts.endpoint_name = ops.endpoint_name;
    opts.handler_series_limit = ops.handler_series_limit;
    opts.probe = ctx.probe();
  }
  opts.node = ctx.id();
  opts.version = BROKER_VERSION_STRING;
  opts.buffer_size = conf.web_socket_buffer_size();
  opts.policy = conf.web_socket_overflow_policy();
  opts.max_depth = conf.max_nesting_depth();
  opts.max_clients = conf.web_socket_max_clients();
  opts.max_message_size = conf.web_socket_max_message_size();
  opts.handshake_timeout_ms = conf.web_socket_handshake_timeout();
  opts.max_subscriptions = conf.web_socket_max_subscriptions();
  opts.max_control_bytes = conf.max_pending_control_bytes();
  opts.ping_interval_ms = internal::read_operations_settings(conf).ping_interval_ms;
  if (web_socket)
    opts.access = ctx.security();
  auto srv = internal::http_server::start(*io, rt, [shared] { return shared->next_id(); },
                                          address, port, opts);
  if (!srv)
    return listen_error(srv.error_value(), web_socket ? "WebSocket clients" : "metrics",
                        address, port);
  auto bound = (*srv)->port();
  io->get_logger().write(internal::log_level::info, web_socket ? "web-socket" : "metrics",
                         "listening on " + internal::address_text(address, bound));
  log_exposure(*io, web_socket ? internal::security::service::web_socket
                               : internal::security::service::metrics,
               address, bound, ctx.security().get());
  ctx.add_server(std::move(*srv));
  return bound;
}

} // namespace

expected<uint16_t> endpoint::web_socket_listen(const std::string& address, uint16_t port) {
  return start_http(*ctx_, ctx_, address, port, true);
}

expected<uint16_t> endpoint::metrics_listen(const std::string& address, uint16_t port) {
  return start_http(*ctx_, ctx_, address, port, false);
}

const error& endpoint::startup_error() const noexcept {
  return startup_error_;
}

endpoint::~endpoint() {
  shutdown();
}

const endpoint_id& endpoint::node_id() const noexcept {
  return ctx_->id();
}

const configuration& endpoint::config() const noexcept {
  return ctx_->config();
}

error endpoint::publish(topic t, data value) {
  return publish(data_message{std::move(t), std::move(value)});
}

error endpoint::publish(data_message msg) {
  if (is_reserved_topic(msg.topic()))
    return reserved_topic(msg.topic());
  if (!own_->publish(&msg, 1, std::chrono::milliseconds{-1}))
    return shutting_down();
  return {};
}

error endpoint::publish(std::vector<data_message> batch) {
  for (auto& msg : batch)
    if (is_reserved_topic(msg.topic()))
      return reserved_topic(msg.topic());
  if (!own_->publish(batch, std::chrono::milliseconds{-1}))
    return shutting_down();
  return {};
}

expected<publisher> endpoint::make_publisher(topic t, size_t capacity) {
  if (t.is_reserved())
    return reserved_topic(t.string());
  auto rt = ctx_->runtime();
  if (!rt)
    return shutting_down();
  if (capacity == 0)
    capacity = ctx_->config().publisher_buffer_size();
  return publisher{ctx_, attach_source(*rt, ctx_->next_id()), std::move(t), capacity};
}

subscriber endpoint::make_subscriber(filter_type filter, queue_options opts) {
  auto id = ctx_->next_id();
  auto queue = attach_queue(*ctx_, id, handler_kind::subscriber, filter, opts);
  return subscriber{ctx_, std::move(queue), id, std::move(filter)};
}

status_subscriber endpoint::make_status_subscriber(bool receive_statuses, queue_options opts) {
  filter_type filter{topic{topic::errors}};
  if (receive_statuses)
    filter.emplace_back(topic::statuses);
  // Events are rare and must never stall the core: without an explicit choice, a full
  // status queue drops its oldest event (counted) instead of blocking.
  if (!opts.policy)
    opts.policy = overflow_policy::drop_oldest;
  return status_subscriber{make_subscriber(std::move(filter), opts)};
}

hub endpoint::make_hub(filter_type filter, queue_options opts) {
  auto id = ctx_->next_id();
  auto queue = attach_queue(*ctx_, id, handler_kind::hub, filter, opts);
  subscriber sub{ctx_, std::move(queue), id, std::move(filter)};
  std::shared_ptr<internal::local_source> src; // Stays null after shutdown.
  if (auto rt = ctx_->runtime())
    src = attach_source(*rt, id);
  return hub{std::move(sub), std::move(src)};
}

filter_type endpoint::filter() const {
  if (auto rt = ctx_->runtime())
    if (auto result = rt->call([](core_state& st) { return st.filter(); }))
      return std::move(*result);
  return {};
}

endpoint_metrics endpoint::metrics() const {
  if (auto rt = ctx_->runtime())
    if (auto result = rt->call([](core_state& st) { return st.metrics(); }))
      return *result;
  return {};
}

expected<uint16_t> endpoint::listen(const std::string& address, uint16_t port) {
  auto net = ctx_->network();
  if (!net)
    return shutting_down();
  auto result = net->listen(address, port);
  if (auto io = ctx_->io(); result && io)
    log_exposure(*io, internal::security::service::peering, address, *result,
                 ctx_->security().get());
  return result;
}

bool endpoint::peer(const std::string& host, uint16_t port, timespan retry) {
  auto net = ctx_->network();
  if (!net)
    return false;
  auto result = std::make_shared<std::promise<error>>();
  auto future = result->get_future();
  net->peer(host, port, retry, [result](error err) { result->set_value(std::move(err)); });
  // The manager always reports (success, failure, or shutting_down), so this ends.
  return !future.get();
}

void endpoint::peer_nosync(const std::string& host, uint16_t port, timespan retry) {
  if (auto net = ctx_->network())
    net->peer(host, port, retry, nullptr);
}

bool endpoint::unpeer(const std::string& host, uint16_t port) {
  auto net = ctx_->network();
  return net && net->unpeer(host, port);
}

std::vector<peer_info> endpoint::peers() const {
  std::vector<peer_info> result;
  if (auto net = ctx_->network())
    for (auto& rec : net->peers())
      result.push_back(peer_info{endpoint_info{rec.id, network_info{rec.address, rec.port, 0}},
                                 rec.outbound});
  return result;
}

filter_type endpoint::peer_subscriptions() const {
  filter_type result;
  if (auto rt = ctx_->runtime())
    if (auto xs = rt->call([](core_state& st) { return st.peer_filters(); }))
      for (auto& [id, f] : *xs)
        result.insert(result.end(), f.begin(), f.end());
  minimize(result);
  return result;
}

error endpoint::reload_security() {
  auto sec = ctx_->security();
  if (!sec)
    return shutting_down();
  return sec->reload();
}

void endpoint::log(log_severity level, std::string_view component,
                   std::string_view message) const {
  auto internal_level = internal::log_level::info;
  switch (level) {
    case log_severity::error:
      internal_level = internal::log_level::error;
      break;
    case log_severity::warning:
      internal_level = internal::log_level::warning;
      break;
    case log_severity::info:
      break;
    case log_severity::debug:
      internal_level = internal::log_level::debug;
      break;
  }
  if (auto io = ctx_->io())
    io->get_logger().write(internal_level, component, message);
  else
    internal::default_logger().write(internal_level, component, message);
}

void endpoint::shutdown() {
  for (auto& srv : ctx_->stop_servers())
    srv->stop();
  if (auto zs = ctx_->stop_zeromq())
    zs->stop();
  // A round trip through the core's mailbox: the tasks posted before this call (a
  // subscription, a peering's routing update) have run when it returns. Published messages
  // are already in the peers' send queues: publishing routes them.
  if (auto rt = ctx_->runtime())
    rt->run([](core_state&) {});
  // Stores stop before the actor system goes away (it waits for every actor).
  for (auto& fe : ctx_->stop_stores())
    fe->stop();
  // Network first: peers get BYE while the core can still hand them queued messages.
  if (auto net = ctx_->stop_network())
    net->shutdown();
  if (auto rt = ctx_->stop())
    rt->shutdown();
  // Last: nothing posts to the sockets' strands any more.
  if (auto io = ctx_->stop_io())
    io->stop();
  own_->close();
}

namespace {

error check_store_name(const std::string& name) {
  if (name.empty())
    return error{ec::invalid_topic, "a store name must not be empty"};
  if (is_reserved_topic(name))
    return error{ec::invalid_topic, "store name \"" + name + "\" starts with the reserved <$>"};
  return {};
}

internal::store_settings store_settings_of(const configuration& cfg) {
  internal::store_settings st;
  st.heartbeat_interval = std::chrono::milliseconds{cfg.store_heartbeat_interval()};
  st.timeout_intervals = static_cast<uint32_t>(cfg.store_timeout_intervals());
  st.request_timeout = std::chrono::milliseconds{cfg.store_request_timeout()};
  st.probe_timeout = std::chrono::milliseconds{cfg.store_master_probe_timeout()};
  st.tick_interval = std::chrono::milliseconds{cfg.store_tick_interval()};
  return st;
}

uint64_t random_uid() {
  // Two endpoint ids' worth of randomness, folded: unique per store incarnation.
  auto id = endpoint_id::random();
  uint64_t result = 0;
  for (auto b : id.bytes())
    result = result * 131 + static_cast<uint8_t>(b);
  return result == 0 ? 1 : result;
}

} // namespace

expected<store> endpoint::attach_master(const std::string& name, backend type,
                                        const backend_options& opts) {
  if (auto err = check_store_name(name))
    return err;
  auto rt = ctx_->runtime();
  if (!rt)
    return shutting_down();
  if (ctx_->has_master(name))
    return error{ec::master_exists, "store " + name + " already has a master on this endpoint"};
  auto kind = type == backend::sqlite ? internal::backend_kind::sqlite
                                      : internal::backend_kind::memory;
  auto be = internal::make_backend(kind, opts);
  if (!be)
    return be.error_value();
  const auto& cfg = ctx_->config();
  auto st = store_settings_of(cfg);
  auto id = ctx_->next_id();
  auto fe = std::make_shared<internal::store_frontend>(name, true, id,
                                                       internal::entity_id{node_id(), id},
                                                       st.request_timeout);
  if (!ctx_->add_store(fe))
    return error{ec::master_exists, "store " + name + " already has a master on this endpoint"};
  auto backend_ptr = std::make_shared<std::unique_ptr<internal::store_backend>>(std::move(*be));
  internal::entity_id self{node_id(), random_uid()};
  auto started = internal::spawn_store(
    *rt, id, handler_kind::store_master, internal::store_topics(name, true),
    cfg.store_buffer_size(), st.tick_interval, fe,
    [name, self, backend_ptr, st](internal::store_env& env) {
      return internal::make_master_logic(name, self, std::move(*backend_ptr), st, env);
    });
  if (!started) {
    ctx_->remove_store(fe);
    return shutting_down();
  }
  // Wait for the probe: another master answers within the probe timeout or never.
  auto deadline = std::chrono::steady_clock::now() + st.probe_timeout + st.request_timeout;
  for (;;) {
    auto x = fe->query([](internal::store_logic& logic, timestamp, internal::store_reply reply) {
      if (logic.failure())
        reply(logic.failure());
      else
        reply(data{logic.ready()});
    }, st.request_timeout);
    if (!x) {
      fe->stop();
      rt->post([id](core_state& s) {
        s.remove_handler(id);
        s.remove_source(id);
      });
      ctx_->remove_store(fe);
      return x.error_value();
    }
    if (get<bool>(*x))
      break;
    if (std::chrono::steady_clock::now() >= deadline) {
      fe->stop();
      ctx_->remove_store(fe);
      return error{ec::request_timeout, "store " + name + ": the master did not start"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return store{fe};
}

expected<store> endpoint::attach_clone(const std::string& name) {
  if (auto err = check_store_name(name))
    return err;
  auto rt = ctx_->runtime();
  if (!rt)
    return shutting_down();
  const auto& cfg = ctx_->config();
  auto st = store_settings_of(cfg);
  auto id = ctx_->next_id();
  auto fe = std::make_shared<internal::store_frontend>(name, false, id,
                                                       internal::entity_id{node_id(), id},
                                                       st.request_timeout);
  ctx_->add_store(fe);
  internal::entity_id self{node_id(), random_uid()};
  auto started = internal::spawn_store(
    *rt, id, handler_kind::store_clone, internal::store_topics(name, false),
    cfg.store_buffer_size(), st.tick_interval, fe,
    [name, self, st](internal::store_env& env) {
      return internal::make_clone_logic(name, self, st, env);
    });
  if (!started) {
    ctx_->remove_store(fe);
    return shutting_down();
  }
  return store{fe};
}

bool endpoint::is_shut_down() const noexcept {
  return ctx_->runtime() == nullptr;
}

} // namespace broker
