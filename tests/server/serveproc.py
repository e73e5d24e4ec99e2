"""A ``logtide serve`` process for tests: started with ``--port 0``, its stderr collected, its port read back."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any

LISTENING = re.compile(r"listening on (\S+):(\d+)")


class Serve:
    """``python -m logtide serve ARGS`` with its stderr collected; ``port`` once it listens."""

    def __init__(self, *args: str, **popen: Any) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "logtide", "serve", "--port", "0", *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **popen)
        self.lines: list[str] = []
        self.listening = threading.Event()
        self.port = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            m = LISTENING.search(line)
            if m:
                self.port = int(m.group(2))
                self.listening.set()

    def wait_listening(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while not self.listening.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("server did not start:\n" + self.output())
        return self.port

    def output(self) -> str:
        self._reader.join(5) if self.proc.poll() is not None else None
        return "".join(self.lines)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        status = self.proc.wait(timeout)
        self._reader.join(5)
        return status

    def __enter__(self) -> "Serve":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
