"""``logtide serve`` exposes Prometheus metrics over HTTP; each server has its own registry."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import logtide
from logtide.changefeed.api import ConsumerInfo, TopicDescription, TopicPartition
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


def test_metrics_port_zero_disables_the_endpoint(tmp_path):
    with ServeProcess.logtide("--data-dir", str(tmp_path)) as srv:
        srv.wait_listening()
        assert srv.metrics_url is None
        assert "metrics off" in srv.output()
        assert srv.stop() == 0


def test_a_taken_metrics_port_is_a_warning_and_cql_is_still_served(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        with ServeProcess.logtide("--data-dir", str(tmp_path), "--metrics-port", str(busy)) as srv:
            port = srv.wait_listening()
            assert f"cannot serve metrics on 127.0.0.1:{busy}" in srv.output()
            c = cluster(port)
            assert c.connect().execute("SELECT release_version FROM system.local").one()
            c.shutdown()
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


class Topics:
    """A stand-in changefeed TopicReader (the real one lands with changefeeds): one topic, two consumers."""

    def topics(self):
        return [TopicDescription("ks/t/feed", "ks", "t", "feed", 2, "UPDATES", "JSON", "INITIAL_SCAN", 86400)]

    def partitions(self, path):
        return [TopicPartition(0, 0, 10), TopicPartition(1, 2, 5)]

    def consumers(self, path):
        return [ConsumerInfo("fresh"), ConsumerInfo("late", committed={0: 7, 1: 5})]

    def initial_scan_progress(self, path):
        return 0.25


def test_changefeed_families_show_records_written_consumer_lag_and_initial_scan_progress():
    families = {f.name: f for f in changefeed_families(Topics())}
    written = families["logtide_changefeed_records_written"].samples
    assert [(s.labels, s.value) for s in written] == [({"changefeed": "ks/t/feed"}, 15)]
    lag = families["logtide_changefeed_consumer_lag_records"].samples
    assert sorted((s.labels["consumer"], s.value) for s in lag) == [("fresh", 13), ("late", 3)]
    scan = families["logtide_changefeed_initial_scan_progress"].samples
    assert [(s.labels, s.value) for s in scan] == [({"changefeed": "ks/t/feed"}, 0.25)]
    assert all(not f.samples for f in changefeed_families(None) or ())
