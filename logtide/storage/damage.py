"""Damaged records reported in CQL terms: keyspace, table and key (``docs/durability.md``).

The storage layer verifies every record it decodes (``envelope``); these
helpers decode the records of a known table and turn a failed verification
into :class:`logtide.errors.CorruptRecord`, whose message names the
keyspace, the table and the partition key as CQL literals (the clustering key
as its stored bytes, since the row that would name it is the damaged one).
"""

from __future__ import annotations

from typing import Any

from ..errors import CorruptRecord
from ..mutation.cells import PartitionData, RowData
from .envelope import RecordDamaged
from .keys import split_partition_key
from .records import decode_partition, decode_row


def describe_partition_key(table: Any, pk: bytes) -> str:
    """``k = 1 AND j = 'x'``: the partition key as CQL (its bytes in hex when they do not decode)."""
    from cassandra.encoder import Encoder

    try:
        enc = Encoder()
        return " AND ".join(f"{col.name} = {enc.cql_encode_all_types(col.type.deserialize(v))}"
                            for col, v in zip(table.partition_key, split_partition_key(pk, len(table.partition_key))))
    except Exception:  # noqa: BLE001 - the key itself may be what is damaged
        return f"partition key 0x{pk.hex()}"


def describe_record(table: Any, pk: bytes, ck: bytes | None) -> str:
    """Where a record lives, in CQL terms: ``ks.t, partition (k = 1), clustering key 0x...``."""
    where = f"{table.keyspace}.{table.name}, partition ({describe_partition_key(table, pk)})"
    if ck is None:
        return where
    return where + (f", clustering key 0x{ck.hex()}" if ck else ", the row")


def corrupt(table: Any, pk: bytes, ck: bytes | None, reason: str) -> CorruptRecord:
    """The error for a damaged record of ``table``."""
    what = "partition record" if ck is None else "row"
    return CorruptRecord(f"Damaged {what} in {describe_record(table, pk, ck)}: {reason}. "
                         "Run 'logtide check' on the data directory for a full report",
                         table.keyspace, table.name)


def row_record(table: Any, data: bytes, pk: bytes, ck: bytes) -> RowData:
    """The row record stored under (``pk``, ``ck``) of ``table``; CorruptRecord if it does not verify."""
    try:
        return decode_row(data, table.store_id, pk, ck)
    except RecordDamaged as e:
        raise corrupt(table, pk, ck, e.reason) from None


def partition_record(table: Any, data: bytes, pk: bytes) -> PartitionData:
    """The partition record stored under ``pk`` of ``table``; CorruptRecord if it does not verify."""
    try:
        return decode_partition(data, table.store_id, pk)
    except RecordDamaged as e:
        raise corrupt(table, pk, None, e.reason) from None
