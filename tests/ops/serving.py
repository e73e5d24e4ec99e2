"""A real ``logtide serve`` process for tests: started with free ports, its log collected, stopped cleanly."""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Sequence

LISTENING = re.compile(r"listening on (\S+):(\d+)")
METRICS = re.compile(r"metrics (http://\S+/metrics)")


def free_port() -> int:
    """A TCP port free on loopback right now (a port to know before the server starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """``cert.pem`` and ``key.pem`` in ``directory``: a self-signed certificate for 127.0.0.1 (CN and IP SAN, so
    that clients verifying the host name accept it), made with openssl; the caller skips without openssl."""
    if shutil.which("openssl") is None:
        raise FileNotFoundError("openssl is needed to make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def certificate_or_skip(directory: Path) -> tuple[Path, Path]:
    """:func:`self_signed_certificate`, or the calling test skipped when openssl is missing."""
    import pytest

    try:
        return self_signed_certificate(directory)
    except FileNotFoundError as e:
        pytest.skip(str(e))


class ServeProcess:
    """``ARGV`` (a ``logtide serve`` command line) as a process; ``port``/``metrics_url`` once it listens."""

    def __init__(self, argv: Sequence[str], **popen: Any) -> None:
        self.proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     **popen)
        self.lines: list[str] = []
        self.listening = threading.Event()
        self.port = 0
        self.metrics_url: str | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def logtide(cls, *args: str) -> "ServeProcess":
        """``python -m logtide serve --port 0 --metrics-port off --kafka-port off ARGS`` (later options win)."""
        return cls([sys.executable, "-m", "logtide", "serve", "--port", "0", "--metrics-port", "off", "--kafka-port", "off",
                    *args])

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            m = LISTENING.search(line)
            if m:
                self.port = int(m.group(2))
                url = METRICS.search(line)
                self.metrics_url = url.group(1) if url else None
                self.listening.set()

    def wait_listening(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while not self.listening.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("server did not start:\n" + self.output())
        return self.port

    def output(self) -> str:
        if self.proc.poll() is not None:
            self._reader.join(5)
        return "".join(self.lines)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        status = self.proc.wait(timeout)
        self._reader.join(5)
        return status

    def __enter__(self) -> "ServeProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
