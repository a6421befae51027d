#include "status_table.hh"

#include "modes.hh"

#include "address.hh"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace broker_node {

namespace {

using json = nlohmann::json;

/// Time for connecting, sending and reading the whole answer.
constexpr auto request_timeout = std::chrono::seconds{10};

/// A status document larger than this is refused (a node with 100 000 clients is ~50 MiB).
constexpr size_t max_answer_size = 256u * 1024u * 1024u;

/// How long to wait for a second request when the first one got no rates.
constexpr auto rate_pause = std::chrono::milliseconds{1100};

/// Entries a table prints before it says how many more there are.
constexpr size_t max_rows = 50;

int fail(int code, const std::string& what) {
  std::fprintf(stderr, "broker-node: --status: %s\n", what.c_str());
  return code;
}

/// GETs `path` from host:port; the body on 200, else an error text in `err`.
bool http_get(const std::string& host, const std::string& port, const std::string& path,
              std::string& body, std::string& err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (auto rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    err = "cannot resolve " + host + ": " + gai_strerror(rc);
    return false;
  }
  int fd = -1;
  for (auto* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd >= 0 && ::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    err = "cannot connect to " + host + ":" + port;
    return false;
  }
  timeval tv{static_cast<time_t>(request_timeout.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  auto request = "GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + port
                 + "\r\nAccept: application/json\r\nConnection: close\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL)
      != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    err = "cannot send the request";
    return false;
  }
  std::string answer;
  auto deadline = std::chrono::steady_clock::now() + request_timeout;
  char buf[65536];
  for (;;) {
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
      break;
    answer.append(buf, static_cast<size_t>(n));
    if (answer.size() > max_answer_size || std::chrono::steady_clock::now() > deadline) {
      ::close(fd);
      err = "the answer is too large or too slow";
      return false;
    }
  }
  ::close(fd);
  auto end = answer.find("\r\n\r\n");
  if (answer.compare(0, 9, "HTTP/1.1 ") != 0 || end == std::string::npos) {
    err = "not an HTTP answer from " + host + ":" + port;
    return false;
  }
  body = answer.substr(end + 4);
  if (answer.compare(9, 3, "200") != 0) {
    err = "HTTP " + answer.substr(9, answer.find("\r\n") - 9) + ": " + body.substr(0, 200);
    return false;
  }
  return true;
}

std::string text(const json& x) {
  if (x.is_null())
    return "-";
  if (x.is_string())
    return x.get<std::string>();
  if (x.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", x.get<double>());
    return buf;
  }
  return x.dump();
}

/// The ADDRESS column: address and port as every tool prints them (tools/address.hh).
std::string address_cell(const json& x) {
  const auto& host = x["address"];
  const auto& port = x["port"];
  if (!host.is_string() || !port.is_number_unsigned() || port.get<uint64_t>() > 65535)
    return text(host) + ":" + text(port);
  return broker_tools::format_address(host.get<std::string>(),
                                      static_cast<uint16_t>(port.get<uint64_t>()));
}

std::string join(const json& xs) {
  if (!xs.is_array())
    return "-";
  std::string result;
  for (auto& x : xs) {
    if (!result.empty())
      result += ' ';
    auto s = x.get<std::string>();
    result += s.empty() ? "\"\"" : s;
  }
  return result.empty() ? "-" : result;
}

std::string queue(const json& q) {
  if (!q.is_object())
    return "-";
  return text(q["size"]) + "/" + text(q["capacity"]) + " " + text(q["policy"]);
}

/// Prints rows as columns padded to the widest cell; the last column is not padded.
void table(const std::string& title, const std::vector<std::string>& head,
           const std::vector<std::vector<std::string>>& rows, size_t total) {
  std::printf("\n%s (%zu)\n", title.c_str(), total);
  if (rows.empty())
    return;
  std::vector<size_t> width(head.size());
  for (size_t i = 0; i < head.size(); ++i)
    width[i] = head[i].size();
  for (auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i)
      width[i] = std::max(width[i], row[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = " ";
    for (size_t i = 0; i < cells.size(); ++i) {
      out += ' ';
      out += cells[i];
      if (i + 1 < cells.size())
        out.append(width[i] - cells[i].size(), ' ');
    }
    std::printf("%s\n", out.c_str());
  };
  line(head);
  for (auto& row : rows)
    line(row);
  if (total > rows.size())
    std::printf("  ... and %zu more\n", total - rows.size());
}

/// "host:port", or just the host for an inbound peer (its source port is ephemeral).
std::string where(const json& x) {
  if (x.value("port", json{}).is_null())
    return text(x["address"]);
  return address_cell(x);
}

void print_tables(const json& st) {
  auto& e = st["endpoint"];
  auto name = e["name"].get<std::string>();
  if (!name.empty())
    name = " (" + name + ")";
  std::printf("node %s%s, version %s, up %.0f s\n", text(e["id"]).c_str(), name.c_str(),
              text(e["version"]).c_str(), e["uptime_seconds"].get<double>());
  auto& t = st["totals"];
  auto& r = st["rates"];
  std::printf("processed %s (%s/s), delivered %s (%s/s), dropped %s (%s/s), unrouted %s, "
              "duplicates %s, suspended sources %s\n",
              text(t["processed"]).c_str(), text(r["processed"]).c_str(),
              text(t["delivered"]).c_str(), text(r["delivered"]).c_str(),
              text(t["dropped"]).c_str(), text(r["dropped"]).c_str(),
              text(t["unrouted"]).c_str(), text(t["duplicates"]).c_str(),
              text(t["suspended_sources"]).c_str());
  std::vector<std::vector<std::string>> rows;
  for (auto& p : st["peers"]["items"])
    rows.push_back({text(p["id"]), where(p),
                    text(p["direction"]), text(p["tls"]), text(p["state"]), queue(p["queue"]),
                    text(p["messages_in"]), text(p["messages_out"]), text(p["dropped"]),
                    join(p["subscriptions"])});
  for (auto& d : st["peers"]["dials"])
    rows.push_back({text(d.value("id", json{})), address_cell(d),
                    text(d["direction"]), "-", text(d["state"]), "-", "-", "-", "-", "-"});
  table("peers", {"ID", "ADDRESS", "DIR", "TLS", "STATE", "QUEUE", "IN", "OUT", "DROPPED",
                  "SUBSCRIPTIONS"},
        rows, st["peers"]["total"].get<size_t>() + st["peers"]["dials"].size());
  for (auto& d : st["peers"]["dials"])
    if (auto err = d.value("last_error", json{}); err.is_string())
      std::printf("  %s: %s\n", where(d).c_str(), err.get<std::string>().c_str());
  rows.clear();
  for (auto& c : st["clients"]["items"]) {
    if (rows.size() == max_rows)
      break;
    rows.push_back({text(c["id"]), address_cell(c), text(c.value("app", json{})),
                    text(c["tls"]), queue(c["queue"]), text(c["messages_in"]),
                    text(c["messages_out"]),
                    text(c["dropped"]), join(c.value("subscriptions", json{}))});
  }
  table("WebSocket clients", {"ID", "ADDRESS", "APP", "TLS", "QUEUE", "IN", "OUT", "DROPPED",
                              "SUBSCRIPTIONS"},
        rows, st["clients"]["total"].get<size_t>());
  auto& cl = st["clients"];
  if (cl.contains("rejected_inputs")) {
    std::string turned_away;
    uint64_t away = 0;
    for (auto& [reason, n] : cl["rejected_clients"].items()) {
      if (n.get<uint64_t>() == 0)
        continue;
      away += n.get<uint64_t>();
      turned_away += (turned_away.empty() ? "" : ", ") + reason + " " + text(n);
    }
    std::printf("  turned away %llu%s, rejected messages %s, ping timeouts %s\n",
                static_cast<unsigned long long>(away),
                turned_away.empty() ? "" : (" (" + turned_away + ")").c_str(),
                text(cl["rejected_inputs"]).c_str(), text(cl["ping_timeouts"]).c_str());
  }
  if (st.contains("zeromq")) {
    auto& z = st["zeromq"];
    bool node_mode = z.value("mode", std::string{}) == "node";
    rows.clear();
    for (auto& c : z["connections"]) {
      if (rows.size() == max_rows)
        break;
      // Node mode: the forwarder's sockets we connect to, and how they fare.
      if (node_mode)
        rows.push_back({text(c["side"]), text(c.value("endpoint", json{})),
                        text(c.value("state", json{})), text(c.value("connects", json{})),
                        text(c["queued"]), text(c["messages_in"]), text(c["messages_out"]),
                        text(c["dropped"])});
      else
        rows.push_back({text(c["side"]), text(c["peer"]),
                        text(c.value("zeek_node_name", json{})),
                        text(c.value("zeek_node_id", json{})), text(c["queued"]),
                        text(c["messages_in"]), text(c["messages_out"]), text(c["dropped"])});
    }
    if (node_mode) {
      table("ZeroMQ connections (node mode)",
            {"SIDE", "FORWARDER", "STATE", "CONNECTS", "QUEUED", "IN", "OUT", "DROPPED"}, rows,
            z["connections"].size());
      std::printf("  node id %s, reconnects %s, failed attempts %s, failed %s, bridged in %s, "
                  "out %s, not bridged %s, own events dropped %s\n",
                  text(z["node_id"]).c_str(), text(z.value("reconnects", json{})).c_str(),
                  text(z.value("connect_failures", json{})).c_str(), text(z["failed"]).c_str(),
                  text(z["bridged_to_core"]).c_str(), text(z["bridged_from_core"]).c_str(),
                  text(z["not_bridged"]).c_str(), text(z.value("own_events", json{})).c_str());
    } else {
      table("ZeroMQ connections",
            {"SIDE", "PEER", "ZEEK NODE", "NODE ID", "QUEUED", "IN", "OUT", "DROPPED"}, rows,
            z["connections"].size());
      std::printf("  node id %s, XSUB port %s, XPUB port %s, failed %s, bridged in %s, out %s, "
                  "not bridged %s\n",
                  text(z["node_id"]).c_str(), text(z["xsub_port"]).c_str(),
                  text(z["xpub_port"]).c_str(), text(z["failed"]).c_str(),
                  text(z["bridged_to_core"]).c_str(), text(z["bridged_from_core"]).c_str(),
                  text(z["not_bridged"]).c_str());
    }
  }
  rows.clear();
  auto& local = st["local"];
  size_t total = 0;
  for (auto kind : {"subscribers", "hubs", "stores"}) {
    total += local[kind]["total"].get<size_t>();
    for (auto& h : local[kind]["items"])
      rows.push_back({std::string{kind}.substr(0, std::string{kind}.size() - 1),
                      text(h["handler"]), text(h.value("name", json{})), queue(h["queue"]), text(h.value("messages_in", json{})),
                      text(h["messages_out"]), text(h["dropped"]),
                      join(h.value("subscriptions", json{}))});
  }
  table("local", {"KIND", "HANDLER", "NAME", "QUEUE", "IN", "OUT", "DROPPED", "SUBSCRIPTIONS"},
        rows, total);
  rows.clear();
  for (auto& s : local["stores"]["reports"])
    rows.push_back({text(s["name"]), text(s["role"]), text(s["entries"]),
                    text(s["input_channels"]), text(s["output_channels"]),
                    text(s["unacknowledged_updates"]), text(s["out_of_order_updates"])});
  table("stores", {"NAME", "ROLE", "ENTRIES", "IN-CHANNELS", "OUT-CHANNELS", "UNACKED",
                   "OUT-OF-ORDER"},
        rows, rows.size());
  rows.clear();
  for (auto& d : st["drops"])
    rows.push_back({text(d["kind"]), text(d["policy"]), text(d["count"])});
  table("drops", {"KIND", "POLICY", "MESSAGES"}, rows, rows.size());
  // The last few lifecycle events: what happened recently, without reading the log.
  auto events = st.value("events", json::array());
  rows.clear();
  constexpr size_t max_events = 10;
  auto first = events.size() > max_events ? events.size() - max_events : 0;
  for (size_t i = first; i < events.size(); ++i) {
    auto message = text(events[i]["message"]);
    if (auto n = events[i].value("repeats", json{1}); n.is_number() && n.get<uint64_t>() > 1)
      message += " (" + text(n) + " times)";
    rows.push_back({text(events[i]["time"]), text(events[i]["level"]),
                    text(events[i]["component"]), message});
  }
  table(events.size() > rows.size() ? "recent events, the last " + std::to_string(rows.size())
                                        + " of"
                                    : "recent events",
        {"TIME", "LEVEL", "COMPONENT", "MESSAGE"}, rows, rows.size());
}

} // namespace

bool parse_status_url(std::string_view url, std::string& host, std::string& port) {
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, scheme.size()) == scheme)
    url.remove_prefix(scheme.size());
  url = url.substr(0, url.find('/'));
  std::string_view h;
  std::string_view p;
  if (!url.empty() && url.front() == '[') {
    auto close = url.find(']');
    if (close == std::string_view::npos || close + 1 >= url.size() || url[close + 1] != ':')
      return false;
    h = url.substr(1, close - 1);
    p = url.substr(close + 2);
  } else {
    auto colon = url.rfind(':');
    if (colon == std::string_view::npos)
      return false;
    h = url.substr(0, colon);
    p = url.substr(colon + 1);
  }
  if (h.empty() || p.empty() || p.size() > 5
      || !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; })
      || std::stoul(std::string{p}) == 0 || std::stoul(std::string{p}) > 65535)
    return false;
  host = std::string{h};
  port = std::string{p};
  return true;
}

int print_status(std::string_view url, bool as_json) {
  std::string host;
  std::string port;
  if (!parse_status_url(url, host, port))
    return fail(exit_invalid_config,
                "expected http://host:port (a node's metrics server), got \"" + std::string{url}
                  + "\"");
  std::string body;
  std::string err;
  if (!http_get(host, port, "/v1/status", body, err))
    return fail(exit_runtime_failure, err);
  auto st = json::parse(body, nullptr, false);
  if (st.is_discarded() || !st.is_object() || !st.contains("endpoint"))
    return fail(exit_runtime_failure, "the answer is not a node's status");
  // Rates compare with an earlier request; without one (nobody watches the node), ask
  // again a moment later.
  if (st.contains("rates") && st["rates"].value("window_seconds", 0.0) <= 0.0) {
    std::this_thread::sleep_for(rate_pause);
    if (http_get(host, port, "/v1/status", body, err))
      if (auto again = json::parse(body, nullptr, false); again.is_object())
        st = std::move(again);
  }
  if (as_json) {
    std::printf("%s\n", st.dump().c_str());
    return exit_clean;
  }
  try {
    print_tables(st);
  } catch (const json::exception& e) {
    return fail(exit_runtime_failure, std::string{"unexpected status document: "} + e.what());
  }
  std::fflush(stdout);
  return exit_clean;
}

} // namespace broker_node
