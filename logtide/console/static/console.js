/* logtide console: a small hash-routed page polling the read-only JSON API (/api/...).
   Plain JS, no framework, no build step; charts by the vendored uPlot (uPlot.LICENSE.txt). */
"use strict";

const POLL_MS = 1000;
const HISTORY = 300; // points kept per chart (5 minutes at one poll a second)
let timer = null;
let pageToken = 0;

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function qs(params) {
  return Object.entries(params).filter(([, v]) => v !== "" && v !== null && v !== undefined)
    .map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v)).join("&");
}

class LoginNeeded extends Error {}

async function api(name, params) {
  const url = "/api/" + name + (params ? "?" + qs(params) : "");
  const r = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  const doc = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
  if (r.status === 401 && doc.login) throw new LoginNeeded();
  if (!r.ok) throw new Error(doc.error || r.statusText);
  return doc;
}

function bytes(n) {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let i = 0, v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? n + " bytes" : v.toFixed(1) + " " + units[i];
}

function duration(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return (d ? d + "d " : "") + (d || hh ? hh + "h " : "") + m + "m " + (s % 60) + "s";
}

function card(label, value, id) {
  return h("div", { class: "card" }, h("div", { class: "label" }, label), h("div", { class: "value", id }, value));
}

function grid(headers, rows) {
  return h("table", { class: "grid" }, h("tr", {}, headers.map(x => h("th", {}, x))),
    rows.map(r => h("tr", {}, r.map(c => c instanceof Node ? h("td", {}, c) :
      h("td", { class: typeof c === "number" ? "num" : "" }, c === null || c === undefined ? "—" : c)))));
}

function lagCell(n, id) {
  return h("span", { class: n === 0 ? "lag-0" : "lag-pos", id }, String(n));
}

function setStatus(text, error) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = error ? "error" : "";
}

/* A live line chart: x is time (seconds), one series per name; names may appear later. */
class Chart {
  constructor(parent, title, unit, width) {
    this.box = h("div", { class: "chart" });
    parent.append(this.box);
    this.title = title; this.unit = unit; this.width = width || 420;
    this.names = []; this.xs = []; this.ys = {}; this.plot = null;
  }
  push(t, values) {
    for (const name of Object.keys(values)) {
      if (!(name in this.ys)) { this.names.push(name); this.ys[name] = this.xs.map(() => null); this.rebuild(); }
    }
    this.xs.push(t);
    for (const name of this.names) this.ys[name].push(name in values ? values[name] : null);
    if (this.xs.length > HISTORY) { this.xs.shift(); for (const n of this.names) this.ys[n].shift(); }
    if (!this.plot) this.rebuild();
    this.plot.setData([this.xs, ...this.names.map(n => this.ys[n])]);
  }
  rebuild() {
    if (this.plot) this.plot.destroy();
    const colors = ["#2f80ed", "#eb5757", "#27ae60", "#f2994a", "#9b51e0", "#56ccf2"];
    const unit = this.unit;
    this.plot = new uPlot({
      title: this.title, width: this.width, height: 200,
      series: [{}, ...this.names.map((n, i) => ({ label: n, stroke: colors[i % colors.length], width: 2,
        value: (u, v) => v === null ? "—" : (+v.toFixed(3)) + " " + unit }))],
      axes: [{}, { size: 60 }],
    }, [this.xs, ...this.names.map(n => this.ys[n])], this.box);
  }
}

/* -- pages ---------------------------------------------------------------------------------- */

const pages = {};

pages.overview = (main) => {
  let prev = null;
  const cards = h("div", { class: "cards" });
  const charts = h("div", { class: "charts" });
  main.append(h("h1", {}, "Overview"), cards, h("h2", {}, "Activity"), charts);
  const reqChart = new Chart(charts, "CQL requests", "/s");
  const latChart = new Chart(charts, "Request latency", "ms");
  const writeChart = new Chart(charts, "Writes and CDC log rows", "/s");
  return async () => {
    const o = await api("overview");
    const t = o.now_ms / 1000;
    const total = Object.values(o.requests).reduce((a, k) => a + k.count, 0);
    let rates = null;
    if (prev) {
      const dt = Math.max(t - prev.t, 0.001);
      const dn = total - prev.total;
      const dsum = Object.values(o.requests).reduce((a, k) => a + k.sum_seconds, 0) - prev.sum;
      const counts = o.latency_buckets.counts.map((c, i) => c - prev.buckets[i]);
      rates = { requests: dn / dt, writes: (o.writes_total - prev.writes) / dt,
        cdc: (o.cdc_log_rows_total - prev.cdc) / dt, mean: dn ? dsum / dn * 1000 : null,
        p99: quantile(o.latency_buckets.le, counts, 0.99) };
      reqChart.push(t, { "requests/s": rates.requests });
      latChart.push(t, { "mean": rates.mean, "p99 ≤": rates.p99 });
      writeChart.push(t, { "writes/s": rates.writes, "CDC rows/s": rates.cdc });
    }
    prev = { t, total, sum: Object.values(o.requests).reduce((a, k) => a + k.sum_seconds, 0),
      buckets: o.latency_buckets.counts, writes: o.writes_total, cdc: o.cdc_log_rows_total };
    const g = o.generation;
    cards.replaceChildren(
      card("Data directory", o.data_dir, "ov-data-dir"),
      card("Size", bytes(o.size_bytes), "ov-size"),
      card("Uptime", duration(o.uptime_seconds), "ov-uptime"),
      card("CQL connections", o.connections, "ov-connections"),
      card("In flight", o.in_flight, "ov-in-flight"),
      card("Writes", o.writes_total, "ov-writes"),
      card("Writes/s", rates ? rates.writes.toFixed(1) : "…", "ov-writes-rate"),
      card("CDC log rows", o.cdc_log_rows_total, "ov-cdc-rows"),
      card("CDC rows/s", rates ? rates.cdc.toFixed(1) : "…", "ov-cdc-rate"),
      card("Requests/s", rates ? rates.requests.toFixed(1) : "…", "ov-requests-rate"),
      card("CDC generation", g ? (g.time || "the first, since the data directory began") + " (" + g.streams + " streams, " + g.count + " in all)" : "none",
        "ov-generation"),
      card("Version", o.version, "ov-version"));
  };
};

function quantile(les, counts, q) {
  const total = counts.reduce((a, b) => a + b, 0);
  if (!total) return null;
  let acc = 0;
  for (let i = 0; i < counts.length; i++) {
    acc += counts[i];
    if (acc >= q * total) return les[i] === "+Inf" ? null : parseFloat(les[i]) * 1000;
  }
  return null;
}

pages.tables = (main) => {
  const body = h("div");
  main.append(h("h1", {}, "Tables"), body);
  return async () => {
    const d = await api("tables");
    body.replaceChildren(d.tables.length ? grid(["Table", "CDC", "Changefeeds"], d.tables.map(t => [
      h("a", { href: "#/table/" + t.keyspace + "/" + t.table, class: "table-link" }, t.keyspace + "." + t.table),
      t.cdc ? h("a", { href: "#/log/" + t.keyspace + "/" + t.table }, "on: browse the log") : "off",
      h("span", {}, t.changefeeds.map(f => h("a", { href: "#/changefeed/" + t.keyspace + "/" + t.table + "/" + f },
        f + " ")))])) : h("p", { class: "muted" }, "No tables you may read."));
  };
};

pages.table = (main, ks, table) => {
  const body = h("div");
  main.append(h("h1", {}, "Table " + ks + "." + table), body);
  return async () => {
    const t = await api("table", { ks, table });
    const parts = [h("h2", {}, "Schema"), h("pre", { id: "describe" }, t.describe)];
    if (t.cdc) {
      parts.push(h("h2", {}, "CDC"), grid(["Option", "Value"], Object.entries(t.cdc.options)),
        h("p", {}, "Log table ", h("a", { href: "#/log/" + ks + "/" + table }, t.cdc.log_table), ": ",
          bytes(t.cdc.log_bytes), " stored, rows in " + t.cdc.streams_with_rows + " streams (" +
          t.cdc.generation_streams + " in the current generation)"));
    } else parts.push(h("p", { class: "muted" }, "CDC is off."));
    parts.push(h("h2", {}, "Changefeeds"), feedList(t.changefeeds));
    body.replaceChildren(...parts);
  };
};

function feedList(feeds) {
  if (!feeds.length) return h("p", { class: "muted" }, "None.");
  return grid(["Changefeed", "State", "Mode", "Format", "Partitions", "Records", "Consumers (lag)"],
    feeds.map(f => [h("a", { href: "#/changefeed/" + f.path, class: "feed-link" }, f.path),
      f.state + (f.initial_scan_progress !== null ? " " + Math.round(f.initial_scan_progress * 100) + "%" : ""),
      f.mode, f.format, f.partitions, f.records_written,
      f.consumers.map(c => c.name + " (" + c.lag + ")").join(", ") || "none"]));
}

pages.changefeeds = (main) => {
  const body = h("div");
  main.append(h("h1", {}, "Changefeeds"), body);
  return async () => { body.replaceChildren(feedList((await api("changefeeds")).changefeeds)); };
};

pages.changefeed = (main, ...pathParts) => {
  const path = pathParts.join("/");
  const body = h("div"), charts = h("div", { class: "charts" });
  main.append(h("h1", {}, "Changefeed " + path), charts, body);
  const lagChart = new Chart(charts, "Consumer lag (records not committed)", "records", 640);
  return async () => {
    const f = await api("changefeed", { path });
    const parts = [grid(["Mode", "Format", "State", "Kafka topic", "Retention", "Barriers"],
      [[f.mode, f.format, h("span", { id: "feed-state" }, f.state), f.kafka_name, f.retention_seconds + " s",
        f.barriers.on ? "every " + f.barriers.interval_ms / 1000 + " s" : "off"]]),
      h("h2", {}, "Options"), grid(["Option", "Value"], Object.entries(f.options).map(([k, v]) => [k, String(v)]))];
    if (f.initial_scan) {
      const p = f.initial_scan.progress || 0;
      const fill = h("div");
      fill.style.width = (p * 100).toFixed(1) + "%"; // a style property, which the page's CSP allows
      parts.push(h("h2", {}, "Initial scan"), h("div", { class: "bar", id: "scan-bar" }, fill),
      h("p", {}, Math.round(p * 100) + "%" + (f.initial_scan.partitions ?
        " (" + f.initial_scan.partitions[0] + " of " + f.initial_scan.partitions[1] + " partitions)" : "")));
    }
    parts.push(h("h2", {}, "Partitions"), grid(["Partition", "Start offset", "End offset", "Records kept"],
      f.partitions.map(p => [p.partition, p.start_offset, p.end_offset, p.records])),
    h("p", {}, h("a", { href: "#/records/" + path }, "Browse records")),
    h("h2", {}, "Consumers"));
    if (!f.consumers.length) parts.push(h("p", { class: "muted" }, "No consumers."));
    for (const c of f.consumers) {
      parts.push(h("h3", {}, c.name, " — lag ", lagCell(c.lag, "lag-" + c.name),
        c.important ? " (important)" : "", c.group ? " — Kafka group " + c.group.state + ", " +
          c.group.members.length + " members" : ""),
      grid(["Partition", "Committed", "Lag"], c.partitions.map(p => [p.partition, p.committed, p.lag])));
    }
    body.replaceChildren(...parts);
    const point = {};
    for (const c of f.consumers) point[c.name] = c.lag;
    lagChart.push(f.now_ms / 1000, point);
  };
};

function browser(main, title, name, baseParams, isFeed) {
  const form = h("form", { class: "inline" });
  const from = h("select", { name: "from" }, (isFeed ? ["end", "offset", "time"] : ["end", "time"])
    .map(x => h("option", { value: x }, x)));
  const value = h("input", { name: "value", placeholder: isFeed ? "offset or time" : "time (ISO or ms)", size: 18 });
  const key = h("input", { name: "key", placeholder: "key contains", size: 14 });
  const partition = h("input", { name: "partition", value: "all", size: 4 });
  const limit = h("input", { name: "limit", value: "20", size: 4 });
  form.append(h("label", {}, "From", from), h("label", {}, "Offset / time", value),
    isFeed ? h("label", {}, "Partition", partition) : "", h("label", {}, "Key filter", key),
    h("label", {}, "Page", limit), h("button", { type: "submit" }, "Show"));
  const out = h("div", { id: "records" }), more = h("button", { type: "button", id: "next-page" }, "Next page");
  main.append(h("h1", {}, title), form, out, more);
  let cursor = null, live = true;
  const params = () => Object.assign({}, baseParams, { from: from.value, value: value.value, key: key.value,
    limit: limit.value, partition: isFeed ? partition.value : "" });
  const show = (d) => {
    const items = isFeed ? d.records : d.entries;
    if (!items.length) { out.replaceChildren(h("p", { class: "muted" }, "No records on this page.")); return; }
    out.replaceChildren(...items.map(isFeed ? feedRecord : logEntry));
  };
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    live = from.value === "end";
    cursor = null;
    try { const d = await api(name, params()); cursor = d.next; show(d); setStatus(""); }
    catch (err) { setStatus(err.message, true); }
  });
  more.addEventListener("click", async () => {
    live = false;
    try { const d = await api(name, Object.assign(params(), { cursor })); if (d.next) cursor = d.next; show(d); }
    catch (err) { setStatus(err.message, true); }
  });
  return async () => {
    if (!live) return; // a page chosen by the reader stays put; new records come on later pages
    const d = await api(name, params());
    cursor = d.next;
    show(d);
  };
}

function feedRecord(r) {
  return h("div", { class: "entry record" },
    h("div", { class: "head" }, "partition " + r.partition + " · offset " + r.offset + " · " +
      new Date(r.write_time_ms).toISOString()),
    r.key !== null ? h("pre", { class: "key" }, JSON.stringify(r.key, null, 2)) : "",
    h("pre", { class: "value" }, JSON.stringify(r.value, null, 2)));
}

function logEntry(e) {
  const rows = [];
  for (const slot of ["preimage", "changes", "postimage"]) {
    for (const r of e[slot]) {
      rows.push(h("div", {}, h("span", { class: "op" }, r.operation), " ",
        JSON.stringify(r.values), Object.keys(r.meta).length ? " " + JSON.stringify(r.meta) : ""));
    }
  }
  return h("div", { class: "entry log-entry" },
    h("div", { class: "head" }, "key " + JSON.stringify(e.key) + " · " + new Date(e.time_ms).toISOString() +
      " · cdc$time " + e["cdc$time"] + " · stream 0x" + e.stream_id), ...rows);
}

pages.records = (main, ...pathParts) => {
  const path = pathParts.join("/");
  return browser(main, "Records of " + path, "records", { path }, true);
};

pages.log = (main, ks, table) => browser(main, "CDC log of " + ks + "." + table, "log", { ks, table }, false);

pages.consumers = (main) => {
  const body = h("div");
  main.append(h("h1", {}, "Consumers"), body);
  return async () => {
    const d = await api("consumers");
    const parts = [];
    parts.push(d.consumers.length ? grid(["Consumer / group", "Changefeed", "Kafka topic", "Offsets (committed / end)",
      "Lag", "Members"], d.consumers.map(c => [c.consumer, h("a", { href: "#/changefeed/" + c.changefeed }, c.changefeed),
      c.kafka_topic, c.offsets.map(o => o.partition + ": " + (o.committed === null ? "—" : o.committed) + " / " +
        o.end_offset).join(", "), lagCell(c.lag, "consumer-lag-" + c.consumer),
      c.group ? c.group.state + ": " + (c.group.members.map(m => m.client_id + "@" + m.client_host).join(", ") ||
        "no members") : "Empty (no Kafka client joined)"])) : h("p", { class: "muted" }, "No consumers."));
    if (d.groups_without_offsets.length) {
      parts.push(h("h2", {}, "Kafka groups without committed offsets"), grid(["Group", "State", "Members", "Topics"],
        d.groups_without_offsets.map(g => [g.group, g.state, g.members.length, g.topics.join(", ")])));
    }
    body.replaceChildren(...parts);
  };
};

/* -- login ---------------------------------------------------------------------------------- */

function showLogin(main) {
  const err = h("p", { class: "error", id: "login-error" });
  const user = h("input", { name: "username", id: "username", autocomplete: "username" });
  const pass = h("input", { name: "password", id: "password", type: "password", autocomplete: "current-password" });
  const form = h("form", { class: "login", id: "login" }, h("h1", {}, "Log in"),
    h("p", { class: "muted" }, "This server runs with --auth: log in as a CQL role."),
    h("label", {}, "Role", user), h("label", {}, "Password", pass), h("button", { type: "submit" }, "Log in"), err);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const r = await fetch("/login", { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: qs({ username: user.value, password: pass.value }) });
    const doc = await r.json().catch(() => ({}));
    if (r.ok) { route(); } else { err.textContent = doc.error || "login failed"; }
  });
  main.replaceChildren(form);
}

async function showWho() {
  const who = document.getElementById("who");
  try {
    const s = await api("session");
    if (s.auth && s.logged_in) {
      who.replaceChildren("Logged in as " + s.role, h("button", { onclick: async () => {
        await fetch("/logout", { method: "POST", credentials: "same-origin" }); route();
      } }, "Log out"));
    } else who.replaceChildren();
  } catch (e) { who.replaceChildren(); }
}

/* -- routing -------------------------------------------------------------------------------- */

async function route() {
  if (timer) clearInterval(timer);
  timer = null;
  const token = ++pageToken;
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const name = parts[0] && pages[parts[0]] ? parts[0] : "overview";
  for (const a of document.querySelectorAll("header nav a")) {
    a.classList.toggle("active", a.dataset.page === name);
  }
  const main = document.getElementById("main");
  main.replaceChildren();
  main.dataset.page = name;
  const refresh = pages[name](main, ...parts.slice(1));
  const tick = async () => {
    if (token !== pageToken) return;
    try {
      await refresh();
      setStatus("updated " + new Date().toLocaleTimeString());
    } catch (e) {
      if (token !== pageToken) return;
      if (e instanceof LoginNeeded) { clearInterval(timer); timer = null; showLogin(main); showWho(); return; }
      setStatus(e.message, true);
    }
  };
  showWho();
  await tick();
  if (token === pageToken && main.dataset.page === name && !main.querySelector("#login")) {
    timer = setInterval(tick, name === "overview" || name === "changefeed" ? POLL_MS : 2 * POLL_MS);
  }
}

window.addEventListener("hashchange", route);
route();
