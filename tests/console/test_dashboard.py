"""``dashboards/logtide.json``: an importable Grafana dashboard whose every PromQL metric is one logtide exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import logtide
from logtide.server import BackgroundServer, ServerConfig

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "logtide.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def exported_names(tmp_path: Path) -> set[str]:
    """Every series name a served database's registry exposes, from its families' names and types (a family
    with no sample yet, such as the initial-scan gauge, counts)."""
    db = logtide.open(tmp_path)
    with BackgroundServer(db, ServerConfig(port=0), close_db=True) as srv:
        names = set()
        for family in srv.server.metrics.registry.collect():
            names.update(family.name + s for s in SUFFIXES[family.type])
        return names


def expressions(doc: dict) -> list[str]:
    out = [t["expr"] for p in doc["panels"] for t in p.get("targets", ())]
    out += [v["query"] for v in doc["templating"]["list"] if v["type"] == "query"]
    return out


def test_the_dashboard_is_grafana_json_with_the_panels_an_operator_needs():
    doc = json.loads(DASHBOARD.read_text())
    assert doc["__inputs"][0]["pluginId"] == "prometheus" and doc["schemaVersion"] >= 36
    titles = " | ".join(p["title"] for p in doc["panels"])
    for needed in ("requests", "latency", "errors", "CDC log rows", "consumer lag", "Connections"):
        assert needed in titles, needed
    assert len({p["id"] for p in doc["panels"]}) == len(doc["panels"])
    for p in doc["panels"]:
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert p["targets"] and all(t["expr"] for t in p["targets"])


def test_every_metric_the_dashboard_queries_exists_in_logtides_registry(tmp_path):
    names = exported_names(tmp_path)
    used = {m for e in expressions(json.loads(DASHBOARD.read_text())) for m in re.findall(r"\blogtide_\w+", e)}
    assert used and used <= names, sorted(used - names)
    families = {n.removesuffix("_total") for n in names if n.endswith("_total")}
    assert {"logtide_cql_requests", "logtide_cql_request_errors", "logtide_writes", "logtide_cdc_log_rows_written",
            "logtide_changefeed_records_written"} <= families
