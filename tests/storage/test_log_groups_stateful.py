"""A CDC log with groups of log rows reads exactly as one of single records, whatever CQL does to it.

A hypothesis state machine runs the same CQL on two databases, one storing a commit's log rows of a
stream as one group entry and one storing single records (``Store.write_groups = False``, storage
format 1's records), and compares every read of the log after each step: the whole log, each stream
in both orders with ``cdc$time`` windows and ``LIMIT``, and the whole log paged two rows at a time.
Its steps mix upserts of a full-CDC table with static columns and collections, batches over several
partitions of one stream, ``USING TIMESTAMP`` in the past and the future, ``IF NOT EXISTS``, deletions
of rows, ranges and partitions, CDC TTLs expiring, ``DELETE`` (rows, ranges, streams), ``UPDATE`` and
``INSERT`` of log rows, ``TRUNCATE`` of the base and of the log, ``ALTER TABLE ... WITH cdc`` off and
on, ``DROP TABLE`` and a new table under the same name, and reopening the directory (the writer's cache
of tails and group tables is gone) with a new topology (a new CDC generation); the first database may
start as storage format 1 would, with single records only, until its first reopen.  At the end
``logtide check`` finds nothing (``docs/durability.md``, "Groups of log rows").
"""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import logtide
from logtide.cdc.streams import Topology
from logtide.errors import CqlError
from logtide.storage.check import check

from ..engine.test_stored_bytes import _database as fixed_database

LOG = "ks.t_scylla_cdc_log"
CREATE = ("CREATE TABLE ks.t (pk int, ck int, v int, s int static, l list<int>, m map<text, int>, "
          "PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true, 'ttl': 3}")
pk_ = st.integers(0, 7)
ck_ = st.integers(0, 3)


def _rows(rs) -> list[str]:
    return [repr(tuple(r)) for r in rs]


class LogWithGroups(RuleBasedStateMachine):
    """Two databases (groups, single records) given the same statements; their logs read the same."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="log-groups-")
        self.paths = [f"{self.tmp}/groups", f"{self.tmp}/singles"]
        self.dbs = [fixed_database(p, topology=Topology(vnodes=2, shards=1)) for p in self.paths]
        self.dbs[1].store.write_groups = False
        self.n = 0
        self.table = False
        self.streams: list = []
        self.all("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        self.create()

    @initialize(old=st.booleans())
    def format_1_first(self, old):
        """When ``old``, the first database writes single records too (as storage format 1) until it is reopened:
        groups then follow streams that hold single rows."""
        self.dbs[0].store.write_groups = not old

    def all(self, cql: str, params=None, **kw) -> list:
        """Run ``cql`` on both; both must answer the same, or fail with the same error."""
        outs = []
        for db in self.dbs:
            try:
                outs.append(("ok", _rows(db.session().execute(cql, params, **kw))))
            except CqlError as e:
                outs.append(("error", type(e).__name__, str(e)))
        assert outs[0] == outs[1], (cql, outs)
        return outs[0]

    def create(self) -> None:
        self.all(CREATE)
        self.table = True

    def step(self) -> int:
        self.n += 1
        for db in self.dbs:
            db.clock.advance(micros=997)
        return self.n

    @precondition(lambda self: self.table)
    @rule(pk=pk_, ck=ck_)
    def upsert(self, pk, ck):
        n = self.step()
        self.all(f"INSERT INTO ks.t (pk, ck, v, s, l, m) VALUES ({pk}, {ck}, {n}, {n}, [{n}, 1], {{'a': {n}}})")

    @precondition(lambda self: self.table)
    @rule(pk=pk_, ck=ck_)
    def update_collections(self, pk, ck):
        n = self.step()
        self.all(f"UPDATE ks.t SET l = l + [{n}], m['b'] = {n}, v = null WHERE pk = {pk} AND ck = {ck}")

    @precondition(lambda self: self.table)
    @rule(writes=st.lists(st.tuples(pk_, ck_, st.integers(-20, 0)), min_size=1, max_size=6), logged=st.booleans(),
          spread=st.booleans())
    def batch(self, writes, logged, spread):
        """A batch; ``spread``: each statement at its own timestamp, so one group holds several ``cdc$time``s
        (a later write in the past can land inside it)."""
        n = self.step()
        now = self.dbs[0].clock.now_micros()
        body = " ".join(f"INSERT INTO ks.t (pk, ck, v) VALUES ({p}, {c}, {n})"
                        + (f" USING TIMESTAMP {now + ms * 1000};" if spread else ";") for p, c, ms in writes)
        self.all(f"BEGIN {'' if logged else 'UNLOGGED '}BATCH {body} APPLY BATCH")

    @precondition(lambda self: self.table)
    @rule(pk=pk_, ck=ck_, millis=st.integers(-40, 40))
    def at_timestamp(self, pk, ck, millis):
        """``USING TIMESTAMP`` in the past or the future: a ``cdc$time`` out of order in its stream."""
        n = self.step()
        ts = self.dbs[0].clock.now_micros() + millis * 1000
        self.all(f"INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, {ck}, {n}) USING TIMESTAMP {ts}")

    @precondition(lambda self: self.table)
    @rule(pk=pk_, ck=ck_)
    def if_not_exists(self, pk, ck):
        n = self.step()
        self.all(f"INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, {ck}, {n}) IF NOT EXISTS")

    @precondition(lambda self: self.table)
    @rule(pk=pk_, ck=ck_, what=st.sampled_from(["row", "range", "partition", "static"]))
    def delete(self, pk, ck, what):
        self.step()
        where = {"row": f"pk = {pk} AND ck = {ck}", "range": f"pk = {pk} AND ck >= {ck}",
                 "partition": f"pk = {pk}", "static": f"pk = {pk}"}[what]
        self.all(f"DELETE {'s ' if what == 'static' else ''}FROM ks.t WHERE {where}")

    @precondition(lambda self: self.table)
    @rule(i=st.integers(0, 500), j=st.integers(0, 500), seq=st.integers(0, 9),
          what=st.sampled_from(["row", "time", "stream", "update", "insert", "seq_range", "time_range"]))
    def change_the_log(self, i, j, seq, what):
        """A user's ``DELETE`` (a row, a ``cdc$time``, a range of ``cdc$batch_seq_no`` or of ``cdc$time``, a
        whole stream), ``UPDATE`` or ``INSERT`` (at a ``cdc$time`` a group holds, inside it or after it) of the
        log table: each lands inside a group or next to one."""
        n = self.step()
        s = self.dbs[0].session()
        keys = [tuple(r) for r in s.execute(f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" FROM {LOG}')]
        if not keys:
            return
        stream, time, batch_seq = keys[i % len(keys)]
        later = keys[j % len(keys)][1]
        at = 'WHERE "cdc$stream_id" = ? AND "cdc$time" = ?'
        if what == "row":
            self.all(f'DELETE FROM {LOG} {at} AND "cdc$batch_seq_no" = ?', [stream, time, batch_seq])
        elif what == "time":
            self.all(f"DELETE FROM {LOG} {at}", [stream, time])
        elif what == "stream":
            self.all(f'DELETE FROM {LOG} WHERE "cdc$stream_id" = ?', [stream])
        elif what == "update":
            self.all(f'UPDATE {LOG} SET v = {-n} {at} AND "cdc$batch_seq_no" = ?', [stream, time, batch_seq])
        elif what == "insert":
            self.all(f'INSERT INTO {LOG} ("cdc$stream_id", "cdc$time", "cdc$batch_seq_no", v) VALUES (?, ?, ?, ?)',
                     [stream, time, seq, -n])
        elif what == "seq_range":
            self.all(f'DELETE FROM {LOG} {at} AND "cdc$batch_seq_no" >= ? AND "cdc$batch_seq_no" < ?',
                     [stream, time, min(seq, batch_seq), max(seq, batch_seq)])
        else:
            self.all(f'DELETE FROM {LOG} WHERE "cdc$stream_id" = ? AND "cdc$time" >= ? AND "cdc$time" < ?',
                     [stream, time, later])

    @rule(seconds=st.integers(1, 4))
    def time_passes(self, seconds):
        """CDC ttl 3: log rows expire, inside groups too."""
        for db in self.dbs:
            db.clock.advance(seconds=seconds)

    @precondition(lambda self: self.table)
    @rule(log=st.booleans())
    def truncate(self, log):
        self.step()
        self.all(f"TRUNCATE {LOG if log else 'ks.t'}")

    @precondition(lambda self: self.table)
    @rule()
    def cdc_off_and_on(self):
        self.step()
        self.all("ALTER TABLE ks.t WITH cdc = {'enabled': false}")
        self.step()
        self.all("ALTER TABLE ks.t WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true, 'ttl': 3}")

    @precondition(lambda self: self.table)
    @rule()
    def drop(self):
        self.step()
        self.all("DROP TABLE ks.t")
        self.table = False

    @precondition(lambda self: not self.table)
    @rule()
    def create_again(self):
        self.step()
        self.create()

    @rule(vnodes=st.sampled_from([2, 3]))
    def reopen(self, vnodes):
        """A new writer (no cache of tails or group tables); a new topology starts a new CDC generation."""
        for i, db in enumerate(self.dbs):
            clock, uuids, keys = db.clock, db.cdc_timeuuids, db.list_keys
            db.close()
            db = logtide.open(self.paths[i], clock=clock, synchronous="OFF", topology=Topology(vnodes=vnodes, shards=1))
            db.cdc_timeuuids, db.list_keys = uuids, keys
            db.store.write_groups = i == 0
            self.dbs[i] = db
        for db in self.dbs:
            db.clock.advance(seconds=1)

    @invariant()
    def logs_read_the_same(self):
        if not self.table:
            return
        full = self.all(f"SELECT * FROM {LOG}")
        streams = sorted({r[0] for r in self.dbs[0].session().execute(f'SELECT "cdc$stream_id" FROM {LOG}')})
        times = sorted({r[0] for r in self.dbs[0].session().execute(f'SELECT "cdc$time" FROM {LOG}')},
                       key=lambda u: u.time)
        for stream in streams[:3]:
            self.all(f'SELECT * FROM {LOG} WHERE "cdc$stream_id" = ? ORDER BY "cdc$time" DESC', [stream])
            if len(times) > 1:
                lo, hi = times[len(times) // 3], times[-1]
                for order in ("ASC", "DESC"):
                    self.all(f'SELECT * FROM {LOG} WHERE "cdc$stream_id" = ? AND "cdc$time" >= ? AND "cdc$time" < ? '
                             f'ORDER BY "cdc$time" {order} LIMIT 4', [stream, lo, hi])
        paged, state = [], None
        while True:
            rs = self.dbs[0].session().execute(f"SELECT * FROM {LOG}", page_size=2, paging_state=state)
            paged += _rows(rs)
            state = rs.paging_state
            if state is None:
                break
        assert paged == full[1], "paging the log two rows at a time reads what one read does"

    def teardown(self):
        for db in self.dbs:
            db.close()
        for p in self.paths:
            assert check(p).findings == []
        shutil.rmtree(self.tmp, ignore_errors=True)


# a few seconds in the suite; LOG_GROUPS_EXAMPLES=100 LOG_GROUPS_STEPS=50 for a longer hunt (about 20 s)
LogWithGroups.TestCase.settings = settings(max_examples=int(os.environ.get("LOG_GROUPS_EXAMPLES", 25)),
                                           stateful_step_count=int(os.environ.get("LOG_GROUPS_STEPS", 14)), deadline=None,
                                           suppress_health_check=list(HealthCheck))
test_a_log_with_groups_reads_as_single_records_whatever_cql_does = LogWithGroups.TestCase
