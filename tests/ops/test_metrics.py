"""``logtide serve`` exposes Prometheus metrics over HTTP; each server has its own registry."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import logtide
from logtide import observe
from logtide.metrics import changefeed_families
from logtide.version import package_version
from logtide.server import BackgroundServer, ServerConfig

from ..server.conftest import KEYSPACE_DDL, cluster
from .serving import ServeProcess, free_port


def samples(url: str) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_serve_exposes_requests_errors_latencies_writes_and_cdc_rows_over_http(tmp_path):
    metrics_port = free_port()
    with ServeProcess.logtide("--data-dir", str(tmp_path), "--metrics-port", str(metrics_port)) as srv:
        port = srv.wait_listening()
        assert srv.metrics_url == f"http://127.0.0.1:{metrics_port}/metrics"
        c = cluster(port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("m"))
        s.execute("CREATE TABLE m.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'postimage': true}")
        insert = s.prepare("INSERT INTO m.t (pk, v) VALUES (?, ?)")
        for i in range(5):
            s.execute(insert, [i, i])
        for _ in range(3):
            try:
                s.execute("SELECT * FROM m.nope")
            except Exception:
                pass
        before = samples(srv.metrics_url)
        assert before[("logtide_cql_connections", ())] >= 1
        assert before[("logtide_cql_requests_total", (("kind", "EXECUTE"),))] == 5
        assert before[("logtide_cql_requests_total", (("kind", "PREPARE"),))] >= 1
        assert before[("logtide_cql_request_errors_total", (("error", "InvalidRequest"), ("kind", "QUERY")))] >= 3
        assert before[("logtide_cql_request_latency_seconds_count", (("kind", "EXECUTE"),))] == 5
        assert before[("logtide_cql_request_latency_seconds_bucket", (("kind", "EXECUTE"), ("le", "+Inf")))] == 5
        assert before[("logtide_writes_total", ())] == 5
        assert before[("logtide_cdc_log_rows_written_total", ())] == 10  # a delta and a postimage per insert
        assert before[("logtide_storage_bytes", ())] > 0
        assert before[("logtide_cdc_generation_streams", ())] == 32
        assert [k for k in before if k[0] == "logtide_info"] == [("logtide_info", (("version", package_version()),))]
        s.execute(insert, [9, 9])
        after = samples(srv.metrics_url)
        assert after[("logtide_writes_total", ())] == 6
        assert after[("logtide_cdc_log_rows_written_total", ())] == 12
        c.shutdown()
        assert srv.stop() == 0


def test_metrics_port_off_disables_the_endpoint(tmp_path):
    with ServeProcess.logtide("--data-dir", str(tmp_path)) as srv:
        srv.wait_listening()
        assert srv.metrics_url is None
        assert "metrics off" in srv.output()
        assert srv.stop() == 0


def test_each_server_counts_only_its_own_requests(tmp_path):
    dbs = [logtide.open(tmp_path / n, synchronous="OFF") for n in ("a", "b")]
    servers = [BackgroundServer(db, ServerConfig(port=0), close_db=True).start() for db in dbs]
    try:
        c = cluster(servers[0].port)
        c.connect().execute("SELECT * FROM system.local")
        c.shutdown()
        a, b = (srv.server.metrics.registry for srv in servers)
        assert a.get_sample_value("logtide_cql_requests_total", {"kind": "QUERY"}) >= 1
        assert b.get_sample_value("logtide_cql_requests_total", {"kind": "QUERY"}) is None
    finally:
        for srv in servers:
            srv.stop()


def test_serve_exports_changefeed_records_and_consumer_lag(tmp_path):
    with ServeProcess.logtide("--data-dir", str(tmp_path), "--metrics-port", str(free_port())) as srv:
        port = srv.wait_listening()
        c = cluster(port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("m"))
        s.execute("CREATE TABLE m.t (pk int PRIMARY KEY, v int)")
        s.execute("ALTER TABLE m.t ADD CHANGEFEED feed WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
                  "TOPIC_MIN_ACTIVE_PARTITIONS = 3)")
        s.execute('ALTER TOPIC "m/t/feed" ADD CONSUMER app')
        s.execute('ALTER TOPIC "m/t/feed" ADD CONSUMER audit')
        for i in range(6):
            s.execute("INSERT INTO m.t (pk, v) VALUES (%s, %s)", (i, i))
        got = samples(srv.metrics_url)
        assert got[("logtide_changefeed_records_written_total", (("changefeed", "m/t/feed"),))] == 6
        lag = {dict(k[1])["consumer"]: v for k, v in got.items() if k[0] == "logtide_changefeed_consumer_lag_records"}
        assert lag == {"app": 6, "audit": 6}
        assert not [k for k in got if k[0] == "logtide_changefeed_initial_scan_progress"]
        # a consumer commits 4 records through the CLI, beside the server
        read = subprocess.run([sys.executable, "-m", "logtide", "topic", "read", "m/t/feed", "--consumer", "app",
                               "--format", "newline-delimited", "--limit", "4", "--data-dir", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
        assert read.returncode == 0, read.stderr
        assert len(read.stdout.splitlines()) == 4
        got = samples(srv.metrics_url)
        assert got[("logtide_changefeed_consumer_lag_records", (("changefeed", "m/t/feed"), ("consumer", "app")))] == 2
        assert got[("logtide_changefeed_consumer_lag_records", (("changefeed", "m/t/feed"), ("consumer", "audit")))] == 6
        c.shutdown()
        assert srv.stop() == 0


def paused_initial_scan(db) -> None:
    """Table ``m.t`` with 10 rows (one a partition) and changefeed ``m/t/snap`` whose initial scan waits (the
    background worker paused: the test drives it with ``db.feeds.scan_step``)."""
    s = db.session()
    s.execute(KEYSPACE_DDL.format("m"))
    s.execute("CREATE TABLE m.t (pk int PRIMARY KEY, v int)")
    for i in range(10):
        s.execute(f"INSERT INTO m.t (pk, v) VALUES ({i}, {i})")
    db.feeds.pause()
    s.execute("ALTER TABLE m.t ADD CHANGEFEED snap WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', INITIAL_SCAN = TRUE)")


def test_changefeed_families_show_the_initial_scan_progress_of_a_live_database(tmp_path):
    with logtide.open(tmp_path, synchronous="OFF") as db:
        paused_initial_scan(db)
        db.session().execute('ALTER TOPIC "m/t/snap" ADD CONSUMER app')
        db.feeds.scan_step(partitions=4)
        families = {f.name: f for f in changefeed_families(observe.topic_reader(db))}
        assert [(x.labels, x.value) for x in families["logtide_changefeed_initial_scan_progress"].samples] == [
            ({"changefeed": "m/t/snap"}, 0.4)]
        assert [(x.labels, x.value) for x in families["logtide_changefeed_records_written"].samples] == [
            ({"changefeed": "m/t/snap"}, 4)]
        assert [(x.labels, x.value) for x in families["logtide_changefeed_consumer_lag_records"].samples] == [
            ({"changefeed": "m/t/snap", "consumer": "app"}, 4)]
        while db.feeds.scan_step():
            pass
        families = {f.name: f for f in changefeed_families(observe.topic_reader(db))}
        assert not families["logtide_changefeed_initial_scan_progress"].samples
        assert families["logtide_changefeed_records_written"].samples[0].value == 10
    assert all(not f.samples for f in changefeed_families(None))
