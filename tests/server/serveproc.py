"""A ``logtide serve`` process for tests: started with ``--port 0`` (and no metrics port), its port read back."""

from __future__ import annotations

import sys
from typing import Any

from ..ops.serving import LISTENING, ServeProcess  # noqa: F401


class Serve(ServeProcess):
    """``python -m logtide serve --port 0 --metrics-port off --kafka-port off ARGS`` with its stderr collected;
    ``port`` once it listens."""

    def __init__(self, *args: str, **popen: Any) -> None:
        super().__init__([sys.executable, "-m", "logtide", "serve", "--port", "0", "--metrics-port", "off", "--kafka-port", "off", *args],
                         **popen)
