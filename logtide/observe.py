"""What an operator sees of a data directory: size, CDC tables, generations, changefeeds.

``logtide status``, ``logtide cdc ...`` and the server's metrics all read
through this module, so they always agree.  ``open_view(path)`` reads a data
directory read-only (safe while ``logtide serve`` writes to it);
``node_view(...)`` builds the same view from a database already open.

Changefeeds are reached through ``logtide.changefeed.api.TopicReader``;
:func:`topic_reader` is the one place that hands one over: an open
Database's ``db.changefeeds`` (the server's metrics), or a
``DirectoryTopicReader`` sharing a read-only store (``logtide status``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .cdc.log_schema import is_log_table, log_name
from .schema.cdc_options import CdcOptions
from .cdc.streams import Generation, Generations
from .errors import NoDatabase  # noqa: F401 - re-exported: what open_store raises
from .schema.catalog import Catalog
from .schema.system_schema import is_system_keyspace
from .storage.sqlite import CATALOG_KEY, DB_FILE, Store


@dataclass(frozen=True)
class CdcTable:
    """A table with CDC enabled (ScyllaDB's ``cdc`` options) and its log table."""

    keyspace: str
    table: str
    log_table: str
    options: CdcOptions

    @property
    def describe_options(self) -> str:
        o = self.options
        parts = ["delta keys" if o.delta_keys_only else "delta full"]
        if o.preimage:
            parts.append("preimage full" if o.full_preimage else "preimage")
        if o.postimage:
            parts.append("postimage")
        parts.append(f"ttl {o.ttl}s" if o.ttl else "ttl none")
        return ", ".join(parts)


@dataclass(frozen=True)
class ConsumerLag:
    """A changefeed consumer and how many records it has not committed yet (summed over partitions)."""

    name: str
    lag: int


@dataclass(frozen=True)
class ChangefeedInfo:
    """A changefeed as ``logtide status`` and the metrics show it (spec ``004``)."""

    path: str
    state: str  # ENABLED | DISABLED | INITIAL_SCAN
    mode: str
    format: str
    partitions: int
    records_written: int  # offsets start at 0 and are never reused: the sum of the end offsets
    consumers: tuple[ConsumerLag, ...]
    initial_scan_progress: float | None = None  # 0..1 while state is INITIAL_SCAN, when the reader knows


@dataclass(frozen=True)
class NodeView:
    """One data directory, as ``logtide status`` prints it."""

    data_dir: str
    size_bytes: int
    keyspaces: int
    tables: int  # user tables, without CDC log tables
    cdc_tables: tuple[CdcTable, ...]
    generations: tuple[Generation, ...]
    changefeeds: tuple[ChangefeedInfo, ...] | None  # None: this build has no changefeeds

    @property
    def current_generation(self) -> Generation | None:
        return self.generations[-1] if self.generations else None


def data_dir_bytes(path: str | os.PathLike) -> int:
    """Bytes of the files logtide keeps in a data directory (the database, its WAL and shared memory)."""
    total = 0
    for name in (DB_FILE, DB_FILE + "-wal", DB_FILE + "-shm"):
        try:
            total += os.stat(Path(path) / name).st_size
        except OSError:
            pass
    return total


def cdc_tables(catalog: Catalog) -> tuple[CdcTable, ...]:
    """Every user table with CDC enabled, by keyspace and name."""
    out = []
    for ks_name in sorted(catalog.keyspaces):
        if is_system_keyspace(ks_name):
            continue
        ks = catalog.keyspaces[ks_name]
        for name in sorted(ks.tables):
            opts = CdcOptions.parse(ks.tables[name].cdc)
            if opts.enabled:
                out.append(CdcTable(ks_name, name, log_name(name), opts))
    return tuple(out)


def topic_reader(db: Any) -> Any:
    """The changefeed ``TopicReader`` (spec ``004``) of an open Database or a read-only Store, or None.

    A Database answers with its live ``db.changefeeds`` (never closed here);
    a Store with the changefeed package's ``DirectoryTopicReader`` on the same
    data directory (read-only snapshots, safe under a running server), which
    the caller closes.
    """
    reader = getattr(db, "changefeeds", None)
    if reader is not None:
        return reader
    if isinstance(db, Store):
        from .changefeed.reader import DirectoryTopicReader

        return DirectoryTopicReader(db.path)
    return None


def scan_fraction(reader: Any, path: str) -> float | None:
    """How much of the table a changefeed's initial scan has exported (0..1), or None when not known.

    The changefeed reader reports (partitions scanned, partitions total);
    a stand-in may answer ``initial_scan_progress(path)`` with the fraction.
    """
    counts = getattr(reader, "scan_progress", None)
    if counts is not None:
        known = counts(path)
        if known is None:
            return None
        done, total = known
        return 1.0 if total <= 0 else min(1.0, done / total)
    fraction = getattr(reader, "initial_scan_progress", None)
    return None if fraction is None else fraction(path)


def changefeeds(reader: Any) -> tuple[ChangefeedInfo, ...]:
    """Every changefeed of a ``TopicReader``: state, records written and each consumer's lag."""
    out = []
    for topic in reader.topics():
        parts = reader.partitions(topic.path)
        ends = {p.partition: p.end_offset for p in parts}
        starts = {p.partition: p.start_offset for p in parts}
        lags = []
        for consumer in reader.consumers(topic.path):
            committed = consumer.committed
            lag = sum(end - max(committed.get(p, starts[p]), starts[p]) for p, end in ends.items())
            lags.append(ConsumerLag(consumer.name, max(lag, 0)))
        progress = scan_fraction(reader, topic.path) if topic.state == "INITIAL_SCAN" else None
        out.append(ChangefeedInfo(topic.path, topic.state, topic.mode, topic.format, len(parts),
                                  sum(ends.values()), tuple(lags), progress))
    return tuple(out)


def node_view(data_dir: str | os.PathLike, catalog: Catalog, generations: Sequence[Generation],
              reader: Any = None) -> NodeView:
    """The view of a data directory from its catalog and generations (and changefeed reader, if any)."""
    user = [ks for name, ks in catalog.keyspaces.items() if not is_system_keyspace(name)]
    return NodeView(
        data_dir=os.path.abspath(data_dir), size_bytes=data_dir_bytes(data_dir), keyspaces=len(user),
        tables=sum(1 for ks in user for t in ks.tables.values() if not is_log_table(t)), cdc_tables=cdc_tables(catalog),
        generations=tuple(generations), changefeeds=None if reader is None else changefeeds(reader))


def open_store(path: str | os.PathLike) -> Store:
    """The data directory's store, read-only; ``errors.NoDatabase`` (worded as for every command) when the
    directory holds no logtide database."""
    return Store.open(path, readonly=True)


def read_catalog(store: Store) -> tuple[Catalog, Generations | None]:
    """The schema catalog and the CDC generations stored in a data directory."""
    with store.snapshot() as txn:
        doc = txn.get_meta(CATALOG_KEY)
        gens = txn.get_meta(Generations.META_KEY)
    catalog = Catalog.from_json(doc.decode()) if doc else Catalog.empty()
    return catalog, (Generations.from_json(gens.decode()) if gens else None)


def open_view(path: str | os.PathLike) -> NodeView:
    """The view of a data directory, read without writing (works while a server runs on it)."""
    store = open_store(path)
    reader = None
    try:
        catalog, gens = read_catalog(store)
        reader = topic_reader(store)
        return node_view(path, catalog, gens.generations if gens else (), reader)
    finally:
        if reader is not None:
            reader.close()
        store.close()
