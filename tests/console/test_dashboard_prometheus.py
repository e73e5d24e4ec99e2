"""``dashboards/logtide.json`` against a real Prometheus scraping a real ``logtide serve``: every query of every
panel and the ``job`` variable are PromQL that Prometheus evaluates, and each gives the series an operator expects
once the server has been written to, has refused a statement and has a changefeed consumer behind."""

from __future__ import annotations

import json
import time

import pytest

from ..ops.serving import free_port
from .conftest import console_with_feed
from .prometheus import JOB, concrete, prometheus_or_skip, scraping
from .test_dashboard import DASHBOARD

# panels whose series exist only while something runs (an initial scan)
EMPTY_WHEN_IDLE = {"Initial scan progress"}


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """A console's server (:func:`console_with_feed`) after writes, a refused statement and a lagging consumer,
    scraped by Prometheus for a few seconds, once for the module's tests: (prometheus, console)."""
    prometheus_or_skip()
    tmp = tmp_path_factory.mktemp("dashboard")
    with console_with_feed(tmp / "data") as console, scraping(console.url, tmp / "prometheus", free_port()) as prom:
        insert = console.session.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?)")
        for i in range(40):
            console.session.execute(insert, (i % 5, i, f"v{i}"))
            time.sleep(0.1)
        with pytest.raises(Exception, match="unconfigured table"):
            console.session.execute("SELECT * FROM ks.missing")
        prom.wait(f'logtide_changefeed_consumer_lag_records{{job="{JOB}"}} > 0')
        prom.wait(f'logtide_cql_request_errors_total{{job="{JOB}"}}')
        time.sleep(3)  # a few scrapes after the last write, for the rates' windows
        yield prom, console


def test_every_dashboard_query_evaluates_in_prometheus_and_shows_the_servers_series(scraped):
    prom, _ = scraped
    doc = json.loads(DASHBOARD.read_text())
    empty = []
    for panel in doc["panels"]:
        for target in panel["targets"]:
            series = prom.query(concrete(target["expr"]))  # raises with Prometheus's error on bad PromQL
            if not series and panel["title"] not in EMPTY_WHEN_IDLE:
                empty.append((panel["title"], target["expr"]))
    assert not empty, empty


def test_the_dashboards_figures_agree_with_what_the_server_did(scraped):
    prom, console = scraped

    def value(expr: str) -> float:
        return float(prom.query(concrete(expr))[0]["value"][1])

    panels = {p["title"]: p for p in json.loads(DASHBOARD.read_text())["panels"]}
    assert value(panels["CQL connections"]["targets"][0]["expr"]) >= 1
    assert value(panels["CDC streams"]["targets"][0]["expr"]) == 32
    assert value(panels["Max consumer lag"]["targets"][0]["expr"]) == 40  # billing has read nothing
    lag = prom.query(concrete(panels["Changefeed consumer lag"]["targets"][0]["expr"]))
    assert {(s["metric"]["changefeed"], s["metric"]["consumer"]) for s in lag} == {("ks/t/f", "billing")}
    errors = prom.query(concrete(panels["CQL errors/s by error"]["targets"][0]["expr"]))
    assert any(s["metric"].get("kind") == "QUERY" for s in errors), errors
    kinds = {s["metric"]["kind"] for s in prom.query(concrete(panels["CQL requests/s by kind"]["targets"][0]["expr"]))}
    assert {"EXECUTE", "PREPARE", "QUERY"} <= kinds


def test_the_job_variable_lists_the_scraped_servers(scraped):
    prom, _ = scraped
    doc = json.loads(DASHBOARD.read_text())
    variable = next(v for v in doc["templating"]["list"] if v["name"] == "job")
    # Grafana's label_values(metric, label) is Prometheus's label values API with a match[] selector
    assert variable["query"] == "label_values(logtide_info, job)"
    assert prom.api("label/job/values", **{"match[]": "logtide_info"}) == [JOB]
