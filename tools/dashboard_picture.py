"""Draw the picture of the Grafana dashboard in docs/console.md (run by hand).

    .venv/bin/python tools/dashboard_picture.py [--seconds 150] [--out docs/images/grafana-dashboard.png]

Grafana itself is not in Debian, PyPI or npm, the only places these machines install from, so this
draws ``dashboards/logtide.json`` the way Grafana would from the same data: a real ``logtide serve``
(the tests' machinery, ``tests/console``) is written to for ``--seconds`` while a real Prometheus
(Debian's) scrapes its ``/metrics`` every second; a kafka-python group catches up with a changefeed
half way and a second changefeed scans a table; then every panel's own PromQL (``$job`` and
``$__rate_interval`` replaced as Grafana replaces them) is asked of Prometheus, over the whole
window for a time series and at its end for a stat, and drawn at the panel's grid position with
its legend format and unit (time series with uPlot, the console's vendored copy) in headless
Chromium, which saves the picture.  Never run by the test suite.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.console.browser import chromium_missing_reason, start_browser  # noqa: E402
from tests.console.conftest import console_with_feed  # noqa: E402
from tests.console.prometheus import concrete, prometheus_missing_reason, scraping  # noqa: E402
from tests.ops.serving import free_port  # noqa: E402

STATIC = ROOT / "logtide" / "console" / "static"
DASHBOARD = ROOT / "dashboards" / "logtide.json"
ROW_PX, COLUMNS, WIDTH = 30, 24, 1600
PALETTE = ("#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#fade2a")


def legend(fmt: str, labels: dict) -> str:
    """Grafana's legend format: ``{{label}}`` replaced by the series' label."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(labels.get(m.group(1), "")), fmt or "") or json.dumps(labels)


def panel_data(prom, panel: dict, start: float, end: float, step: float) -> dict:
    """What one panel shows: its stat figures or its time series, from its own queries."""
    out: dict = {"title": panel["title"], "type": panel["type"], "grid": panel["gridPos"],
                 "unit": panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "none"), "series": []}
    for target in panel["targets"]:
        expr = concrete(target["expr"])
        if panel["type"] == "stat":
            for s in prom.query(expr):
                shown = s["metric"].get("version") if "version" in s["metric"] else float(s["value"][1])
                out["series"].append({"name": legend(target.get("legendFormat", ""), s["metric"]), "value": shown})
        else:
            for s in prom.query_range(expr, start, end, step):
                points = {float(t): float(v) for t, v in s["values"]}
                out["series"].append({"name": legend(target.get("legendFormat", ""), s["metric"]), "points": points})
    return out


PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{uplot_css}
body {{ margin: 0; overflow: hidden; background: #111217; color: #ccccdc; font: 13px Inter, "Helvetica Neue", Arial, sans-serif; }}
header {{ padding: 10px 16px; font-size: 17px; }} header small {{ color: #8e8e9e; font-size: 12px; margin-left: 12px; }}
#grid {{ position: relative; margin: 0 8px; }}
.panel {{ position: absolute; background: #181b1f; border: 1px solid #2c3235; border-radius: 2px; box-sizing: border-box;
  padding: 6px 8px; overflow: hidden; }}
.panel h3 {{ margin: 0 0 4px; font-size: 13px; font-weight: 500; }}
.stat {{ font-size: 30px; color: #73bf69; text-align: center; margin-top: 14px; white-space: nowrap; }}
.uplot {{ font-family: inherit; }} .u-legend {{ font-size: 11px; color: #ccccdc; }}
.empty {{ color: #8e8e9e; text-align: center; margin-top: 60px; }}
</style><script>{uplot_js}</script></head><body>
<header>logtide <small>dashboards/logtide.json · job = logtide · the last {minutes} minutes · times in UTC · drawn
from a real Prometheus by tools/dashboard_picture.py</small></header>
<div id="grid"></div>
<script>
const panels = {panels}, windowStart = {start}, windowEnd = {end};
const width = document.documentElement.clientWidth - 16, rowPx = {row_px}, cols = {columns};
const unitFmt = {{
  bytes: v => v >= 1048576 ? (v / 1048576).toFixed(1) + " MiB" : v >= 1024 ? (v / 1024).toFixed(1) + " KiB" : v + " B",
  s: v => v >= 1 ? v.toFixed(2) + " s" : (v * 1000).toFixed(v >= 0.01 ? 0 : 2) + " ms",
  percentunit: v => (v * 100).toFixed(0) + "%",
  wps: v => v.toFixed(1) + " wps", reqps: v => v.toFixed(1) + " req/s", ops: v => v.toFixed(1) + " ops/s",
  none: v => (Math.abs(v) >= 100 || Number.isInteger(v)) ? v.toFixed(0) : v.toFixed(2)
}};
const palette = {palette};
const grid = document.getElementById("grid");
for (const p of panels) {{
  const cell = width / cols, g = p.grid;
  const el = document.createElement("div");
  el.className = "panel";
  Object.assign(el.style, {{ left: g.x * cell + 4 + "px", top: g.y * rowPx + 4 + "px",
    width: g.w * cell - 8 + "px", height: g.h * rowPx - 8 + "px" }});
  el.innerHTML = "<h3></h3>";
  el.querySelector("h3").textContent = p.title;
  grid.appendChild(el);
  grid.style.height = Math.max(parseFloat(grid.style.height || 0), (g.y + g.h) * rowPx) + "px";
  const fmt = unitFmt[p.unit] || unitFmt.none;
  if (p.type === "stat") {{
    const d = document.createElement("div");
    d.className = "stat";
    d.textContent = p.series.length ? p.series.map(s => typeof s.value === "string" ? s.value : fmt(s.value)).join(" ")
      : "No data";
    el.appendChild(d);
    continue;
  }}
  if (!p.series.length) {{
    const d = document.createElement("div"); d.className = "empty"; d.textContent = "No data"; el.appendChild(d);
    continue;
  }}
  const times = [...new Set(p.series.flatMap(s => Object.keys(s.points).map(Number)))].sort((a, b) => a - b);
  const data = [times, ...p.series.map(s => times.map(t => {{ const v = s.points[t]; return v === undefined ||
    Number.isNaN(v) ? null : v; }}))];
  const series = [{{}}, ...p.series.map((s, i) => ({{ label: s.name, stroke: palette[i % palette.length], width: 1.5,
    value: (u, v) => v == null ? "–" : fmt(v) }}))];
  new uPlot({{ width: g.w * cell - 26, height: g.h * rowPx - 78, series, data, legend: {{ live: false }},
    scales: {{ x: {{ time: true, range: () => [windowStart, windowEnd] }} }},
    axes: [{{ stroke: "#8e8e9e", grid: {{ stroke: "#2c3235" }}, space: 90,
              values: (u, vs) => vs.map(v => new Date(v * 1000).toISOString().substring(11, 19)) }},
           {{ stroke: "#8e8e9e", grid: {{ stroke: "#2c3235" }}, size: 90, values: (u, vs) => vs.map(fmt) }}] }}, data, el);
}}
document.body.dataset.drawn = "yes";
</script></body></html>
"""


def page(panels: list[dict], start: float, end: float) -> str:
    """The dashboard's page: every panel at its grid position, drawn from ``panels`` (:func:`panel_data`)."""
    return PAGE.format(uplot_css=(STATIC / "uPlot.min.css").read_text(), uplot_js=(STATIC / "uPlot.iife.min.js").read_text(),
                       panels=json.dumps(panels), row_px=ROW_PX, columns=COLUMNS,
                       palette=json.dumps(PALETTE), start=start, end=end,
                       minutes=html.escape(f"{(end - start) / 60:.1f}"))


def workload(c, stop: threading.Event, started: float, seconds: float) -> None:
    """Writes at a rate that changes, a refused statement now and then, a consumer catching up half way and a
    changefeed with an initial scan added at two thirds."""
    from kafka import KafkaConsumer

    s = c.session
    insert = s.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?)")
    i, caught_up, scanned = 0, False, False
    while not stop.is_set():
        s.execute(insert, [i % 50, i % 7, f"value {i}"])
        i += 1
        elapsed = time.monotonic() - started
        if i % 200 == 0:
            try:
                s.execute("SELECT * FROM ks.no_such_table")
            except Exception:
                pass
        if not caught_up and elapsed > seconds / 2:
            caught_up = True
            consumer = KafkaConsumer("ks.t.f", bootstrap_servers=c.kafka, group_id="billing",
                                     auto_offset_reset="earliest", enable_auto_commit=False)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not consumer.poll(timeout_ms=1000):
                pass
            for _ in range(5):
                consumer.poll(timeout_ms=500)
            consumer.commit()
            consumer.close()
        if not scanned and elapsed > seconds * 2 / 3:
            scanned = True
            s.execute("ALTER TABLE ks.scan ADD CHANGEFEED snapshot WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
                      "INITIAL_SCAN = TRUE)")
        time.sleep(0.01 if (elapsed // 20) % 2 else 0.04)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=150, help="how long the server is written to and scraped")
    ap.add_argument("--out", default=str(ROOT / "docs" / "images" / "grafana-dashboard.png"))
    args = ap.parse_args()
    for reason in (chromium_missing_reason(), prometheus_missing_reason()):
        if reason:
            print(f"dashboard_picture: {reason}", file=sys.stderr)
            return 2
    doc = json.loads(DASHBOARD.read_text())
    with tempfile.TemporaryDirectory() as tmp, console_with_feed(Path(tmp) / "data") as c:
        s = c.session
        s.execute("CREATE TABLE ks.scan (k int PRIMARY KEY, v text)")
        fill = s.prepare("INSERT INTO ks.scan (k, v) VALUES (?, ?)")
        for k in range(20000):
            s.execute(fill, [k, "x" * 40])
        with scraping(c.url, Path(tmp) / "prometheus", free_port()) as prom:
            stop = threading.Event()
            started = time.monotonic()
            writer = threading.Thread(target=workload, args=(c, stop, started, args.seconds), daemon=True)
            writer.start()
            time.sleep(args.seconds)
            stop.set()
            writer.join(60)
            end = time.time()
            panels = [panel_data(prom, p, end - args.seconds, end, 2) for p in doc["panels"]]
        out_html = Path(tmp) / "dashboard.html"
        out_html.write_text(page(panels, end - args.seconds, end))
        # headless Chromium keeps some 140 px of the window for its (invisible) frame
        height = max((p["grid"]["y"] + p["grid"]["h"]) * ROW_PX for p in panels) + 60 + 140
        browser = start_browser(WIDTH, height)
        try:
            browser.get(out_html.as_uri())
            deadline = time.monotonic() + 30
            while browser.execute_script("return document.body.dataset.drawn") != "yes":
                assert time.monotonic() < deadline, "the page was not drawn within 30 s"
                time.sleep(0.2)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(args.out)
        finally:
            browser.quit()
    for p in panels:
        shown = len(p["series"])
        print(f"{p['title']}: {shown} series" if shown else f"{p['title']}: no data")
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
