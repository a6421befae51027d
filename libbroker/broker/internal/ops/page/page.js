// The live web view of one broker node. Polls GET /v1/status once a second while the page
// is visible (a hidden tab costs the node nothing) and redraws: the mesh (this node, its
// peers with the subscriptions they announced, peerings being dialed and why they wait,
// WebSocket clients and local handlers as groups), queue fill bars, rates with a
// sparkline, stores, drops, totals (each explained on hover), what the access rules refused
// and the node's recent events.
// No libraries, no build step: plain DOM and SVG.
"use strict";

const POLL_MS = 1000;       // One status request per second.
const LIST_LIMIT = 40;      // Entries per list the node sends (fullest queues first).
const HISTORY = 120;        // Samples in the sparkline.
const MAX_SUBS_SHOWN = 3;   // Announced subscriptions printed under a peer.
const MAX_EVENTS = 15;      // Recent events listed, the newest first.

// What each total means, for people who do not know the code.
const TOTALS = {
  processed: ["messages routed", "messages the node took from publishers, peers and clients and routed"],
  processed_commands: ["store commands routed", "data store commands among the routed messages"],
  delivered: ["messages delivered", "messages put into the queues of subscribers, peers and clients"],
  dropped: ["messages dropped", "messages an overflow policy dropped because a queue was full"],
  unrouted: ["without subscribers", "published messages that no subscriber, peer or client wanted (unrouted)"],
  refused: ["refused by access rules", "messages from peers and WebSocket clients that the access rules did not let them publish"],
  duplicates: ["duplicates ignored", "messages that arrived twice over different paths and were dropped once"],
  suspended_sources: ["sources paused now", "publishers, peers or clients not read right now because a queue they feed is full (policy block)"],
  suspensions: ["times a source paused", "how often a source was paused for a full queue since start (suspensions)"],
  routing_updates: ["routing updates from peers", "subscription changes peers sent"],
  pings: ["pings from peers", "liveness pings peers sent"],
  pongs: ["pongs from peers", "answers to our pings"],
};

// What each kind of local handler is.
const KIND_HELP = {
  subscriber: "a subscriber of this process (endpoint::make_subscriber)",
  hub: "a hub: a local publisher and subscriber in one (endpoint::make_hub)",
  store: "a data store of this process",
};
const SVG_NS = "http://www.w3.org/2000/svg";

const history = [];
let timer = null;

function $(id) { return document.getElementById(id); }

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function shortId(id) { return id ? id.slice(0, 8) : "?"; }

// "1 peer", "2 peers".
function plural(n, one, many) { return n + " " + (n === 1 ? one : (many || one + "s")); }

// Where a peer or dial is: host:port, or only the host of an inbound peer (its source port
// is ephemeral and names nothing one could dial).
function where(p) { return p.port === null || p.port === undefined ? p.address : p.address + ":" + p.port; }

function subsText(subs) {
  const shown = (subs || []).slice(0, MAX_SUBS_SHOWN).map((s) => s === "" ? "(all)" : s);
  if ((subs || []).length > MAX_SUBS_SHOWN) shown.push("+" + (subs.length - MAX_SUBS_SHOWN));
  return shown.join(" ");
}

function fmt(x) {
  if (x === null || x === undefined) return "–";
  if (x >= 1e6) return (x / 1e6).toFixed(1) + "M";
  if (x >= 1e4) return (x / 1e3).toFixed(1) + "k";
  return Number.isInteger(x) ? String(x) : x.toFixed(1);
}

function duration(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + (s % 60) + "s";
}

// Green when empty, through yellow, to red when full.
function fillColor(fill) {
  const f = Math.max(0, Math.min(1, fill || 0));
  return "hsl(" + Math.round(120 * (1 - f)) + ", 70%, 42%)";
}

function drawMesh(st) {
  const g = $("mesh");
  g.replaceChildren();
  const cx = 320, cy = 250, radius = 185;
  const peers = st.peers.items;
  const dials = st.peers.dials;
  const around = peers.length + dials.length;
  const nodes = [];
  peers.forEach((p, i) => nodes.push({ kind: "peer", p, i }));
  dials.forEach((p, i) => nodes.push({ kind: "dial", p, i: peers.length + i }));
  const edges = svg("g");
  const layer = svg("g");
  g.append(edges, layer);
  nodes.forEach((n) => {
    const a = -Math.PI / 2 + (2 * Math.PI * n.i) / Math.max(around, 1);
    const x = cx + radius * Math.cos(a), y = cy + radius * Math.sin(a) * 0.82;
    const q = n.p.queue;
    const fill = q ? q.fill : 0;
    edges.append(svg("line", {
      x1: cx, y1: cy, x2: x, y2: y,
      class: "edge" + (n.kind === "dial" ? " dial" : ""),
      stroke: n.kind === "dial" ? "#9aa1b0" : fillColor(fill),
      "stroke-width": n.kind === "dial" ? 2 : 3 + 9 * fill,
    }));
    if (q) {
      edges.append(svg("text", {
        x: (cx + x) / 2 + 6, y: (cy + y) / 2 - 4, "text-anchor": "start", "font-size": 10,
        fill: "#5a6275",
      }, q.size + "/" + q.capacity));
    }
    const attrs = n.kind === "peer"
      ? { class: "node peer", "data-peer": n.p.id, transform: `translate(${x},${y})` }
      : { class: "node dial", "data-dial": n.p.address + ":" + n.p.port,
          transform: `translate(${x},${y})` };
    const node = svg("g", attrs);
    node.append(svg("circle", { r: 32 }));
    node.append(svg("text", { class: "label", y: 4 },
      n.kind === "peer" ? shortId(n.p.id) : n.p.state));
    // Labels go outside the ring, where no edge crosses them.
    const above = y < cy - 1;
    const arrow = n.p.direction === "outbound" ? " →" : n.p.direction === "inbound" ? " ←" : "";
    node.append(svg("text", { y: above ? -40 : 46 }, (n.p.direction === "inbound" ? "from " : "") +
      where(n.p) + arrow));
    if (n.kind === "peer") {
      node.append(svg("text", { class: "subs", y: above ? -54 : 59 },
        subsText(n.p.subscriptions) || "(no subscriptions)"));
      const from = n.p.direction === "inbound"
        ? `it dialed us from port ${n.p.source_port}` : "we dialed it";
      node.append(svg("title", {}, `peer ${n.p.id} (${from})\nTLS: ${n.p.tls}\nin ${n.p.messages_in}, out ${n.p.messages_out}, dropped ${n.p.dropped}`));
    } else if (n.p.last_error) {
      // Why the dial waits: the last attempt's error, cut; the whole of it on hover.
      const why = n.p.last_error.length > 48 ? n.p.last_error.slice(0, 47) + "…" : n.p.last_error;
      node.append(svg("text", { class: "why", y: above ? -54 : 59 }, why));
      node.append(svg("title", {}, `dialing ${where(n.p)}: ${n.p.last_error}`));
    }
    layer.append(node);
  });
  // Groups hanging off this node: WebSocket clients and local handlers.
  const local = st.local;
  const groups = [
    { name: "WebSocket", count: st.clients.total, y: 70 },
    { name: "local", count: local.subscribers.total + local.hubs.total + local.stores.total,
      y: 430 },
  ];
  groups.forEach((grp, i) => {
    const x = i === 0 ? 80 : 560;
    edges.append(svg("line", { x1: cx, y1: cy, x2: x, y2: grp.y, class: "edge",
                               stroke: "#c9ced8", "stroke-width": 2 }));
    const node = svg("g", { class: "node group", "data-group": grp.name,
                            transform: `translate(${x},${grp.y})` });
    node.append(svg("circle", { r: 22 }));
    node.append(svg("text", { class: "label", y: 4 }, String(grp.count)));
    node.append(svg("text", { y: 36 }, grp.name === "local" ? "local handlers" : "WebSocket clients"));
    node.append(svg("title", {}, grp.name === "local"
      ? "subscribers, hubs and stores of this process" : "WebSocket clients of this node"));
    layer.append(node);
  });
  const self = svg("g", { class: "node self", "data-node": st.endpoint.id,
                          transform: `translate(${cx},${cy})` });
  self.append(svg("circle", { r: 34 }));
  self.append(svg("text", { class: "label", y: 4 }, st.endpoint.name || shortId(st.endpoint.id)));
  self.append(svg("title", {}, "this node " + st.endpoint.id));
  layer.append(self);
}

function drawRates(st) {
  const r = st.rates;
  // The first answer has no base to compare with: no rates yet, not rates of 0.
  const known = r.window_seconds > 0;
  $("window").textContent = known
    ? `(last ${Math.max(1, Math.round(r.window_seconds))} s)` : "(measuring…)";
  const box = $("rates");
  box.replaceChildren();
  for (const [name, value] of [["processed/s", r.processed], ["delivered/s", r.delivered],
                               ["dropped/s", r.dropped]]) {
    const d = el("div", { class: "rate" });
    d.append(el("b", {}, known ? fmt(value) : "–"), el("span", { class: "muted" }, name));
    box.append(d);
  }
  if (!known) return;
  history.push({ processed: r.processed, dropped: r.dropped });
  while (history.length > HISTORY) history.shift();
  const spark = $("spark");
  spark.replaceChildren();
  const top = Math.max(1, ...history.map((h) => Math.max(h.processed, h.dropped)));
  for (const [key, color] of [["processed", "#2f6fde"], ["dropped", "#b3261e"]]) {
    const pts = history.map((h, i) =>
      `${(300 * i) / (HISTORY - 1)},${58 - (56 * h[key]) / top}`).join(" ");
    spark.append(svg("polyline", { points: pts, fill: "none", stroke: color, "stroke-width": 1.5 }));
  }
}

function drawQueues(st) {
  const rows = [];
  const add = (kind, list, label, help) =>
    list.items.forEach((h) => rows.push({ kind, h, label: label(h), help: help(h) }));
  add("peer", st.peers, (h) => "peer " + shortId(h.id) + " " + (h.direction === "inbound" ? "from " : "") + where(h),
      (h) => "send queue of peer " + h.id);
  add("client", st.clients, (h) => "client " + (h.app ? h.app + " " : "") + h.address + ":" + h.port,
      (h) => "send queue of WebSocket client " + h.id + (h.app ? " (X-Application-Name " + h.app + ")" : ""));
  add("subscriber", st.local.subscribers, (h) => "local subscriber " + (subsText(h.subscriptions) || "(nothing)"),
      () => KIND_HELP.subscriber);
  add("hub", st.local.hubs, (h) => "local hub " + (subsText(h.subscriptions) || "(nothing)"),
      () => KIND_HELP.hub);
  add("store", st.local.stores, (h) => "store " + (h.name || "?") + " (" + h.role + ")",
      () => KIND_HELP.store);
  rows.sort((a, b) => b.h.queue.fill - a.h.queue.fill);
  const box = $("queues");
  box.replaceChildren();
  if (rows.length === 0) box.append(el("p", { class: "muted" }, "no handlers"));
  for (const r of rows) {
    const q = r.h.queue;
    const d = el("div", { class: "queue", "data-handler": r.h.handler });
    const name = el("div", { class: "name" });
    name.append(el("span", { title: r.help }, r.label),
                el("span", { class: "muted" },
                   `${q.size}/${q.capacity} ${q.policy}` + (r.h.dropped ? `, ${fmt(r.h.dropped)} dropped` : "")));
    const bar = el("div", { class: "bar" });
    const inner = el("div");
    inner.style.width = Math.max(1, 100 * q.fill) + "%";
    inner.style.background = fillColor(q.fill);
    bar.append(inner);
    d.append(name, bar);
    box.append(d);
  }
  const more = st.clients.total - st.clients.items.length;
  if (more > 0) box.append(el("p", { class: "muted" }, "+ " + plural(more, "more WebSocket client")));
}

function drawTables(st) {
  const drops = $("drops").tBodies[0];
  drops.replaceChildren();
  if (st.drops.length === 0) {
    const tr = el("tr");
    tr.append(el("td", { colspan: 3, class: "muted" }, "nothing dropped"));
    drops.append(tr);
  }
  for (const x of st.drops) {
    const tr = el("tr");
    tr.append(el("td", {}, x.kind), el("td", {}, x.policy), el("td", { class: "num" }, fmt(x.count)));
    drops.append(tr);
  }
  const totals = $("totals").tBodies[0];
  totals.replaceChildren();
  // In the order of TOTALS (the node sends them sorted by name), unknown ones last.
  const keys = [...Object.keys(TOTALS).filter((k) => k in st.totals),
                ...Object.keys(st.totals).filter((k) => !(k in TOTALS))];
  const rows = keys.map((k) => [...(TOTALS[k] || [k.replace(/_/g, " "), ""]), st.totals[k]]);
  const cl = st.clients;
  if (cl.rejected_clients) {
    const away = Object.values(cl.rejected_clients).reduce((a, b) => a + b, 0);
    const why = Object.entries(cl.rejected_clients).filter(([, n]) => n > 0)
      .map(([k, n]) => k.replace(/_/g, " ") + " " + n).join(", ");
    rows.push(["WebSocket clients turned away", "bad upgrade, TLS, too many clients, invalid " +
               "X-Application-Name or subscriptions" + (why ? ": " + why : ""), away]);
    rows.push(["client messages rejected", "WebSocket messages answered with an error frame " +
               "(malformed JSON, invalid data)", cl.rejected_inputs]);
    rows.push(["client ping timeouts", "WebSocket clients closed for not answering a ping",
               cl.ping_timeouts]);
  }
  for (const [label, help, v] of rows) {
    const tr = el("tr", { title: help });
    tr.append(el("td", {}, label), el("td", { class: "num" }, fmt(v)));
    totals.append(tr);
  }
  const stores = $("stores").tBodies[0];
  stores.replaceChildren();
  const reports = st.local.stores.reports || [];
  if (reports.length === 0) {
    const tr = el("tr");
    tr.append(el("td", { colspan: 6, class: "muted" }, "no data stores"));
    stores.append(tr);
  }
  for (const x of reports) {
    const tr = el("tr", { "data-store": x.name });
    tr.append(el("td", {}, x.name), el("td", {}, x.role),
              el("td", { class: "num" }, fmt(x.entries)),
              el("td", { class: "num" }, fmt(x.input_channels) + " / " + fmt(x.output_channels)),
              el("td", { class: "num" }, fmt(x.unacknowledged_updates)),
              el("td", { class: "num" }, fmt(x.out_of_order_updates)));
    stores.append(tr);
  }
}

function drawAccess(st) {
  const acc = st.access;
  const body = $("access").tBodies[0];
  body.replaceChildren();
  if (!acc) return;
  $("access-state").textContent = acc.enforcing
    ? `(${plural(acc.identities, "identity", "identities")}, ${plural(acc.rules, "rule")} from ${acc.rules_file})`
    : acc.rules_file ? `(${acc.rules_file} defines no identity: everything allowed)`
    : "(no rules: everything allowed)";
  const rows = acc.refusals || [];
  for (const x of rows) {
    const tr = el("tr");
    tr.append(el("td", {}, x.identity === null ? "(built-in)" : x.identity), el("td", {}, x.rule),
              el("td", { class: "num" }, fmt(x.publishes)),
              el("td", { class: "num" }, fmt(x.subscriptions)),
              el("td", { class: "num" }, fmt(x.deliveries)));
    body.append(tr);
  }
  for (const x of acc.authentication_failures || []) {
    const tr = el("tr", { title: "credentials that matched no identity; throttled: refused " +
                                 "unchecked after too many failures from one address" });
    tr.append(el("td", { colspan: 2 }, `failed ${x.mechanism} authentications` +
                                        (x.throttled ? ` (+ ${fmt(x.throttled)} throttled)` : "")),
              el("td", { colspan: 3, class: "num" }, fmt(x.failures)));
    body.append(tr);
  }
  if (body.rows.length === 0) {
    const tr = el("tr");
    tr.append(el("td", { colspan: 5, class: "muted" }, "nothing refused"));
    body.append(tr);
  }
}

function drawEvents(st) {
  const box = $("events");
  box.replaceChildren();
  const events = (st.events || []).slice(-MAX_EVENTS).reverse();
  if (events.length === 0) box.append(el("li", { class: "muted" }, "nothing yet"));
  for (const e of events) {
    const li = el("li", { class: "event " + e.level });
    li.append(el("span", { class: "muted" }, e.time.slice(11, 19) + " " + e.component + " "),
              el("span", {}, e.message + (e.repeats > 1 ? ` (${e.repeats} times)` : "")));
    box.append(li);
  }
}

function draw(st) {
  const e = st.endpoint;
  $("title").textContent = "broker node " + (e.name || shortId(e.id));
  $("identity").textContent =
    `${e.id} · version ${e.version} · up ${duration(e.uptime_seconds)} · ` +
    `${plural(st.peers.total, "peer")} · ${plural(st.clients.total, "WebSocket client")}`;
  drawMesh(st);
  drawRates(st);
  drawQueues(st);
  drawTables(st);
  drawAccess(st);
  drawEvents(st);
}

async function poll() {
  timer = null;
  try {
    const res = await fetch("/v1/status?limit=" + LIST_LIMIT, { cache: "no-store" });
    if (!res.ok) throw new Error("HTTP " + res.status);
    draw(await res.json());
    $("banner").hidden = true;
  } catch (err) {
    $("banner").textContent = "cannot reach the node: " + err.message;
    $("banner").hidden = false;
  }
  schedule();
}

function schedule() {
  if (timer === null && document.visibilityState === "visible")
    timer = setTimeout(poll, POLL_MS);
}

document.addEventListener("visibilitychange", schedule);
poll();
