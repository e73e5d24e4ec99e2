"""Request metrics kept as plain numbers expose exactly what prometheus_client's Counter and Histogram would."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from logtide.metrics import LATENCY_BUCKETS, RequestStats

ANSWERS = [("EXECUTE", None, 0.00004), ("EXECUTE", None, 0.0001), ("EXECUTE", None, 0.0003), ("QUERY", None, 0.02),
           ("QUERY", "InvalidRequest", 0.0009), ("EXECUTE", "WriteTimeout", 11.0), ("PREPARE", None, 0.0025),
           ("QUERY", "InvalidRequest", 0.5)]


def prometheus_client_exposition(answers) -> str:
    registry = CollectorRegistry(auto_describe=False)
    requests = Counter("logtide_cql_requests", "CQL requests answered, by opcode", ["kind"], registry=registry)
    errors = Counter("logtide_cql_request_errors", "CQL requests answered with an ERROR, by error class",
                     ["kind", "error"], registry=registry)
    latency = Histogram("logtide_cql_request_latency_seconds", "Time from a request to its answer", ["kind"],
                        buckets=LATENCY_BUCKETS, registry=registry)
    for kind, error, seconds in answers:
        requests.labels(kind).inc()
        latency.labels(kind).observe(seconds)
        if error is not None:
            errors.labels(kind, error).inc()
    return generate_latest(registry).decode()


def request_stats_exposition(answers) -> str:
    registry = CollectorRegistry(auto_describe=False)
    stats = RequestStats()
    registry.register(stats)
    for kind, error, seconds in answers:
        stats.request_done(kind, error, seconds)
    return generate_latest(registry).decode()


def without_timestamps(text: str) -> str:
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", text)


def test_request_stats_expose_the_same_samples_as_prometheus_client_counters_and_histograms():
    expected = without_timestamps(prometheus_client_exposition(ANSWERS))
    assert 'logtide_cql_request_latency_seconds_bucket{kind="EXECUTE",le="0.0001"} 2.0' in expected
    assert without_timestamps(request_stats_exposition(ANSWERS)) == expected


def test_request_stats_before_any_request_expose_the_empty_families():
    assert request_stats_exposition([]) == prometheus_client_exposition([])
