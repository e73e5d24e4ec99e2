"""The database's lifecycle: opening the store, loading the catalog, the host id and the CDC generations,
starting the changefeeds' worker, the parse cache, and closing (``docs/durability.md``, ``docs/cdc.md``).
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..cdc.capture import CdcTimeuuids, LogTargets
from ..cdc.streams import FIRST_GENERATION_START, Generation, Generations, Topology, build_generation, node_tokens
from ..clock import Clock, SystemClock, TimestampSource
from ..counters import WriteCounters
from ..cql import ast, parse
from ..mutation.context import ListKeys
from ..mutation.targets import KeyShapes
from ..mutation.model import Mutation
from ..query.functions import FunctionRegistry, TimeuuidSource
from ..schema.catalog import Catalog
from ..storage.group_commit import GroupCommitter
from ..storage.sqlite import CATALOG_KEY, HOST_ID_KEY, Store, Txn
from ..tracing import TraceStore
from .capture import captured_tables
from .commit import commit_mutation
from .indexes import SecondaryIndexes
from .plan import DML, is_conditional


class Engine:
    """An open data directory: storage, the schema catalog, clocks and functions, the CDC generations and the
    changefeeds' worker (``logtide.session.Database`` adds the sessions users execute statements in)."""

    def __init__(self, path: str | Path, clock: Clock | None = None, synchronous: str = "FULL",
                 topology: Topology | None = None, readonly: bool = False, create: bool = True) -> None:
        self.path = Path(path)
        self.clock = clock or SystemClock()
        self.opened = time.monotonic()  # system.runtime_info's uptime
        self.readonly = readonly
        self.store = Store.open(self.path, readonly=readonly, synchronous=synchronous, create=create)
        try:
            self._start(topology)
        except BaseException:  # a full disk, a damaged file: release the directory (its lock) again
            self.store.close()
            raise

    def _user_functions(self, keyspace: str, name: str) -> tuple[list[Any], list[Any]]:
        """The user-defined functions and aggregates named ``keyspace.name`` in the current catalog."""
        ks = self.catalog.keyspaces.get(keyspace)
        if ks is None or not (ks.functions or ks.aggregates):
            return [], []
        return ([f for f in ks.functions.values() if f.name == name],
                [a for a in ks.aggregates.values() if a.name == name])

    def _start(self, topology: Topology | None) -> None:
        """Load the catalog, the host id and the CDC generations (may write: a new directory)."""
        self.timestamps = TimestampSource(self.clock)
        self.list_keys = ListKeys(self.clock.now_micros)
        self.key_shapes = KeyShapes()  # the WHERE shapes of write statements (mutation.targets), made once each
        self.timeuuids = TimeuuidSource(self.clock.now_micros)
        self.functions = FunctionRegistry(self.timeuuids, self.clock.now_micros)
        self.functions.user = self._user_functions
        self.write_lock = threading.RLock()
        self.committer = GroupCommitter(self.store, self.write_lock)
        self.counters = WriteCounters()  # read by the server's metrics
        self.traces = TraceStore(self.clock.now_micros)  # system_traces (logtide.tracing): the server's traced requests
        self._parse_cache: OrderedDict[Any, ast.Parsed] = OrderedDict()
        self._parse_lock = threading.Lock()
        self._plain_writes: dict[int, tuple[Any, bool]] = {}  # plain_write by statement identity
        with self.store.snapshot() as txn:
            doc = txn.get_meta(CATALOG_KEY)
            host = txn.get_meta(HOST_ID_KEY)
        self.catalog = Catalog.from_json(doc.decode()) if doc else Catalog.empty()
        if host is None and self.readonly:
            host = uuid.UUID(int=0).bytes  # never written: nothing in a read-only database needs it
        elif host is None:
            host = uuid.uuid4().bytes
            with self.store.write() as wtxn:
                wtxn.put_meta(HOST_ID_KEY, host)
        self.host_id = uuid.UUID(bytes=host)
        self.cdc_timeuuids = CdcTimeuuids()
        self.log_targets = LogTargets()
        self.indexes = SecondaryIndexes()  # secondary index maintenance (engine.indexes)
        self._captured_in: tuple[Catalog, frozenset[int]] | None = None  # captured_tables of one catalog
        self.generations = self._load_generations(topology)
        from .settings import DUPLICATE_BIND_NAMES, TTL_PERIOD, database_settings
        self.config = database_settings(self.generations.current.topology.vnodes)  # system.config (live_config)
        self._same_name_same_variable = True  # the dialect switch parse() follows (its cache keys on it)
        self.config.watch(DUPLICATE_BIND_NAMES, self._dialect_changed)
        from .table_defaults import SETTING, SpeculativeRetryDefault
        self.speculative_retry = SpeculativeRetryDefault()  # what new tables get (engine.table_defaults)
        self.config.watch(SETTING, self.speculative_retry.changed)
        self._closed = False
        from ..changefeed.feeds import Feeds
        from ..changefeed.reader import DatabaseTopicReader
        self.feeds = Feeds(self)
        self.changefeeds = DatabaseTopicReader(self)  # the changefeed topic reader (logtide.changefeed.api)
        self.committer.on_commit = self.feeds.notify
        self.committer.on_abort = self.feeds.forget_offsets
        self.feeds.ensure_worker()
        from .view_build import ViewBuilds
        self.view_builds = ViewBuilds(self)  # materialized views being built over existing rows
        self.view_builds.ensure_worker()
        from .row_expiry import RowExpiry
        self.row_expiry = RowExpiry(self, self.config.get(TTL_PERIOD))  # the per-row TTL's expiration scan
        self.config.watch(TTL_PERIOD, self.row_expiry.set_period)
        self.row_expiry.ensure_worker()

    def _load_generations(self, topology: Topology | None) -> Generations:
        """The CDC generations; a new one when the configured topology differs from the current one.

        The first generation starts at 1970-01-01 00:00:00.001 so that it
        covers every past write (not at 0: scylla-cdc-java finds the first
        generation with ``time > 0``); a later one starts one second after it is created, and the
        previous one expires then (writes are routed by their timestamp, so
        none is lost across the switch)."""
        with self.store.snapshot() as txn:
            doc = txn.get_meta(Generations.META_KEY)
        gens = Generations.from_json(doc.decode()) if doc else None
        if gens is not None and (self.readonly or topology is None or gens.current.topology == topology):
            return gens
        topo = topology or Topology()
        rng = random.Random(self.host_id.int ^ (len(gens.generations) if gens else 0))
        tokens = node_tokens(topo.vnodes, rng)
        if gens is None:
            gens = Generations([build_generation(topo, tokens, FIRST_GENERATION_START, rng)])
        else:
            # a whole millisecond: the generation tables hold milliseconds, and a consumer switches
            # generations at exactly that time, so routing must switch there too
            start = (self.clock.now_micros() // 1000 + 1000) * 1000
            last = gens.current
            old = Generation(last.timestamp, last.range_ends, last.streams, last.topology, start)
            gens = Generations(gens.generations[:-1] + [old, build_generation(topo, tokens, start, rng)])
        if self.readonly:
            return gens  # a database never written to: its first generation, as a writer would make it
        with self.store.write() as wtxn:
            wtxn.put_meta(Generations.META_KEY, gens.to_json().encode())
        return gens

    # ------------------------------------------------------------------
    def _dialect_changed(self, same_name_same_variable: bool) -> None:
        self._same_name_same_variable = bool(same_name_same_variable)

    def parse(self, text: str) -> ast.Parsed:
        """Parse with a small cache of recent statements (a statement parsed under Cassandra's rule for bind
        variable names, ``cql_duplicate_bind_variable_names_refer_to_same_variable`` false, is cached apart)."""
        same = self._same_name_same_variable
        key: Any = text if same else ("cassandra bind names", text)
        with self._parse_lock:
            p = self._parse_cache.get(key)
            if p is not None:
                self._parse_cache.move_to_end(key)
                return p
        p = parse(text, same)
        with self._parse_lock:
            self._parse_cache[key] = p
            if len(self._parse_cache) > 512:
                self._parse_cache.popitem(last=False)
        return p

    def now_seconds(self) -> int:
        return self.clock.now_micros() // 1_000_000

    def apply_mutation(self, mutation: Mutation) -> None:
        """Commit a mutation built elsewhere (cells carry their own timestamps), logging it if CDC is on."""
        def work(txn: Txn) -> None:
            now = self.now_seconds()
            commit_mutation(self, mutation, txn, now)
        self.committer.run(work)

    def plain_write(self, stmt: Any) -> bool:
        """Whether ``stmt`` is an INSERT, UPDATE or DELETE without a condition and without ``USING TIMEOUT``
        (decided once per statement object: a prepared statement executes the same one again and again)."""
        hit = self._plain_writes.get(id(stmt))
        if hit is not None and hit[0] is stmt:
            return hit[1]
        plain = (isinstance(stmt, DML) and not is_conditional(stmt)
                 and getattr(stmt.using, "timeout", None) is None)
        with self._parse_lock:
            if len(self._plain_writes) >= 1024:
                self._plain_writes.clear()
            self._plain_writes[id(stmt)] = (stmt, plain)
        return plain

    def captured_tables(self) -> frozenset[int]:
        """The store ids of the current catalog's tables whose writes are captured before and after
        (``engine.capture.captured_tables``: a changefeed, a materialized view or a secondary index), made once
        per catalog: a write to any other table has nothing read for them."""
        cat = self.catalog
        hit = self._captured_in
        if hit is None or hit[0] is not cat:
            hit = self._captured_in = (cat, captured_tables(cat))
        return hit[1]

    def close(self) -> None:
        """Close storage and release the data directory."""
        if not self._closed:
            self._closed = True
            self.feeds.close()
            self.view_builds.close()
            self.row_expiry.close()
            self.store.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

