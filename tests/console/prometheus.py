"""A real Prometheus scraping a real ``logtide serve``, for the dashboard's tests and ``tools/dashboard_picture.py``.

Debian's ``prometheus`` is installed by ``tests/conftest.py`` when missing and the tests run as root with apt-get
(as kcat and Chromium are); otherwise :func:`prometheus_or_skip` skips the calling test, saying why.  The
dashboard's PromQL is made concrete as Grafana makes it: ``$job`` is the scrape job's name and
``$__rate_interval`` a few scrape intervals.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

JOB = "logtide"
SCRAPE_SECONDS = 1
RATE_INTERVAL = "5s"  # Grafana's $__rate_interval is at least four scrape intervals


def prometheus_missing_reason() -> str | None:
    """Why the Prometheus tests cannot run here (None: they can)."""
    if shutil.which("prometheus") is None:
        return ("Debian's prometheus is not installed (tests/conftest.py installs it when run as root with "
                "apt-get)")
    return None


def prometheus_or_skip() -> None:
    import pytest

    reason = prometheus_missing_reason()
    if reason:
        pytest.skip(reason)


def concrete(expr: str) -> str:
    """A dashboard expression with Grafana's variables replaced as Grafana replaces them for one job."""
    return expr.replace("$job", JOB).replace("$__rate_interval", RATE_INTERVAL)


class Prometheus:
    """A Prometheus server's HTTP API (``/api/v1``)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def api(self, path: str, **params: Any) -> Any:
        """The ``data`` of a successful API answer; AssertionError with Prometheus's error otherwise."""
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=30) as r:
                answer = json.loads(r.read())
        except urllib.error.HTTPError as e:
            answer = json.loads(e.read())
        assert answer["status"] == "success", (path, params, answer.get("error"))
        return answer["data"]

    def query(self, expr: str) -> list[dict]:
        """The series of an instant query (a vector's elements)."""
        return self.api("query", query=expr)["result"]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict]:
        return self.api("query_range", query=expr, start=start, end=end, step=step)["result"]

    def wait(self, expr: str, timeout: float = 60) -> list[dict]:
        """The first non-empty answer to ``expr`` within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.query(expr)
            if got or time.monotonic() > deadline:
                assert got, f"Prometheus gave nothing for {expr} within {timeout} s"
                return got
            time.sleep(0.5)


@contextmanager
def scraping(metrics_url: str, directory: Path, port: int) -> Iterator[Prometheus]:
    """Prometheus on ``127.0.0.1:port`` scraping ``metrics_url`` (``http://host:port``) every second as job
    ``logtide``, its storage in ``directory``; stopped on exit."""
    target = urllib.parse.urlsplit(metrics_url).netloc
    config = directory / "prometheus.yml"
    directory.mkdir(parents=True, exist_ok=True)
    config.write_text(f"global:\n  scrape_interval: {SCRAPE_SECONDS}s\n  evaluation_interval: {SCRAPE_SECONDS}s\n"
                      f"scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n      - targets: ['{target}']\n")
    log = open(directory / "prometheus.log", "wb")
    proc = subprocess.Popen([shutil.which("prometheus") or "prometheus", f"--config.file={config}",
                             f"--storage.tsdb.path={directory / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    prom = Prometheus(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(prom.url + "/-/ready", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, (directory / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "Prometheus was not ready within 60 s"
            time.sleep(0.2)
        prom.wait(f'up{{job="{JOB}"}} == 1')
        yield prom
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
