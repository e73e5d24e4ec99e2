"""The console over HTTP: served on the metrics port beside an unchanged /metrics, read-only, defended, and
reading the same numbers as /metrics and ``logtide status``."""

from __future__ import annotations

import http.client
import json
import socket
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ..ops.serving import ServeProcess, free_port
from .conftest import start_console

pytestmark = pytest.mark.long_running(seconds=100)  # servers with feeds and consumers, polled over HTTP: handed out first (tests/conftest.py)


def metric(c, name: str, **labels: str) -> float:
    _, _, body = c.get("/metrics")
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    raise AssertionError(f"no sample {name} {labels}")


def request(c, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    host, port = c.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def test_the_console_page_its_files_and_metrics_share_the_metrics_port(console):
    status, headers, body = console.get("/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'src="/static/console.js"' in body and b"uPlot.iife.min.js" in body
    for name, kind in (("console.js", "text/javascript"), ("console.css", "text/css"),
                       ("uPlot.iife.min.js", "text/javascript"), ("uPlot.LICENSE.txt", "text/plain")):
        status, headers, body = console.get("/static/" + name)
        assert status == 200 and headers["Content-Type"].startswith(kind), name
    assert b"MIT" in console.get("/static/uPlot.LICENSE.txt")[2]
    status, headers, body = console.get("/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert b"logtide_info{" in body
    status, _, body = console.get("/metrics?name[]=logtide_writes_total")
    assert status == 200 and body.decode().splitlines()[-1] == "logtide_writes_total 0.0"
    status, headers, _ = console.get("/metrics", {"Accept": "application/openmetrics-text; version=1.0.0"})
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert "console http://127.0.0.1:" in console.srv.output()


def test_no_page_asks_the_internet_for_anything(console):
    """Every script and stylesheet the page loads comes from the server itself (no CDN at run time)."""
    _, _, html = console.get("/")
    assert b"http://" not in html and b"https://" not in html
    _, headers, _ = console.get("/")
    assert "default-src 'self'" in headers["Content-Security-Policy"]


def test_overview_counts_the_writes_metrics_count(console):
    for i in range(4):
        console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (%s, 0, 'x')", [i])
    o = console.api("overview")
    assert o["writes_total"] == metric(console, "logtide_writes_total") == 4
    assert o["cdc_log_rows_total"] == metric(console, "logtide_cdc_log_rows_written_total") == 8
    assert o["connections"] >= 1 and o["generation"]["streams"] == 32
    # the first generation covers all earlier time: no 1970 start time shown
    assert o["generation"]["time"] is None and o["generation"]["count"] == 1
    assert o["requests"]["QUERY"]["count"] >= 4
    assert o["data_dir"].endswith("/data") and o["size_bytes"] > 0


def test_table_page_shows_describe_cdc_options_log_size_and_changefeeds(console):
    console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 'a')")
    t = console.api("table?ks=ks&table=t")
    described = "".join(r.create_statement for r in console.session.execute("DESCRIBE TABLE ks.t"))
    assert t["describe"].strip() in described
    assert t["cdc"]["options"] == {"enabled": True, "preimage": True, "postimage": True, "delta": "full", "ttl": 86400}
    assert t["cdc"]["log_table"] == "ks.t_scylla_cdc_log"
    assert t["cdc"]["streams_with_rows"] == 1 and t["cdc"]["log_bytes"] > 0
    assert [f["path"] for f in t["changefeeds"]] == ["ks/t/f"]


def test_changefeed_page_shows_offsets_and_each_consumers_lag_per_partition(console):
    for i in range(3):
        console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (%s, 0, 'x')", [i])
    f = console.api("changefeed?path=ks/t/f")
    assert (f["mode"], f["format"], f["state"], f["kafka_name"]) == ("NEW_AND_OLD_IMAGES", "JSON", "ENABLED", "ks.t.f")
    assert f["partitions"] == [{"partition": 0, "start_offset": 0, "end_offset": 3, "records": 3}]
    [billing] = f["consumers"]
    assert billing["lag"] == 3 == metric(console, "logtide_changefeed_consumer_lag_records", consumer="billing")
    assert billing["partitions"] == [{"partition": 0, "committed": None, "lag": 3}]
    assert console.api("consumers")["consumers"][0]["lag"] == 3
    assert console.get("/api/changefeed?path=ks/t/nope")[0] == 404


def test_feed_pages_hold_under_concurrent_writes(console):
    """Paging from offset 0 two records at a time while rows keep coming: every record exactly once, in order."""
    for i in range(5):
        console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (%s, 0, 'x')", [i])
    seen, cursor = [], None
    for i in range(5, 12):
        page = console.api("records?path=ks/t/f&from=offset&value=0&limit=2" + (f"&cursor={cursor}" if cursor else ""))
        seen += [r["offset"] for r in page["records"]]
        cursor = page["next"]
        console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (%s, 0, 'x')", [i])
    while True:
        page = console.api(f"records?path=ks/t/f&limit=2&cursor={cursor}")
        if not page["records"]:
            break
        seen += [r["offset"] for r in page["records"]]
        cursor = page["next"]
    assert seen == list(range(12))


def test_feed_records_filter_by_key_and_start_at_a_time(console):
    console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 'a')")
    console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (2, 1, 'b')")
    page = console.api("records?path=ks/t/f&from=offset&value=0&key=%5B2%2C")
    assert [r["value"]["newImage"] for r in page["records"]] == [{"v": "b"}]
    time.sleep(0.05)
    since = int(time.time() * 1000)
    console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (3, 1, 'c')")
    page = console.api(f"records?path=ks/t/f&from=time&value={since}")
    assert [r["value"]["key"] for r in page["records"]] == [[3, 1]]
    status, _, body = console.get("/api/records?path=ks/t/f&from=time&value=yesterday")
    assert status == 400 and b"'yesterday' is not a time" in body


def test_log_entries_group_images_and_name_operations_and_page_forward(console):
    console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 'a')")
    console.session.execute("UPDATE ks.t SET v = 'b' WHERE pk = 1 AND ck = 1")
    page = console.api("log?ks=ks&table=t&limit=1")
    [entry] = page["entries"]
    assert entry["key"] == [1, 1]
    assert [r["operation"] for r in entry["preimage"]] == ["preimage"]
    assert [(r["operation"], r["values"]["v"]) for r in entry["changes"]] == [("update", "b")]
    assert [r["operation"] for r in entry["postimage"]] == ["postimage"]
    after = page["next"]
    assert console.api(f"log?ks=ks&table=t&cursor={after}")["entries"] == []
    console.session.execute("DELETE FROM ks.t WHERE pk = 1 AND ck = 1")
    [deleted] = console.api(f"log?ks=ks&table=t&cursor={after}")["entries"]
    assert [r["operation"] for r in deleted["changes"]] == ["row delete"]


def test_every_method_but_get_is_refused_and_changes_nothing(console):
    console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 'a')")
    before = console.api("changefeed?path=ks/t/f")
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND"):
        for path in ("/", "/metrics", "/api/tables", "/api/changefeed?path=ks/t/f", "/static/console.js"):
            status, headers, body = request(console, method, path, b"{}", {"Content-Type": "application/json"})
            assert status == 405, (method, path, status)
            assert b"read-only" in body and b"Traceback" not in body
    for method in ("GET", "PUT", "DELETE"):  # a session needs --auth, and POST
        assert request(console, method, "/login")[0] == 405
    assert request(console, "POST", "/login", b"username=a&password=b")[0] == 400
    after = console.api("changefeed?path=ks/t/f")
    assert {**after, "now_ms": 0} == {**before, "now_ms": 0}
    assert metric(console, "logtide_writes_total") == 1


def test_bad_paths_and_parameters_answer_pages_naming_the_problem(console):
    status, headers, body = console.get("/nothing/here")
    assert status == 404 and headers["Content-Type"].startswith("text/html") and b"no page /nothing/here" in body
    assert console.get("/static/../web.py")[0] == 404
    assert console.get("/static/nope.js")[0] == 404
    status, _, body = console.get("/api/nothing")
    assert status == 404 and json.loads(body) == {"error": "no API /api/nothing"}
    status, _, body = console.get("/api/table?ks=ks")
    assert status == 400 and json.loads(body) == {"error": "the table parameter is missing"}
    status, _, body = console.get("/api/records?path=ks/t/f&limit=100000")
    assert status == 400 and b"limit must be between 1 and 200" in body
    status, _, body = console.get("/api/records?path=ks/t/f&cursor=%%%")
    assert status == 400 and b"cursor" in body
    status, _, body = console.get("/api/log?ks=ks&table=t&from=offset")
    assert status == 400 and b"start must be time or end" in body


def test_a_huge_request_head_is_refused_and_the_port_keeps_serving(console):
    host, port = console.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 8000 + b"\r\n" + b"X-Pad2: " + b"b" * 9000
                  + b"\r\n\r\n")
        answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 431")
    status, headers, body = request(console, "POST", "/login", b"x" * 10_000)
    assert status == 413
    assert console.get("/metrics")[0] == 200


def test_a_slow_request_head_is_cut_off_and_connections_are_capped(console):
    """A slowloris trickling its head is closed at the head deadline (15 s); past 64 connections, new ones
    are closed at once, and the port serves again as soon as some go."""
    host, port = console.url.removeprefix("http://").split(":")
    slow = socket.create_connection((host, int(port)), timeout=40)
    slow.sendall(b"GET / HTTP/1.1\r\n")
    started = time.monotonic()
    held = [socket.create_connection((host, int(port)), timeout=30) for _ in range(70)]
    try:
        refused = 0
        for s in held[-6:]:
            s.settimeout(5)
            try:
                refused += s.recv(1) == b""
            except (ConnectionResetError, TimeoutError, socket.timeout):
                pass
        assert refused >= 5
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 30
    while console.get("/metrics")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    try:
        while slow.recv(1024):
            slow.sendall(b"X")
    except OSError:
        pass
    assert 10 < time.monotonic() - started < 35
    slow.close()


def test_console_off_serves_only_metrics(tmp_path):
    c = start_console(tmp_path / "d", "--console", "off")
    with c.srv:
        assert c.get("/metrics")[0] == 200
        status, _, body = c.get("/")
        assert status == 404 and b"the console is off" in body
        assert c.get("/api/overview")[0] == 404
        assert "console http" not in c.srv.output()
        assert c.srv.stop() == 0
    (tmp_path / "off.toml").write_text("console = false\n")
    c = start_console(tmp_path / "d", "--config", str(tmp_path / "off.toml"))
    with c.srv:
        assert c.get("/")[0] == 404 and c.get("/metrics")[0] == 200
        assert c.srv.stop() == 0
    (tmp_path / "bad.toml").write_text('console = "maybe"\n')
    with ServeProcess.logtide("--data-dir", str(tmp_path / "d"), "--config", str(tmp_path / "bad.toml")) as srv:
        assert srv.proc.wait(60) == 2
        assert "console" in srv.output()


def test_a_non_loopback_console_without_auth_logs_a_warning(tmp_path):
    with ServeProcess.logtide("--data-dir", str(tmp_path), "--host", "0.0.0.0", "--metrics-port",
                              str(free_port())) as srv:
        srv.wait_listening()
        assert "WARNING logtide.server: the web console on 0.0.0.0 is served without --auth" in srv.output()
        assert srv.stop() == 0


def test_consumers_show_a_kafka_groups_members_beside_its_offsets_and_lag(console):
    from kafka import KafkaConsumer

    for i in range(3):
        console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (%s, 0, 'x')", [i])
    consumer = KafkaConsumer("ks.t.f", bootstrap_servers=console.kafka, group_id="billing", client_id="billing-app",
                             auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6000,
                             heartbeat_interval_ms=300)
    try:
        got = 0
        deadline = time.monotonic() + 60
        while got < 3:
            assert time.monotonic() < deadline
            got += sum(len(m) for m in consumer.poll(timeout_ms=500).values())
        consumer.commit()
        [row] = console.api("consumers")["consumers"]
        assert (row["consumer"], row["kafka_topic"], row["lag"]) == ("billing", "ks.t.f", 0)
        assert row["offsets"] == [{"partition": 0, "committed": 3, "end_offset": 3, "lag": 0}]
        group = row["group"]
        assert group["state"] == "Stable" and group["protocol_type"] == "consumer"
        assert [m["client_id"] for m in group["members"]] == ["billing-app"]
        assert group["generation"] >= 1 and group["members"][0]["client_host"]
        assert console.api("changefeed?path=ks/t/f")["consumers"][0]["group"]["members"][0]["client_id"] == "billing-app"
    finally:
        consumer.close()
    console.session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (9, 0, 'x')")
    assert console.api("consumers")["consumers"][0]["lag"] == 1
