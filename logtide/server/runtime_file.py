"""``<data_dir>/serve.json``: where a running ``logtide serve`` answers, for ``logtide status``.

Written once the server listens, removed when it stops::

    {"pid": 1234, "host": "127.0.0.1", "port": 9042, "metrics_port": 9180, "version": "0.1.0"}

A file left behind by a killed server names a pid that no longer runs;
readers check the pid (``running_server``) and ignore such a file.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

FILE = "serve.json"


@dataclass(frozen=True)
class RunningServer:
    """A server found through its runtime file."""

    pid: int
    host: str
    port: int
    metrics_port: int
    version: str


class RuntimeFile:
    """The runtime file of one data directory (written by the server that holds it)."""

    def __init__(self, data_dir: str | os.PathLike) -> None:
        self.path = Path(data_dir) / FILE
        self._written = False

    def write(self, host: str, port: int, metrics_port: int) -> None:
        from logtide.version import package_version

        doc = {"pid": os.getpid(), "host": host, "port": port, "metrics_port": metrics_port,
               "version": package_version()}
        tmp = self.path.with_suffix(".tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(doc) + "\n")
            os.replace(tmp, self.path)
            self._written = True

    def remove(self) -> None:
        if self._written:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self._written = False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_server(data_dir: str | os.PathLike) -> RunningServer | None:
    """The server running on ``data_dir``, or None (no runtime file, or its process is gone)."""
    try:
        doc = json.loads((Path(data_dir) / FILE).read_text())
        server = RunningServer(int(doc["pid"]), str(doc["host"]), int(doc["port"]), int(doc["metrics_port"]),
                               str(doc.get("version", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return server if _alive(server.pid) else None


def in_use_advice(data_dir: str | os.PathLike, instead: str, through_server: bool = False) -> str:
    """What to tell someone refused a data directory another process writes to: ``instead`` (the form of the
    command that works beside it), preceded by the running server when that is who holds it and, with
    ``through_server``, followed by how to write through that server."""
    server = running_server(data_dir)
    if server is None:
        return instead
    host = f"[{server.host}]" if ":" in server.host else server.host
    text = f"a logtide serve (pid {server.pid}) holds it, answering CQL on {host}:{server.port}; {instead}"
    if through_server:
        text += f", or write through the server (cqlsh {server.host} {server.port})"
    return text
