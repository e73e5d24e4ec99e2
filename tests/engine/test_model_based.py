"""Model-based test: random writes with random timestamps and TTLs against a tiny reference model.

The reference model keeps every write ever made and answers a read by
picking, for every cell, the winning write with Cassandra's rules written
as one sort key, then checking it against every tombstone.  It shares no
code with the engine.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import logtide
from logtide.clock import ManualClock

PKS = range(3)
CKS = range(4)
COLS = ("a", "b")
BASE = 1_600_000_000


def int_bytes(v: int) -> bytes:
    return v.to_bytes(4, "big", signed=True)


@dataclass
class Model:
    """Every write, as atoms; reads derive the state."""

    now: int = BASE
    cells: list = field(default_factory=list)  # (pk, ck|None, col, ts, value|None, ttl, ldt)
    markers: list = field(default_factory=list)  # (pk, ck, ts, ttl, ldt)
    row_dels: list = field(default_factory=list)  # (pk, ck, ts)
    range_dels: list = field(default_factory=list)  # (pk, lo, lo_inc, hi, hi_inc, ts)
    part_dels: list = field(default_factory=list)  # (pk, ts)

    def cell(self, pk, ck, col, ts, value, ttl):
        ldt = self.now if value is None else (self.now + ttl if ttl else 2**31 - 1)
        self.cells.append((pk, ck, col, ts, value, ttl if value is not None else 0, ldt))

    def deletion_ts(self, pk, ck) -> int:
        best = -1
        for p, ts in self.part_dels:
            if p == pk:
                best = max(best, ts)
        if ck is None:
            return best
        for p, c, ts in self.row_dels:
            if p == pk and c == ck:
                best = max(best, ts)
        for p, lo, lo_inc, hi, hi_inc, ts in self.range_dels:
            if p != pk:
                continue
            if lo is not None and (ck < lo or (ck == lo and not lo_inc)):
                continue
            if hi is not None and (ck > hi or (ck == hi and not hi_inc)):
                continue
            best = max(best, ts)
        return best

    @staticmethod
    def winner_key(w):
        _, _, _, ts, value, ttl, ldt = w
        dead_or_expiring = value is None or ttl != 0
        return (ts, dead_or_expiring, value is None, ldt, b"" if value is None else int_bytes(value))

    def value(self, pk, ck, col):
        cands = [w for w in self.cells if w[0] == pk and w[1] == ck and w[2] == col]
        if not cands:
            return None, None
        w = max(cands, key=self.winner_key)
        _, _, _, ts, value, ttl, ldt = w
        if ts <= self.deletion_ts(pk, ck):
            return None, None
        if value is None or (ttl and self.now >= ldt):
            return None, None
        return value, ts

    def marker_live(self, pk, ck) -> bool:
        cands = [m for m in self.markers if m[0] == pk and m[1] == ck]
        if not cands:
            return False
        _, _, ts, ttl, ldt = max(cands, key=lambda m: (m[2], m[3] != 0, m[4]))
        return ts > self.deletion_ts(pk, ck) and (ttl == 0 or self.now < ldt)

    def rows(self):
        out = set()
        for pk in PKS:
            static, _ = self.value(pk, None, "s")
            live = []
            for ck in CKS:
                vals = {c: self.value(pk, ck, c) for c in COLS}
                if self.marker_live(pk, ck) or any(v[0] is not None for v in vals.values()):
                    live.append((pk, ck, static, vals["a"][0], vals["b"][0], vals["a"][1], vals["b"][1]))
            if live:
                out.update(live)
            elif static is not None:
                out.add((pk, None, static, None, None, None, None))
        return out


values = st.one_of(st.none(), st.integers(-2, 2))
timestamps = st.integers(1, 6)
ttls = st.one_of(st.just(0), st.integers(1, 4))

ops = st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(PKS), st.sampled_from(CKS), values, values, timestamps, ttls),
    st.tuples(st.just("update"), st.sampled_from(PKS), st.sampled_from(CKS), values, values, timestamps, ttls),
    st.tuples(st.just("static"), st.sampled_from(PKS), values, timestamps, ttls),
    st.tuples(st.just("delete_cell"), st.sampled_from(PKS), st.sampled_from(CKS), st.sampled_from(COLS), timestamps),
    st.tuples(st.just("delete_row"), st.sampled_from(PKS), st.sampled_from(CKS), timestamps),
    st.tuples(st.just("delete_range"), st.sampled_from(PKS), st.one_of(st.none(), st.sampled_from(CKS)),
              st.booleans(), st.one_of(st.none(), st.sampled_from(CKS)), st.booleans(), timestamps),
    st.tuples(st.just("delete_partition"), st.sampled_from(PKS), timestamps),
    st.tuples(st.just("advance"), st.integers(1, 3)),
)


def lit(v) -> str:
    return "null" if v is None else str(v)


def run(session, model: Model, clock: ManualClock, op) -> None:
    kind = op[0]
    if kind == "advance":
        clock.advance(seconds=op[1])
        model.now += op[1]
        return
    if kind in ("insert", "update"):
        _, pk, ck, a, b, ts, ttl = op
        using = f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")
        if kind == "insert":
            session.execute(f"INSERT INTO m (pk, ck, a, b) VALUES ({pk}, {ck}, {lit(a)}, {lit(b)}) {using}")
            model.markers.append((pk, ck, ts, ttl, model.now + ttl if ttl else 2**31 - 1))
        else:
            session.execute(f"UPDATE m {using} SET a = {lit(a)}, b = {lit(b)} WHERE pk = {pk} AND ck = {ck}")
        model.cell(pk, ck, "a", ts, a, ttl)
        model.cell(pk, ck, "b", ts, b, ttl)
    elif kind == "static":
        _, pk, s, ts, ttl = op
        using = f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")
        session.execute(f"UPDATE m {using} SET s = {lit(s)} WHERE pk = {pk}")
        model.cell(pk, None, "s", ts, s, ttl)
    elif kind == "delete_cell":
        _, pk, ck, col, ts = op
        session.execute(f"DELETE {col} FROM m USING TIMESTAMP {ts} WHERE pk = {pk} AND ck = {ck}")
        model.cell(pk, ck, col, ts, None, 0)
    elif kind == "delete_row":
        _, pk, ck, ts = op
        session.execute(f"DELETE FROM m USING TIMESTAMP {ts} WHERE pk = {pk} AND ck = {ck}")
        model.row_dels.append((pk, ck, ts))
    elif kind == "delete_range":
        _, pk, lo, lo_inc, hi, hi_inc, ts = op
        where = [f"pk = {pk}"]
        if lo is not None:
            where.append(f"ck {'>=' if lo_inc else '>'} {lo}")
        if hi is not None:
            where.append(f"ck {'<=' if hi_inc else '<'} {hi}")
        if len(where) == 1:
            return
        session.execute(f"DELETE FROM m USING TIMESTAMP {ts} WHERE {' AND '.join(where)}")
        model.range_dels.append((pk, lo, lo_inc, hi, hi_inc, ts))
    elif kind == "delete_partition":
        _, pk, ts = op
        session.execute(f"DELETE FROM m USING TIMESTAMP {ts} WHERE pk = {pk}")
        model.part_dels.append((pk, ts))


def engine_rows(session) -> set:
    got = set()
    for r in session.execute("SELECT pk, ck, s, a, b, writetime(a), writetime(b) FROM m"):
        got.add(tuple(r))
    return got


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, min_size=1, max_size=25))
@example([("insert", 0, 1, 0, None, 1, 1), ("insert", 0, 1, 1, None, 1, 1)])
def test_engine_agrees_with_reference_model(program):
    with tempfile.TemporaryDirectory() as d:
        clock = ManualClock(BASE * 1_000_000)
        with logtide.open(d, clock=clock, synchronous="OFF") as db:
            s = db.session()
            s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute("USE ks")
            s.execute("CREATE TABLE m (pk int, ck int, s int static, a int, b int, PRIMARY KEY (pk, ck))")
            model = Model()
            for op in program:
                run(s, model, clock, op)
                assert engine_rows(s) == model.rows(), f"after {op}"
