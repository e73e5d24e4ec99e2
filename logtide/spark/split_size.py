"""``spark.cassandra.input.split.sizeInMB``: input partitions of about that much data each, as the Spark
Cassandra Connector cuts a table (docs/spark.md "Source 1").

The connector divides the table's estimated size by the split size (at least one split) and cuts the token
ring into that many ranges.  The estimate is what the source can know:

* a data directory (``path``): the bytes of the table's stored records (keys and values) in it, summed by
  SQLite without decoding them;
* over CQL: ``system.size_estimates`` as ScyllaDB, Cassandra and ``logtide serve`` keep it (and the connector
  reads it): per token range ``mean_partition_size * partitions_count``, the ranges of the node asked scaled up
  to the whole ring.  A server without that table refuses the option, naming ``splits``.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from .options import OptionError

OPTION = "spark.cassandra.input.split.sizeInMB"
MB = 1024 * 1024
RING = 1 << 64  # the Murmur3 ring's width


def split_size_mb(opts: Mapping[str, str], conf: Mapping[str, str] | None) -> float | None:
    """The option's value (from the options, else the Spark conf), in megabytes; None when not given."""
    key = OPTION.lower()
    given = opts.get(key)
    if given is None:
        given = {str(k).lower(): str(v) for k, v in dict(conf or {}).items()}.get(key)
    if given is None:
        return None
    try:
        value = float(given.strip())
    except ValueError:
        raise OptionError(f"option {OPTION}: expected megabytes, got {given!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise OptionError(f"option {OPTION}: must be more than 0, got {given!r}")
    return value


def split_count(size_bytes: int, size_mb: float) -> int:
    """The connector's number of splits: the table's size over the split size, at least 1."""
    return max(1, int(size_bytes // (size_mb * MB)))


def ring_estimate(rows: Iterable[tuple[Any, Any, Any, Any]]) -> int | None:
    """A table's size from ``system.size_estimates`` rows ``(range_start, range_end, mean_partition_size,
    partitions_count)`` of one node: their bytes scaled by the share of the ring their ranges cover; None
    without rows."""
    covered = total = 0
    for start, end, mean_size, count in rows:
        lo, hi = int(start), int(end)
        covered += (hi - lo) % RING or RING  # a range that wraps past the ring's end; (t, t] is the whole ring
        total += int(mean_size or 0) * int(count or 0)
    if covered == 0:
        return None
    return int(total * RING / min(covered, RING))


def table_size(client: Any, keyspace: str, table: str, where: str) -> int:
    """The estimated size in bytes of ``keyspace.table`` as ``client`` (local or CQL) can tell it."""
    from .client import LocalClient

    if isinstance(client, LocalClient):
        store_id = client.db.catalog.table(keyspace, table).store_id
        with client.db.store.snapshot() as txn:
            rows = txn.sql("SELECT coalesce(sum(length(pk) + length(ck) + length(data)), 0) FROM rows WHERE tid = ?",
                           (store_id,))[0][0]
            parts = txn.sql("SELECT coalesce(sum(length(pk) + length(data)), 0) FROM partitions WHERE tid = ?",
                            (store_id,))[0][0]
        return int(rows) + int(parts)
    try:
        found = list(client.rows("SELECT range_start, range_end, mean_partition_size, partitions_count FROM "
                                 "system.size_estimates WHERE keyspace_name = ? AND table_name = ?", (keyspace, table)))
    except Exception as e:  # noqa: BLE001 - the server has no such table
        raise OptionError(f"option {OPTION}: {where} keeps no table size estimates (system.size_estimates: "
                          f"{str(e).splitlines()[0] if str(e) else type(e).__name__}): give splits instead, or read "
                          f"a logtide data directory with path") from None
    return ring_estimate(found) or 0
