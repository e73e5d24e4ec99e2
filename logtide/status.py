"""``logtide status``: a data directory and the server running on it, at a glance (like ``nodetool info``).

Reads the data directory without writing to it (safe while ``logtide serve``
holds it): size, keyspaces and tables, the tables with CDC and their log
tables, the current CDC generation and its streams, and every changefeed (spec
``004``) with its state, partitions, records written, initial-scan progress
and each consumer's lag (read through ``logtide.observe.topic_reader``).  When a server runs on the directory
(found through ``<data_dir>/serve.json``) and serves metrics, it scrapes them
twice, ``--interval`` seconds apart, and adds connections, request counts,
rates and latencies.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import TextIO

from .cdc.generations_cli import generation_time
from .config import number
from .errors import CqlError
from .observe import NodeView, open_view
from .server.runtime_file import RunningServer, running_server


def add_status(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide status``."""
    p = subparsers.add_parser(
        "status", parents=[parent],
        description="Show the data directory (size, tables, tables with CDC, the current CDC generation and its "
                    "streams, changefeeds) and, when a logtide serve runs on it with metrics on, its connections, "
                    "request rates and latencies. Reads without writing: safe while the server runs.")
    p.add_argument("--interval", type=number, default=1.0, metavar="SECONDS",
                   help="seconds between the two metrics scrapes that give request rates (default 1; 0: counts only)")
    p.add_argument("--streams", action="store_true", help="list every stream of the current CDC generation")
    p.set_defaults(run=run_status)
    return p


# -- the running server, through its metrics ------------------------------------------


@dataclass
class Scrape:
    """The samples of one metrics scrape that status shows."""

    connections: float = 0.0
    requests: dict[str, float] = field(default_factory=dict)  # kind -> count
    errors: dict[str, float] = field(default_factory=dict)  # kind -> count
    latency_sum: dict[str, float] = field(default_factory=dict)
    latency_buckets: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # kind -> (le, count)


def scrape(url: str, timeout: float = 10.0) -> Scrape:
    """Fetch and parse a Prometheus text exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=timeout) as r:
        text = r.read().decode()
    out = Scrape()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            kind = s.labels.get("kind", "")
            if s.name == "logtide_cql_connections":
                out.connections = s.value
            elif s.name == "logtide_cql_requests_total":
                out.requests[kind] = s.value
            elif s.name == "logtide_cql_request_errors_total":
                out.errors[kind] = out.errors.get(kind, 0.0) + s.value
            elif s.name == "logtide_cql_request_latency_seconds_sum":
                out.latency_sum[kind] = s.value
            elif s.name == "logtide_cql_request_latency_seconds_bucket":
                out.latency_buckets.setdefault(kind, []).append((float(s.labels["le"]), s.value))
    return out


def quantile_bound(buckets: list[tuple[float, float]], q: float) -> float | None:
    """The upper bound of the histogram bucket holding quantile ``q`` (None if empty or past the last bound)."""
    buckets = sorted(buckets)
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    for le, count in buckets:
        if count >= q * total:
            return le
    return None


def _ms(seconds: float | None) -> str:
    if seconds is None or seconds == float("inf"):
        return "> 10 s"
    return f"{seconds * 1000:.3g} ms"


def print_server(out: TextIO, server: RunningServer | None, interval: float) -> None:
    if server is None:
        out.write("Server            : not running\n")
        return
    out.write(f"Server            : logtide {server.version} running, pid {server.pid}, "
              f"CQL {server.host}:{server.port}\n")
    if not server.metrics_port:
        out.write("Metrics           : off (start the server with --metrics-port to see requests)\n")
        return
    host = "127.0.0.1" if server.host in ("0.0.0.0", "") else "::1" if server.host == "::" else server.host
    url = f"http://{'[' + host + ']' if ':' in host else host}:{server.metrics_port}/metrics"
    try:
        first = scrape(url)
        second = first
        if interval > 0:
            time.sleep(interval)
            second = scrape(url)
    except (OSError, urllib.error.URLError, ValueError) as e:
        out.write(f"Metrics           : {url} did not answer ({getattr(e, 'reason', e)})\n")
        return
    out.write(f"Metrics           : {url}\n")
    out.write(f"Connections       : {second.connections:.0f}\n")
    if not second.requests:
        out.write("Requests          : none yet\n")
    for kind in sorted(second.requests):
        count = second.requests[kind]
        line = f"  {kind:<14}  : {count:.0f} requests"
        if interval > 0:
            line += f", {(count - first.requests.get(kind, 0.0)) / interval:.1f}/s"
        errors = second.errors.get(kind, 0.0)
        if errors:
            line += f", {errors:.0f} errors"
        if count:
            mean = second.latency_sum.get(kind, 0.0) / count
            buckets = second.latency_buckets.get(kind, [])
            line += (f", latency mean {_ms(mean)}, p50 <= {_ms(quantile_bound(buckets, 0.5))}, "
                     f"p99 <= {_ms(quantile_bound(buckets, 0.99))}")
        out.write(line + "\n")


# -- the data directory --------------------------------------------------------------


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit} ({n} bytes)"
        size /= 1024
    return f"{n} bytes"


def print_view(out: TextIO, view: NodeView, streams: bool) -> None:
    out.write(f"Data directory    : {view.data_dir}\n")
    out.write(f"Size              : {human_bytes(view.size_bytes)}\n")
    out.write(f"Keyspaces         : {view.keyspaces}\n")
    out.write(f"Tables            : {view.tables}\n")
    out.write(f"Tables with CDC   : {len(view.cdc_tables)} (each with its CDC log table)\n")
    for t in view.cdc_tables:
        out.write(f"  {t.keyspace}.{t.table} -> {t.keyspace}.{t.log_table} ({t.describe_options})\n")
    gen = view.current_generation
    if gen is None:
        out.write("CDC generation    : none\n")
    else:
        out.write(f"CDC generation    : {generation_time(gen.timestamp)} ({len(view.generations)} in all; "
                  f"{len(gen.range_ends)} token ranges x {gen.topology.shards} shards = "
                  f"{len(gen.all_streams())} streams)\n")
        if streams:
            for end, group in zip(gen.range_ends, gen.streams):
                out.write(f"  range_end {end:<20d} " + " ".join("0x" + s.hex() for s in sorted(group)) + "\n")
    if view.changefeeds is None:
        out.write("Changefeeds       : not available in this build\n")
    else:
        out.write(f"Changefeeds       : {len(view.changefeeds)}\n")
        for cf in view.changefeeds:
            parts = f"{cf.partitions} partition" + ("" if cf.partitions == 1 else "s")
            line = f"  {cf.path} {cf.state} ({cf.mode}, {cf.format}): {parts}, {cf.records_written} records"
            if cf.initial_scan_progress is not None:
                line += f", initial scan {cf.initial_scan_progress:.0%}"
            out.write(line + "\n")
            for c in cf.consumers:
                out.write(f"    consumer {c.name}: lag {c.lag} records\n")
            if not cf.consumers:
                out.write("    no consumers\n")


def run_status(ns: argparse.Namespace) -> int:
    try:
        view = open_view(ns.data_dir)
    except CqlError as e:
        print(f"logtide status: error: {e}", file=sys.stderr)
        return 2
    print_view(sys.stdout, view, ns.streams)
    print_server(sys.stdout, running_server(ns.data_dir), max(ns.interval, 0.0))
    return 0
