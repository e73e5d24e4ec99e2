"""The console's views of a live embedded database: the changefeed page during an initial scan, and the
API answered in-process (``Console`` called as the HTTP server calls it)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import logtide
from logtide.console.api import Console
from logtide.console.web import Request
from logtide.server import BackgroundServer, ServerConfig

from ..ops.test_metrics import paused_initial_scan


def get(console: Console, path: str) -> tuple[int, object]:
    target, _, query = path.partition("?")
    r = console(Request("GET", target, parse_qs(query), {}, b"", "127.0.0.1"))
    return r.status, json.loads(r.body) if r.content_type == "application/json" else r.body


def test_the_changefeed_page_shows_the_initial_scans_progress_until_it_ends(tmp_path):
    db = logtide.open(tmp_path, synchronous="OFF")
    with BackgroundServer(db, ServerConfig(port=0), close_db=True) as srv:
        console = Console(srv.server)
        paused_initial_scan(db)
        db.feeds.scan_step(partitions=4)
        status, feed = get(console, "/api/changefeed?path=m/t/snap")
        assert status == 200 and feed["state"] == "INITIAL_SCAN"
        assert feed["initial_scan"] == {"progress": 0.4, "partitions": [4, 10]}
        assert feed["partitions"][0]["end_offset"] == 4
        while db.feeds.scan_step():
            pass
        status, feed = get(console, "/api/changefeed?path=m/t/snap")
        assert feed["state"] == "ENABLED" and feed["initial_scan"] is None
        assert get(console, "/api/changefeeds")[1]["changefeeds"][0]["records_written"] == 10
        status, page = get(console, "/api/records?path=m/t/snap&from=offset&value=0&limit=200")
        assert sorted(r["value"]["key"][0] for r in page["records"]) == list(range(10))
