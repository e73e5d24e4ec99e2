"""A changefeed as the catalog keeps it (spec ``004``; YDB's scheme object ``<table>/<name>``).

A changefeed lives on its table (``Table.changefeeds``), so dropping the
table drops it.  ``feed_id`` keys its topic in storage and is never reused
(drawn from the catalog's store-id counter).  ``disabled`` is YDB's terminal
DISABLED state; INITIAL_SCAN versus ENABLED is the scan's progress, kept in
storage (``feed_scans``) because it changes while the table is written.
``snapshot`` is the virtual timestamp ``[step, txId]`` of the creation, which
initial-scan records carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .changefeed_options import ChangefeedOptions

ENABLED = "ENABLED"
DISABLED = "DISABLED"
INITIAL_SCAN = "INITIAL_SCAN"


@dataclass(frozen=True)
class Changefeed:
    """One changefeed of a table."""

    name: str
    feed_id: int
    options: ChangefeedOptions
    disabled: bool = False
    created_ms: int = 0
    snapshot: tuple[int, int] = (0, 0)

    def to_doc(self) -> dict[str, Any]:
        return {"name": self.name, "feed_id": self.feed_id, "options": self.options.to_doc(),
                "disabled": self.disabled, "created_ms": self.created_ms, "snapshot": list(self.snapshot)}

    @classmethod
    def from_doc(cls, d: Mapping[str, Any]) -> "Changefeed":
        return cls(d["name"], int(d["feed_id"]), ChangefeedOptions.from_doc(d["options"]), bool(d.get("disabled")),
                   int(d.get("created_ms", 0)), tuple(d.get("snapshot", (0, 0))))  # type: ignore[arg-type]


def topic_path(keyspace: str, table: str, name: str) -> str:
    """YDB's path form of a changefeed topic: ``ks/t/name``."""
    return f"{keyspace}/{table}/{name}"


def split_path(path: str) -> tuple[str, str, str] | None:
    """``ks/t/name`` (or the Kafka form ``ks.t.name``, or with a leading ``/``) as its three parts; None if malformed."""
    p = path.strip().strip("/")
    parts = p.split("/") if "/" in p else p.split(".")
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]
