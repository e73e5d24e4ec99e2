"""Where a new Delta replica begins: the changefeed's own initial scan, or a snapshot of the table joined to the feed.

docs/spark.md, "The rows written before the changefeed": a replica holds the table's rows, also those written
before the changefeed existed, which the feed's records do not carry unless it was created WITH INITIAL_SCAN =
TRUE.  A new replica (its checkpoint has planned no micro-batch yet) therefore starts in one of two ways:

* the feed's initial scan is whole (INITIAL_SCAN, scan finished, no record dropped by retention): the stream
  reads the topic from its first record, whose scan records are the table's rows;
* otherwise the table is copied first (a snapshot), and the stream starts at each partition's end offset as it
  was *before* the snapshot was read: every record below it was committed before the snapshot read the table,
  so the snapshot holds its effect; every record at or after it is applied by the stream.  Records committed
  while the snapshot was read are applied over rows that may hold them already, which ends in the same row
  (an image replaces the row, an UPDATES record sets the columns it names to their values then), so nothing is
  lost and nothing ends applied twice.

A topic known only by ``tableSchema`` (no catalog, no CQL endpoint) cannot be snapshotted; the job refuses it
unless told where to start.  The choice is kept in ``<checkpoint>/logtide_start.json`` until Spark's own
checkpoint holds the stream's start, so a job killed during the snapshot copies it again (an overwrite) and
starts the stream at the same offsets.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .changefeed_feed import FeedInfo
from .options import OptionError

START_FILE = "logtide_start.json"


@dataclass(frozen=True)
class Start:
    """How a new replica begins: ``offsets`` (partition -> the first offset the stream reads; None: every
    partition's first record) and whether the table is copied first (``snapshot``; ``copied``: it has been)."""

    offsets: dict[int, int] | None
    snapshot: bool
    copied: bool = False

    def starting_offsets(self) -> str:
        """The ``startingOffsets`` option of the stream."""
        if self.offsets is None:
            return "earliest"
        return json.dumps({str(p): o for p, o in sorted(self.offsets.items())})

    def to_doc(self) -> dict[str, Any]:
        return {"offsets": None if self.offsets is None else {str(p): o for p, o in self.offsets.items()},
                "snapshot": self.snapshot, "copied": self.copied}

    @classmethod
    def from_doc(cls, d: dict[str, Any]) -> "Start":
        offsets = d.get("offsets")
        return cls(None if offsets is None else {int(p): int(o) for p, o in offsets.items()},
                   bool(d.get("snapshot")), bool(d.get("copied")))


def scan_is_whole(info: FeedInfo, bounds: Sequence[tuple[int, int]]) -> bool:
    """The feed's records begin with the whole table: INITIAL_SCAN, scanned to the end, nothing removed by
    retention (every partition still starts at offset 0)."""
    return bool(info.initial_scan) and not info.scanning and all(lo == 0 for lo, _ in bounds)


def choose(info: FeedInfo, bounds: Sequence[tuple[int, int]], topic: str) -> Start:
    """How a new replica of ``topic`` begins (see the module docstring); OptionError when it cannot be whole."""
    if scan_is_whole(info, bounds):
        return Start(None, snapshot=False)
    if not info.table_readable:
        raise OptionError(
            f"--format delta: a replica of {topic} needs the rows written before the changefeed was added, and its "
            f"table cannot be read here (the topic is described by the option tableSchema, without a catalog or "
            f"a CQL endpoint): read a changefeed created WITH INITIAL_SCAN = TRUE from its first record "
            f"(--starting-offsets earliest), or leave tableSchema out so that the table is read over CQL "
            f"(--cql-port, -o cqlHost=HOST)")
    return Start({p: hi for p, (_, hi) in enumerate(bounds)}, snapshot=True)


def stream_started(checkpoint: str | os.PathLike) -> bool:
    """Whether Spark's checkpoint holds the stream's start (it has planned a micro-batch)."""
    offsets = Path(checkpoint) / "offsets"
    return offsets.is_dir() and any(not n.startswith(".") for n in os.listdir(offsets))


def load(checkpoint: str | os.PathLike) -> Start | None:
    """The start chosen by an earlier run on this checkpoint, if any."""
    try:
        return Start.from_doc(json.loads((Path(checkpoint) / START_FILE).read_text()))
    except FileNotFoundError:
        return None


def save(checkpoint: str | os.PathLike, start: Start) -> None:
    """Keep ``start`` in the checkpoint directory (written whole, or not at all)."""
    path = Path(checkpoint) / START_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(start.to_doc(), sort_keys=True))
    os.replace(tmp, path)
