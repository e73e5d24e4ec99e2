"""Prometheus metrics of a running ``logtide serve`` (ScyllaDB serves its own on port 9180).

Each server has its own ``CollectorRegistry`` (no module-level state), so
several servers in one process (tests) never mix their numbers.  Request
metrics are recorded by the connections as requests finish; everything else
is read when scraped:

==============================================  =========  ==============================================
metric                                          type       what
==============================================  =========  ==============================================
``logtide_cql_requests_total{kind}``            counter    requests answered, by opcode (QUERY, EXECUTE, ...)
``logtide_cql_request_errors_total{kind,error}`` counter   requests answered with an ERROR, by error class
``logtide_cql_request_latency_seconds{kind}``   histogram  time from decoding a request to its answer
``logtide_cql_connections``                     gauge      open client connections
``logtide_cql_requests_in_flight``              gauge      statements running or queued
``logtide_writes_total``                        counter    mutations committed (statements, batches)
``logtide_cdc_log_rows_written_total``          counter    CDC log rows written
``logtide_storage_bytes``                       gauge      bytes of the data directory's database files
``logtide_cdc_generation_streams``              gauge      streams of the current CDC generation
``logtide_changefeed_records_written_total``    counter    records in each changefeed topic (``changefeed``)
``logtide_changefeed_consumer_lag_records``     gauge      records a consumer has not committed yet
``logtide_changefeed_initial_scan_progress``    gauge      0..1 while a changefeed's initial scan runs
``logtide_info{version}``                       gauge      always 1; the logtide version as a label
==============================================  =========  ==============================================

The changefeed families come from ``logtide.observe.changefeeds`` over the
served database's live reader (``db.changefeeds``, spec ``004``): one
``changefeed`` label per topic (``ks/t/name``), and a ``consumer`` label per
consumer for the lag; the initial-scan gauge exists only while a scan runs.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from typing import Any, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from . import observe
from .version import package_version

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0)
BUCKET_LABELS = tuple(floatToGoString(b) for b in LATENCY_BUCKETS) + ("+Inf",)


class KindStats:
    """One request kind's answers: a count per latency bucket (not cumulative; the last is +Inf), their sum,
    and when the kind was first seen.  Plain attributes, updated on the event loop only, read at scrape time."""

    __slots__ = ("buckets", "total", "created")

    def __init__(self) -> None:
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0
        self.created = time.time()


class RequestStats(Collector):
    """``logtide_cql_requests_total``, ``logtide_cql_request_errors_total`` and
    ``logtide_cql_request_latency_seconds``, as prometheus_client's ``Counter`` and ``Histogram`` would expose
    them (same names, labels, samples and ``_created`` series), kept as plain numbers: a request costs a
    dictionary lookup, a bisection and two additions instead of two metric children each behind a mutex."""

    def __init__(self) -> None:
        self.kinds: dict[str, KindStats] = {}
        self.errors: dict[tuple[str, str], list[float]] = {}  # (kind, error) -> [count, created]

    def request_done(self, kind: str, error: str | None, seconds: float) -> None:
        """Record one answered request (``error``: the error class name, None on success)."""
        stats = self.kinds.get(kind)
        if stats is None:
            stats = self.kinds[kind] = KindStats()
        stats.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        stats.total += seconds
        if error is not None:
            count = self.errors.get((kind, error))
            if count is None:
                count = self.errors[(kind, error)] = [0, time.time()]
            count[0] += 1

    def collect(self) -> Iterator[Metric]:
        created = getattr(prometheus_metrics, "_use_created", True)  # PROMETHEUS_DISABLE_CREATED_SERIES
        kinds = list(self.kinds.items())
        requests = CounterMetricFamily("logtide_cql_requests", "CQL requests answered, by opcode", labels=["kind"])
        latency = HistogramMetricFamily("logtide_cql_request_latency_seconds", "Time from a request to its answer",
                                        labels=["kind"])
        for kind, stats in kinds:
            counts, total = list(stats.buckets), stats.total
            cumulative, acc = [], 0.0
            for label, n in zip(BUCKET_LABELS, counts):
                acc += n
                cumulative.append((label, acc))
            requests.add_metric([kind], acc, created=stats.created if created else None)
            latency.add_metric([kind], cumulative, total)
            if created:
                latency.samples.append(Sample(latency.name + "_created", {"kind": kind}, stats.created, None))
        errors = CounterMetricFamily("logtide_cql_request_errors", "CQL requests answered with an ERROR, by error class",
                                     labels=["kind", "error"])
        for (kind, error), (count, since) in list(self.errors.items()):
            errors.add_metric([kind, error], float(count), created=since if created else None)
        yield from (requests, errors, latency)


class _ScrapeCollector(Collector):
    """Families read at scrape time from the server and its database."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        server, db = self.server, self.server.db
        yield _info()
        yield GaugeMetricFamily("logtide_cql_connections", "Open client connections",
                                value=len(server.connections))
        yield GaugeMetricFamily("logtide_cql_requests_in_flight", "Statements running or queued",
                                value=len(server.tasks))
        counters = getattr(db, "counters", None)
        if counters is not None:
            yield CounterMetricFamily("logtide_writes", "Mutations committed (statements and batches that wrote)",
                                      value=counters.mutations)
            yield CounterMetricFamily("logtide_cdc_log_rows_written", "CDC log rows written",
                                      value=counters.cdc_log_rows)
        expiry = getattr(db, "row_expiry", None)
        if expiry is not None:  # ScyllaDB's scylla_expiration_* (the per-row TTL's scan, engine/row_expiry.py)
            stats = expiry.stats
            yield CounterMetricFamily("logtide_expiration_scan_passes", "Passes of the row TTL expiration scan "
                                      "over the database", value=stats.scan_passes)
            yield CounterMetricFamily("logtide_expiration_scan_table", "Scans of a table with a TTL column",
                                      value=stats.scan_table)
            yield CounterMetricFamily("logtide_expiration_items_deleted", "Rows deleted after their TTL column's "
                                      "expiration time", value=stats.items_deleted)
        yield GaugeMetricFamily("logtide_storage_bytes", "Bytes of the data directory's database files",
                                value=observe.data_dir_bytes(db.path))
        gens = getattr(db, "generations", None)
        if gens is not None:
            yield GaugeMetricFamily("logtide_cdc_generation_streams", "Streams of the current CDC generation",
                                    value=len(gens.current.all_streams()))
        yield from changefeed_families(observe.topic_reader(db))


def _info() -> Metric:
    family = GaugeMetricFamily("logtide_info", "logtide build information", labels=["version"])
    family.add_metric([package_version()], 1)
    return family


def changefeed_families(reader: Any) -> Iterator[Metric]:
    """Records written, consumer lag and initial-scan progress of every changefeed (none without a reader)."""
    written = CounterMetricFamily("logtide_changefeed_records_written", "Records written to each changefeed topic",
                                  labels=["changefeed"])
    lag = GaugeMetricFamily("logtide_changefeed_consumer_lag_records",
                            "Records of a changefeed a consumer has not committed yet", labels=["changefeed", "consumer"])
    scan = GaugeMetricFamily("logtide_changefeed_initial_scan_progress",
                             "Fraction of the table an initial scan has read (0..1)", labels=["changefeed"])
    for cf in observe.changefeeds(reader) if reader is not None else ():
        written.add_metric([cf.path], cf.records_written)
        for c in cf.consumers:
            lag.add_metric([cf.path, c.name], c.lag)
        if cf.initial_scan_progress is not None:
            scan.add_metric([cf.path], cf.initial_scan_progress)
    yield from (written, lag, scan)


class ServerMetrics:
    """One server's registry: request counters and latencies, plus the scrape-time families."""

    def __init__(self, server: Any) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = RequestStats()
        self.request_done = self.requests.request_done  # called by the connections on the event loop
        self.registry.register(self.requests)
        self.registry.register(_ScrapeCollector(server))
        self.http: Any = None  # the HTTP endpoint serving /metrics (logtide.console.start_console sets it)

    def close(self) -> None:
        """Stop the HTTP endpoint, if serving."""
        if self.http is not None:
            self.http.shutdown()
            self.http.server_close()
            self.http = None
