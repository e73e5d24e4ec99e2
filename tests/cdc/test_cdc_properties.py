"""Property tests over random workloads of every statement kind, column kind and CDC option.

* replaying the delta rows reproduces the base table cell for cell (values,
  timestamps and TTLs);
* every postimage equals the full preimage with the delta applied;
* every preimage equals the base row read just before the write.
"""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import logtide
from logtide.cdc.replay import replay
from logtide.clock import ManualClock

TABLE = ("CREATE TABLE ks.t (pk int, ck int, s int static, v int, w text, m map<int, int>, st set<int>, "
         "l list<int>, u ut, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
VALUE_COLS = ("v", "w", "m", "st", "l", "u")

small = st.integers(0, 3)
maybe_null = st.one_of(st.none(), st.integers(-3, 3))


def lit(v):
    return "null" if v is None else str(v)


atomic = st.one_of(
    st.tuples(st.just("v"), maybe_null.map(lit)),
    st.tuples(st.just("w"), st.one_of(st.none(), st.sampled_from(["a", "b"])).map(lambda x: "null" if x is None else f"'{x}'")),
)
collection_assignment = st.one_of(
    st.builds(lambda k, v: f"m = m + {{{k}: {v}}}", small, small),
    st.builds(lambda k: f"m = m - {{{k}}}", small),
    st.builds(lambda k, v: f"m[{k}] = {lit(v)}", small, maybe_null),
    st.builds(lambda a, b: f"m = {{{a}: {b}}}", small, small),
    st.just("m = null"),
    st.builds(lambda e: f"st = st + {{{e}}}", small),
    st.builds(lambda e: f"st = st - {{{e}}}", small),
    st.builds(lambda a, b: f"st = {{{a}, {b}}}", small, small),
    st.builds(lambda e: f"l = l + [{e}]", small),
    st.builds(lambda e: f"l = [{e}] + l", small),
    st.builds(lambda e: f"l = l - [{e}]", small),
    st.builds(lambda a, b: f"l = [{a}, {b}]", small, small),
    st.builds(lambda f, v: f"u.{f} = {lit(v)}", st.sampled_from("abc"), maybe_null),
    st.builds(lambda a: f"u = {{a: {a}}}", small),
    st.just("u = null"),
)
assignment = st.one_of(atomic.map(lambda t: f"{t[0]} = {t[1]}"), collection_assignment)
using = st.one_of(st.just(""), st.builds(lambda t: f" USING TTL {t}", st.integers(1, 50)))


def update(pk, ck, assigns, use):
    return f"UPDATE ks.t{use} SET {', '.join(assigns)} WHERE pk = {pk} AND ck = {ck}"


def insert(pk, ck, cols, use):
    names = ["pk", "ck"] + [c for c, _ in cols]
    values = [str(pk), str(ck)] + [v for _, v in cols]
    return f"INSERT INTO ks.t ({', '.join(names)}) VALUES ({', '.join(values)}){use}"


statement = st.one_of(
    st.builds(update, small, small, st.lists(assignment, min_size=1, max_size=3), using),
    st.builds(insert, small, small, st.lists(atomic, max_size=2, unique_by=lambda t: t[0]), using),
    st.builds(lambda pk, s: f"UPDATE ks.t SET s = {lit(s)} WHERE pk = {pk}", small, maybe_null),
    st.builds(lambda pk, ck, c: f"DELETE {c} FROM ks.t WHERE pk = {pk} AND ck = {ck}", small, small,
              st.sampled_from(VALUE_COLS + ("m[1]", "u.b", "l[0]"))),
    st.builds(lambda pk, ck: f"DELETE FROM ks.t WHERE pk = {pk} AND ck = {ck}", small, small),
    st.builds(lambda pk, lo, hi: f"DELETE FROM ks.t WHERE pk = {pk} AND ck > {lo} AND ck <= {hi}", small, small, small),
    st.builds(lambda pk: f"DELETE FROM ks.t WHERE pk = {pk}", small),
)
batch = st.lists(statement.filter(lambda s: "l[0]" not in s and " = l - " not in s and "l = [" not in s),
                 min_size=2, max_size=3).map(
    lambda stmts: "BEGIN UNLOGGED BATCH " + "; ".join(stmts) + "; APPLY BATCH")
workload = st.lists(st.one_of(statement, statement, batch), min_size=1, max_size=20)


def open_db(d):
    clock = ManualClock(1_600_000_000_000_000)
    db = logtide.open(d, clock=clock, synchronous="OFF")
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TYPE ks.ut (a int, b int, c int)")
    s.execute(TABLE)
    return db, s, clock


def run(s, stmt) -> bool:
    from logtide.errors import InvalidRequest
    try:
        s.execute(stmt)
        return True
    except InvalidRequest as e:  # e.g. a list index out of bound: nothing is written
        assert "out of bound" in str(e) or "which is null" in str(e), (stmt, str(e))
        return False


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload)
def test_replaying_delta_rows_reproduces_the_base_table(program):
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        src, s, clock = open_db(a)
        dst, _, _ = open_db(b)
        try:
            for stmt in program:
                clock.advance(micros=1)
                run(s, stmt)
            dst.session().execute("ALTER TABLE ks.t WITH cdc = {'enabled': false}")
            report = replay(src, "ks", "t", dst, verify=True)
            assert report.differences == [], (program, report.differences)
        finally:
            src.close()
            dst.close()


# -- images -------------------------------------------------------------------------------


def log_rows(s):
    return list(s.execute("SELECT * FROM ks.t_scylla_cdc_log"))


def as_plain(col, v):
    """A log value as comparable plain Python (lists are maps of timeuuid keys in the log)."""
    if v is None:
        return None
    if col in ("m", "l"):
        return dict(v)
    if col == "st":
        return set(v)
    if col == "u":
        return tuple(v)
    return v


def apply_delta(pre: dict, delta) -> dict:
    """Spec 000: the postimage is the preimage with the delta applied."""
    out = dict(pre)
    if delta["cdc$operation"] == 3:
        return {}
    for col in ("s",) + VALUE_COLS:
        value = as_plain(col, delta[col])
        deleted = delta[f"cdc$deleted_{col}"]
        if col in ("v", "w", "s"):
            if value is not None:
                out[col] = value
            elif deleted:
                out[col] = None
            continue
        removed = delta.get(f"cdc$deleted_elements_{col}")
        cur = out.get(col)
        if deleted:
            cur = None
        if col == "u":
            fields = list(cur) if cur is not None else [None, None, None]
            if value is not None:
                for i, f in enumerate(value):
                    if f is not None:
                        fields[i] = f
            for i in removed or ():
                fields[i] = None
            cur = tuple(fields) if any(f is not None for f in fields) else None
        elif col == "st":
            cur = set(cur or ()) | set(value or ())
            cur -= set(removed or ())
            cur = cur or None
        else:
            cur = dict(cur or {})
            cur.update(value or {})
            for k in removed or ():
                cur.pop(k, None)
            cur = cur or None
        out[col] = cur
    return out


def image(row) -> dict:
    return {c: as_plain(c, row[c]) for c in ("s",) + VALUE_COLS}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload)
@example(["INSERT INTO ks.t (pk, ck, v) VALUES (3, 3, 0)",
          "BEGIN UNLOGGED BATCH INSERT INTO ks.t (pk, ck, v) VALUES (3, 3, null) USING TTL 1; "
          "DELETE m FROM ks.t WHERE pk = 3 AND ck = 3; APPLY BATCH"])
@example(["UPDATE ks.t SET v = null WHERE pk = 0 AND ck = 0",
          "BEGIN UNLOGGED BATCH DELETE m FROM ks.t WHERE pk = 0 AND ck = 3; "
          "UPDATE ks.t SET st = st + {0} WHERE pk = 0 AND ck = 3; DELETE FROM ks.t WHERE pk = 0; APPLY BATCH"])
@example(["UPDATE ks.t SET v = null WHERE pk = 0 AND ck = 0",
          "DELETE v FROM ks.t WHERE pk = 0 AND ck = 0",
          "BEGIN UNLOGGED BATCH DELETE m FROM ks.t WHERE pk = 2 AND ck = 2; "
          "DELETE FROM ks.t WHERE pk = 0 AND ck > 0 AND ck <= 1; INSERT INTO ks.t (pk, ck) VALUES (2, 2); APPLY BATCH"])
def test_postimage_is_preimage_plus_delta_and_preimage_is_the_row_before(program):
    with tempfile.TemporaryDirectory() as a:
        db, s, clock = open_db(a)
        try:
            seen: set = set()
            for stmt in program:
                clock.advance(micros=1)
                before = {}
                for r in s.execute("SELECT * FROM ks.t"):
                    before[(r.pk, r.ck)] = r
                statics = {r.pk: r.s for r in s.execute("SELECT DISTINCT pk, s FROM ks.t")}
                if not run(s, stmt):
                    continue
                new = [r for r in log_rows(s)
                       if (r["cdc$stream_id"], r["cdc$time"], r["cdc$batch_seq_no"]) not in seen]
                seen.update((r["cdc$stream_id"], r["cdc$time"], r["cdc$batch_seq_no"]) for r in new)
                groups: dict = {}
                for r in new:
                    groups.setdefault((r["cdc$stream_id"], r["cdc$time"]), []).append(r)
                # a statement may make several groups (a batch with a column DELETE logs its collection
                # tombstone at T+1): the first group's preimage is the row before the statement, a later
                # group's preimage is the postimage of the row's previous group
                last_post: dict = {}
                for _, group in sorted(groups.items(), key=lambda kv: (kv[0][1].time, kv[0][1].bytes)):
                    pres = {(r.pk, r.ck): r for r in group if r["cdc$operation"] == 0}
                    for key, r in pres.items():
                        if key in last_post:
                            cols = ("s",) if r.ck is None else VALUE_COLS
                            assert {c: image(r)[c] for c in cols} == {c: last_post[key][c] for c in cols}, stmt
                        elif r.ck is None:
                            assert r.s == statics.get(r.pk), stmt
                        else:
                            b = before[key]
                            for c in VALUE_COLS:
                                got = as_plain(c, r[c])
                                want = b[c]
                                if c == "l":
                                    got = None if got is None else list(got.values())
                                elif c == "st":
                                    want = None if want is None else set(want)
                                elif c == "m":
                                    want = None if want is None else dict(want)
                                elif c == "u":
                                    want = None if want is None else tuple(want)
                                assert got == want, (stmt, c, got, want)
                    for r in group:
                        key = (r.pk, r.ck)
                        if r["cdc$operation"] == 9:
                            pre = image(pres[key]) if key in pres else {}
                            expected = pre
                            for d in group:
                                if (d.pk, d.ck) == key and d["cdc$operation"] in (1, 2, 3):
                                    expected = apply_delta(expected, d)
                            got = image(r)
                            cols = ("s",) if r.ck is None else VALUE_COLS
                            assert {c: got[c] for c in cols} == {c: expected.get(c) for c in cols}, (stmt, got, expected)
                            last_post[key] = got
                        elif r["cdc$operation"] == 3:
                            last_post.pop(key, None)
                        elif r["cdc$operation"] == 4 or 5 <= r["cdc$operation"] <= 8:
                            # a partition or range deletion ends the images of its own partition only
                            for k in [k for k in last_post if k[0] == r.pk]:
                                del last_post[k]
        finally:
            db.close()
