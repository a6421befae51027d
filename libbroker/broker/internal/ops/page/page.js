// The live web view of one broker node. Polls GET /v1/status once a second while the page
// is visible (a hidden tab costs the node nothing) and redraws: the mesh (this node, its
// peers with the subscriptions they announced, peerings being dialed, WebSocket clients and
// local handlers as groups), queue fill bars, rates with a sparkline, drops and totals.
// No libraries, no build step: plain DOM and SVG.
"use strict";

const POLL_MS = 1000;       // One status request per second.
const LIST_LIMIT = 40;      // Entries per list the node sends (fullest queues first).
const HISTORY = 120;        // Samples in the sparkline.
const MAX_SUBS_SHOWN = 3;   // Announced subscriptions printed under a peer.
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
    node.append(svg("text", { y: above ? -40 : 46 }, n.p.address + ":" + n.p.port +
      (n.p.direction ? (n.p.direction === "outbound" ? " →" : " ←") : "")));
    if (n.kind === "peer") {
      const subs = n.p.subscriptions || [];
      const shown = subs.slice(0, MAX_SUBS_SHOWN).map((s) => s === "" ? "(all)" : s);
      if (subs.length > MAX_SUBS_SHOWN) shown.push("+" + (subs.length - MAX_SUBS_SHOWN));
      node.append(svg("text", { class: "subs", y: above ? -54 : 59 }, shown.join(" ") || "(no subscriptions)"));
      node.append(svg("title", {}, `peer ${n.p.id}\nTLS: ${n.p.tls}\nin ${n.p.messages_in}, out ${n.p.messages_out}, dropped ${n.p.dropped}`));
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
  $("window").textContent = r.window_seconds > 0 ? `(last ${r.window_seconds.toFixed(0)} s)` : "";
  const box = $("rates");
  box.replaceChildren();
  for (const [name, value] of [["processed/s", r.processed], ["delivered/s", r.delivered],
                               ["dropped/s", r.dropped]]) {
    const d = el("div", { class: "rate" });
    d.append(el("b", {}, fmt(value)), el("span", { class: "muted" }, name));
    box.append(d);
  }
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
  const add = (kind, list, label) => list.items.forEach((h) => rows.push({ kind, h, label: label(h) }));
  add("peer", st.peers, (h) => "peer " + shortId(h.id) + " " + h.address);
  add("client", st.clients, (h) => "client " + h.address + ":" + h.port);
  add("subscriber", st.local.subscribers, (h) => "subscriber #" + h.handler);
  add("hub", st.local.hubs, (h) => "hub #" + h.handler);
  add("store", st.local.stores, (h) => "store " + h.role + " #" + h.handler);
  rows.sort((a, b) => b.h.queue.fill - a.h.queue.fill);
  const box = $("queues");
  box.replaceChildren();
  if (rows.length === 0) box.append(el("p", { class: "muted" }, "no handlers"));
  for (const r of rows) {
    const q = r.h.queue;
    const d = el("div", { class: "queue", "data-handler": r.h.handler });
    const name = el("div", { class: "name" });
    name.append(el("span", {}, r.label),
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
  if (more > 0) box.append(el("p", { class: "muted" }, `+ ${more} more WebSocket clients`));
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
  for (const [k, v] of Object.entries(st.totals)) {
    const tr = el("tr");
    tr.append(el("td", {}, k.replace(/_/g, " ")), el("td", { class: "num" }, fmt(v)));
    totals.append(tr);
  }
}

function draw(st) {
  const e = st.endpoint;
  $("title").textContent = "broker node " + (e.name || shortId(e.id));
  $("identity").textContent =
    `${e.id} · version ${e.version} · up ${duration(e.uptime_seconds)} · ` +
    `${st.peers.total} peers · ${st.clients.total} WebSocket clients`;
  drawMesh(st);
  drawRates(st);
  drawQueues(st);
  drawTables(st);
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
