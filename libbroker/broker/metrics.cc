#include "broker/metrics.hh"

namespace broker {

std::string_view to_string(handler_kind x) noexcept {
  switch (x) {
    case handler_kind::subscriber:
      return "subscriber";
    case handler_kind::hub:
      return "hub";
    case handler_kind::peer:
      return "peer";
    case handler_kind::web_socket:
      return "web_socket";
    case handler_kind::store_master:
      return "store_master";
    case handler_kind::store_clone:
      return "store_clone";
  }
  return "unknown";
}

namespace {

constexpr overflow_policy all_policies[] = {overflow_policy::block, overflow_policy::drop_oldest,
                                            overflow_policy::drop_newest,
                                            overflow_policy::disconnect};

void header(std::string& out, std::string_view name, std::string_view type,
            std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, std::string_view name, std::string_view labels, uint64_t value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

std::string kind_label(handler_kind k) {
  return "kind=\"" + std::string{to_string(k)} + "\"";
}

} // namespace

std::string to_prometheus(const endpoint_metrics& m) {
  std::string out;
  auto per_kind = [&](std::string_view name, std::string_view type, std::string_view help,
                      uint64_t handler_kind_metrics::*field) {
    header(out, name, type, help);
    for (size_t i = 0; i < num_handler_kinds; ++i) {
      auto k = static_cast<handler_kind>(i);
      sample(out, name, kind_label(k), m.kinds[i].*field);
    }
  };
  per_kind("broker_connections", "gauge", "Handlers attached to the core, by kind.",
           &handler_kind_metrics::handlers);
  per_kind("broker_buffered_messages", "gauge", "Messages waiting in handler queues, by kind.",
           &handler_kind_metrics::buffered);
  per_kind("broker_delivered_messages_total", "counter",
           "Messages put into handler queues, by kind.", &handler_kind_metrics::delivered);
  per_kind("broker_disconnects_total", "counter",
           "Handlers closed by the disconnect overflow policy, by kind.",
           &handler_kind_metrics::disconnects);
  per_kind("broker_limit_disconnects_total", "counter",
           "Connections closed because they exceeded a budget (subscriptions, unread control "
           "output), by kind.",
           &handler_kind_metrics::limit_disconnects);
  header(out, "broker_dropped_messages_total", "counter",
         "Messages dropped by an overflow policy, by handler kind and policy.");
  for (size_t i = 0; i < num_handler_kinds; ++i)
    for (auto p : all_policies)
      sample(out, "broker_dropped_messages_total",
             kind_label(static_cast<handler_kind>(i)) + ",policy=\"" + std::string{to_string(p)}
               + "\"",
             m.kinds[i].dropped[static_cast<size_t>(p)]);
  header(out, "broker_processed_messages_total", "counter",
         "Messages routed by the core, by message type.");
  sample(out, "broker_processed_messages_total", "type=\"data\"", m.processed);
  header(out, "broker_unrouted_messages_total", "counter", "Messages nobody subscribed to.");
  sample(out, "broker_unrouted_messages_total", "", m.unrouted);
  header(out, "broker_duplicate_messages_total", "counter",
         "Copies from peers suppressed because they arrived over a second path.");
  sample(out, "broker_duplicate_messages_total", "", m.duplicates);
  header(out, "broker_out_of_order_messages_total", "counter",
         "Messages from peers dropped because a newer one of the same origin was already "
         "routed (per-origin order).");
  sample(out, "broker_out_of_order_messages_total", "", m.out_of_order);
  header(out, "broker_suspended_sources", "gauge",
         "Sources parked because a block-policy sink is full.");
  sample(out, "broker_suspended_sources", "", m.suspended_sources);
  header(out, "broker_suspensions_total", "counter", "Times a source was parked.");
  sample(out, "broker_suspensions_total", "", m.suspensions);
  return out;
}

} // namespace broker
