"""The web console of ``logtide serve`` (issue #28): tables, CDC logs, changefeeds and consumers at a glance.

Served over HTTP on the metrics port beside ``/metrics`` (``web``), as YDB's
Embedded UI, Redpanda Console or Kafka UI show topics, partitions and
consumer lag.  Everything is read-only: the JSON API (``api``) answers GET
requests only, reading the same in-process objects as ``logtide status``
and the metrics registry (``views``, ``records``); with ``--auth`` a login
(``access``) limits it to what the role may SELECT.  The page itself is a
small static app in ``static/`` (plain JS, vendored uPlot for the charts).

This package is a front end (``docs/architecture.md``, "Layers"): it reads
the engine, the changefeed reader, the metrics and the Kafka coordinator;
nothing below it imports it.
"""

from __future__ import annotations

from typing import Any

from .web import HttpEndpoint, start_http

__all__ = ["HttpEndpoint", "start_console", "start_http"]


def start_console(server: Any, host: str, port: int, console: bool = True, broker: Any = None) -> HttpEndpoint:
    """Serve ``/metrics`` and (unless ``console`` is False) the console for a started CQL ``server`` on
    ``host:port``; call on the server's event loop.  The endpoint stops with the server (``metrics.close``)."""
    import asyncio

    from .api import Console

    app = Console(server, asyncio.get_running_loop(), broker, console)
    endpoint = start_http(host, port, app)
    server.metrics.http = endpoint
    return endpoint
