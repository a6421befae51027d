#include "broker/internal/config/zeromq_options.hh"

#include <random>

#include <unistd.h>

namespace broker::internal {

namespace {

constexpr uint64_t max_queue = 1u << 24;
constexpr uint64_t max_heartbeat_ms = 3'600'000;

option_info row(std::string key, option_type type, std::string def, std::string help) {
  option_info info;
  info.key = std::move(key);
  info.type = type;
  info.default_value = std::move(def);
  info.help = std::move(help);
  return info;
}

option_info port_row(std::string key, std::string env, std::string help) {
  auto info = row(std::move(key), option_type::port, "0", std::move(help));
  info.env = std::move(env);
  return info;
}

option_info count_row(std::string key, uint64_t def, uint64_t min, uint64_t max,
                      std::string help) {
  auto info = row(std::move(key), option_type::count, std::to_string(def), std::move(help));
  info.min = min;
  info.max = max;
  return info;
}

option_info secret_row(std::string key, std::string help) {
  auto info = row(std::move(key), option_type::string, "", std::move(help));
  info.secret = true;
  return info;
}

std::string generated_node_id(const configuration& cfg) {
  // Zeek's own form: brokernode_<name>_<host>_<pid>_<random>.
  std::string name = "broker";
  if (auto x = cfg.get_string("broker.metrics.endpoint-name"); x && !x->empty())
    name = *x;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0)
    host[0] = '\0';
  std::random_device rd;
  std::string result = "brokernode_" + name + "_" + host + "_" + std::to_string(getpid()) + "_";
  static constexpr char digits[] = "0123456789abcdef";
  for (int i = 0; i < 8; ++i)
    result += digits[rd() % 16];
  return result;
}

} // namespace

void append_zeromq_options(std::vector<option_info>& table) {
  table.push_back(row("broker.zeromq.address", option_type::string, "127.0.0.1",
                      "address the ZeroMQ forwarder sockets bind to (Zeek: the host of "
                      "listen_xsub_endpoint / listen_xpub_endpoint)"));
  table.push_back(port_row("broker.zeromq.xsub-port", "BROKER_ZEROMQ_XSUB_PORT",
                           "TCP port of the forwarder's XSUB socket, where Zeek nodes' XPUBs "
                           "connect and publish (Zeek: listen_xsub_endpoint, 5556); 0: off"));
  table.push_back(port_row("broker.zeromq.xpub-port", "BROKER_ZEROMQ_XPUB_PORT",
                           "TCP port of the forwarder's XPUB socket, where Zeek nodes' XSUBs "
                           "connect and subscribe (Zeek: listen_xpub_endpoint, 5555); 0: off"));
  table.push_back(secret_row("broker.zeromq.curve-server-secret-key",
                             "Z85 CURVE secret key of the forwarder sockets; set: CURVE is "
                             "required on both (Zeek: curve_server_secretkey)"));
  table.push_back(row("broker.zeromq.curve-server-public-key", option_type::string, "",
                      "Z85 CURVE public key of the forwarder sockets; empty: derived from the "
                      "secret key; node mode: the forwarder's key, which turns CURVE on "
                      "(Zeek: curve_server_publickey)"));
  table.push_back(secret_row("broker.zeromq.curve-client-secret-key",
                             "Z85 CURVE secret key of this node's connections in node mode, "
                             "needed with the forwarder's curve-server-public-key (Zeek: "
                             "curve_client_secretkey)"));
  table.push_back(row("broker.zeromq.curve-client-public-key", option_type::string, "",
                      "Z85 CURVE public key the Zeek nodes share (Zeek: curve_client_publickey); "
                      "with CURVE on, the forwarder admits only a node with this key (others "
                      "are refused, ZAP status 400, as by Zeek's forwarder); empty: any "
                      "client key; node mode: ours, checked against curve-client-secret-key"));
  table.push_back(row("broker.zeromq.connect-xpub", option_type::string, "",
                      "node mode: tcp://host:port of an existing forwarder's XSUB that our "
                      "XPUB connects to (Zeek: connect_xpub_endpoint, port 5556); set with "
                      "connect-xsub, not with xsub-port / xpub-port; empty: off"));
  table.push_back(row("broker.zeromq.connect-xsub", option_type::string, "",
                      "node mode: tcp://host:port of an existing forwarder's XPUB that our "
                      "XSUB connects to (Zeek: connect_xsub_endpoint, port 5555); set with "
                      "connect-xpub; empty: off"));
  table.push_back(row("broker.zeromq.node-id", option_type::string, "",
                      "this node's ZeroMQ node id (the sender frame of its events; node mode: "
                      "it subscribes to zeek.cluster.nodeid.<id>.); empty: generated as Zeek "
                      "does (brokernode_<name>_<host>_<pid>_<random>)"));
  table.push_back(count_row("broker.zeromq.buffer-size", default_zeromq_buffer_size, 1,
                            max_queue,
                            "messages queued per ZeroMQ connection before its overflow "
                            "policy applies (Zeek: xpub_sndhwm)"));
  auto policy = row("broker.zeromq.overflow-policy", option_type::choice, "drop_oldest",
                    "what happens to a message for a ZeroMQ connection whose queue is full");
  policy.choices = {"drop_oldest", "drop_newest", "disconnect"};
  table.push_back(std::move(policy));
  table.push_back(count_row("broker.zeromq.heartbeat-interval", 0, 0, max_heartbeat_ms,
                            "milliseconds between ZMTP PINGs on a ZeroMQ connection; one that "
                            "stays silent for three intervals is closed; 0: no heartbeats "
                            "(libzmq's default, ZMQ_HEARTBEAT_IVL)"));
  table.push_back(count_row("broker.zeromq.connect-timeout", 10'000, 100, max_heartbeat_ms,
                            "node mode: milliseconds one attempt to connect to the forwarder "
                            "(name lookup and TCP connect) may take before it counts as failed "
                            "and the next is scheduled (libzmq: ZMQ_CONNECT_TIMEOUT, the OS's 2 "
                            "minutes by default)"));
}

zeromq_settings read_zeromq_settings(const configuration& cfg) {
  zeromq_settings s;
  auto str = [&](const char* key, std::string& out) {
    if (auto x = cfg.get_string(key))
      out = *x;
  };
  str("broker.zeromq.address", s.address);
  if (auto x = cfg.get_count("broker.zeromq.xsub-port"))
    s.xsub_port = static_cast<uint16_t>(*x);
  if (auto x = cfg.get_count("broker.zeromq.xpub-port"))
    s.xpub_port = static_cast<uint16_t>(*x);
  str("broker.zeromq.curve-server-secret-key", s.server_secret_key);
  str("broker.zeromq.curve-server-public-key", s.server_public_key);
  str("broker.zeromq.curve-client-secret-key", s.client_secret_key);
  str("broker.zeromq.curve-client-public-key", s.client_public_key);
  str("broker.zeromq.connect-xpub", s.connect_xpub);
  str("broker.zeromq.connect-xsub", s.connect_xsub);
  str("broker.zeromq.node-id", s.node_id);
  if (s.node_id.empty())
    s.node_id = generated_node_id(cfg);
  if (auto x = cfg.get_count("broker.zeromq.buffer-size"))
    s.buffer_size = static_cast<size_t>(*x);
  if (auto x = cfg.get_string("broker.zeromq.overflow-policy"))
    if (auto p = parse_overflow_policy(*x))
      s.policy = *p;
  if (auto x = cfg.get_count("broker.zeromq.heartbeat-interval"))
    s.heartbeat_interval_ms = static_cast<size_t>(*x);
  if (auto x = cfg.get_count("broker.zeromq.connect-timeout"))
    s.connect_timeout_ms = static_cast<size_t>(*x);
  return s;
}

} // namespace broker::internal
