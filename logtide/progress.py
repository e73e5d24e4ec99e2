"""Progress of long commands: a bar on a terminal, nothing when the output is piped or redirected.

Every long-running command (``logtide replay``, ``check``, initial scans,
``pipeline`` jobs) reports through :func:`progress`, one shared look::

    from logtide.progress import progress

    with progress("replaying ks.t", total=n, unit="rows") as bar:
        for row in rows:
            ...
            bar.advance()          # or bar.advance(k)

The bar goes to standard error, and only when standard error is a terminal
(so a command's standard output stays exactly the same either way, and logs,
pipes and tests see no bar).  ``total`` may be None when the amount is not
known in advance (the bar then counts up).  ``enabled=False`` forces it off;
``enabled=True`` forces it on (tests).  The bar redraws at most every
0.1 s (tqdm's default, which tqdm's own ``TQDM_MININTERVAL`` environment
variable overrides).  ``counter=False`` makes it a status
line: only the label, which ``describe`` replaces (a streaming job's
``batch 3: 120 records, lag 40 records``), and the last one stays on the
terminal when the step ends.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from typing import IO, Any, Iterator


@dataclass
class Progress:
    """A running progress report; ``advance`` moves it on, ``describe`` changes its label."""

    bar: Any = None  # a tqdm bar, or None when disabled

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def describe(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(text)

    @property
    def enabled(self) -> bool:
        return self.bar is not None


def on_terminal(stream: IO[str]) -> bool:
    """True when ``stream`` is an interactive terminal."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _columns(stream: IO[str]) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


@contextlib.contextmanager
def progress(label: str, total: int | None = None, unit: str = "rows", enabled: bool | None = None,
             stream: IO[str] | None = None, counter: bool = True) -> Iterator[Progress]:
    """A progress report for one long step: shown on a terminal (standard error), silent otherwise."""
    out = stream if stream is not None else sys.stderr
    show = on_terminal(out) if enabled is None else enabled
    if not show:
        yield Progress(None)
        return
    from tqdm import tqdm

    sized = _columns(out) > 0  # a terminal that reports no size (a bare pty) gets 80 columns
    bar = tqdm(total=total, desc=label, unit=f" {unit}", file=out, leave=not counter, dynamic_ncols=sized,
               ncols=None if sized else 80, nrows=None if sized else 24,
               bar_format=None if counter else "{desc}")
    try:
        yield Progress(bar)
    finally:
        bar.close()
