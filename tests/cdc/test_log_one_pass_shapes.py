"""The one pass for plain upserts (``cdc/upsert.py``) on shapes of tables and writes beyond those of
``test_log_fast_path.py``: the stored log bytes of every update it takes are exactly ``log_update`` of the
general derivation's rows (``compared``), and the row values it reads before the write are the live row's.

Tables: several partition-key and clustering columns, ``DESC`` clustering, quoted names, static columns not
written, frozen collections, UDTs and tuples, every scalar type with empty, multibyte and long values, more
than 15 entries in a log row's map, no regular column, no clustering column.  Writes: nulls, subsets,
``USING TIMESTAMP``, ``USING TTL 0``, conditional writes, unset values, ``IN`` lists, batches over tables and
mixing plain and other statements, rows deleted, expired or holding a dropped map's elements before, columns
dropped and added, CDC options altered, a changefeed on the table, under every CDC option; through a real server
and cassandra-driver (also concurrent writes committed in groups); timestamps alternating between generations.
"""

from __future__ import annotations

import tempfile
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logtide
from logtide.clock import ManualClock
from logtide.errors import InvalidRequest

from .test_log_fast_path import compared  # noqa: F401  (the fixture checking both paths)

# every combination of preimage, postimage and delta, and a log TTL of 0
OPTIONS = [f"{{'enabled': true, 'preimage': {pre}, 'postimage': {post}, 'delta': '{delta}'{ttl}}}"
           for pre in ("false", "true", "'full'") for post in ("false", "true") for delta in ("full", "keys")
           for ttl in ("", ", 'ttl': 0") if not ttl or pre == "'full'" and post == "true"]

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


def _text(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


blob = st.one_of(st.just(b""), st.binary(max_size=8), st.just(b"\xab" * 300)).map(lambda b: "0x" + b.hex())
text = st.one_of(st.just(""), st.sampled_from(["é", "日本語", "🙂x", "a'b", "ß" * 200]),
                 st.text(max_size=6)).map(_text)
LITERALS = {
    "blob": blob,
    "text": text,
    "ascii": st.sampled_from(["''", "'abc'", "'" + "z" * 400 + "'"]),
    "varint": st.one_of(st.integers(-(2**70), 2**70), st.integers(-300, 300)).map(str),
    "decimal": st.sampled_from(["0", "1.5", "-0.001", "12345678901234567890.123456789", "1e-10", "-7E+3"]),
    "timeuuid": st.sampled_from(["50554d6e-29bb-11e5-b345-feff819cdc9f", "now()",
                                 "00000000-0000-1000-8000-000000000000"]),
    "uuid": st.sampled_from(["d2177dd0-eaa2-11de-a572-001b779c76e3", "uuid()"]),
    "duration": st.sampled_from(["1h2m3s", "P1D", "-5us", "0s", "P1Y2M3DT4H5M6S", "89h4m48s"]),
    "inet": st.sampled_from(["'127.0.0.1'", "'::1'", "'2001:db8::ff00:42:8329'"]),
    "date": st.sampled_from(["'2020-01-01'", "'1970-01-01'", "'9999-12-31'"]),
    "time": st.sampled_from(["'00:00:00'", "'12:34:56.123456789'", "'23:59:59.999999999'"]),
    "timestamp": st.sampled_from(["0", "'2011-02-03 04:05:00+0000'", "-1"]),
    "int": st.one_of(st.integers(-(2**31), 2**31 - 1).map(str), st.just("blobAsInt(0x)")),
    "bigint": st.integers(-(2**63), 2**63 - 1).map(str),
    "smallint": st.integers(-(2**15), 2**15 - 1).map(str),
    "tinyint": st.integers(-128, 127).map(str),
    "boolean": st.sampled_from(["true", "false"]),
    "double": st.sampled_from(["0.0", "-1.5", "NaN", "Infinity", "1e308"]),
    "float": st.sampled_from(["0.0", "3.25", "-Infinity"]),
    "frozen<list<int>>": st.lists(st.integers(-5, 5), max_size=3).map(lambda v: "[" + ", ".join(map(str, v)) + "]"),
    "frozen<set<text>>": st.lists(st.sampled_from(["a", "é", ""]), max_size=3).map(
        lambda v: "{" + ", ".join(map(_text, v)) + "}"),
    "frozen<map<int, text>>": st.dictionaries(st.integers(0, 3), st.sampled_from(["x", "日"]), max_size=3).map(
        lambda d: "{" + ", ".join(f"{k}: {_text(v)}" for k, v in d.items()) + "}"),
    "frozen<tuple<int, text>>": st.tuples(st.integers(-2, 2), st.sampled_from(["", "q"])).map(
        lambda t: f"({t[0]}, {_text(t[1])})"),
    "tuple<int, blob>": st.sampled_from(["(1, 0x)", "(null, 0x01)"]),
    "frozen<u>": st.sampled_from(["{a: 1, b: 'x'}", "{a: null}", "{b: ''}"]),
}


class Shape:
    """A table of the test: its DDL, key columns (name, type) and value columns (name, type)."""

    def __init__(self, name: str, pk: list[tuple[str, str]], ck: list[tuple[str, str]],
                 regular: list[tuple[str, str]], static: list[tuple[str, str]] = (), order: str = "") -> None:
        self.name, self.pk, self.ck, self.regular, self.static = name, pk, ck, regular, list(static)
        cols = ", ".join(f"{n} {t}" for n, t in pk + ck + regular)
        cols += "".join(f", {n} {t} static" for n, t in self.static)
        pkey = "(" + ", ".join(n for n, _ in pk) + ")"
        key = ", ".join([pkey] + [n for n, _ in ck])
        self.ddl = f"CREATE TABLE ks.{name} ({cols}, PRIMARY KEY ({key})){order}"


SHAPES = [
    Shape("wide", [('"Pk"', "text"), ("p2", "int")], [("c1", "timeuuid"), ('"c 2"', "text"), ("c3", "blob")],
          [(f"v_{i}", t) for i, t in enumerate(LITERALS)]
          + [('"Mixed Case"', "int"), ('"sp ace"', "text"), ('"日本語の列"', "int"),
             ("a_column_name_of_forty_characters_long_x", "blob")],
          static=[("s", "int")], order=" WITH CLUSTERING ORDER BY (c1 DESC, \"c 2\" ASC, c3 DESC)"),
    Shape("keys_only", [("pk", "int")], [("ck", "int")], []),
    Shape("no_ck", [("pk", "blob")], [], [("v", "int"), ("w", "frozen<u>")]),
    Shape("descending", [("pk", "int")], [("ck", "varint"), ("c2", "decimal")], [("v", "text")], static=[("s", "text")],
          order=" WITH CLUSTERING ORDER BY (ck DESC, c2 DESC)"),
]
KEY_VALUES = {"text": st.sampled_from(["''", "'k'", "'日'"]), "int": st.integers(0, 2).map(str),
              "timeuuid": st.sampled_from(["50554d6e-29bb-11e5-b345-feff819cdc9f",
                                           "00000000-0000-1000-8000-000000000000"]),
              "blob": st.sampled_from(["0x", "0x00", "0xff"]), "varint": st.sampled_from(["0", "-1", "300"]),
              "decimal": st.sampled_from(["0", "1.0", "1.00"])}


def _where(shape: Shape, keys: list[str]) -> str:
    return " AND ".join(f"{n} = {v}" for (n, _), v in zip(shape.pk + shape.ck, keys))


@st.composite
def statement(draw, shape: Shape) -> str:
    keys = [draw(KEY_VALUES[t]) for _, t in shape.pk + shape.ck]
    chosen = draw(st.lists(st.sampled_from(shape.regular), unique=True, max_size=5)) if shape.regular else []
    values = [draw(st.one_of(st.just("null"), LITERALS[t])) if draw(st.booleans()) else draw(LITERALS[t])
              for _, t in chosen]
    using = draw(st.sampled_from(["", " USING TIMESTAMP 5000", " USING TTL 0", " USING TTL 0 AND TIMESTAMP 7",
                                  " USING TTL 1"]))
    kind = draw(st.sampled_from(["insert", "insert", "update", "delete", "static", "lwt_insert", "lwt_update"]))
    if kind == "update" and chosen or kind == "lwt_update" and chosen:
        sets = ", ".join(f"{n} = {v}" for (n, _), v in zip(chosen, values))
        cond = " IF EXISTS" if kind == "lwt_update" else ""
        using = _no_timestamp(using) if cond else using
        return f"UPDATE ks.{shape.name}{using} SET {sets} WHERE {_where(shape, keys)}{cond}"
    if kind == "delete":
        cols = ", ".join(n for n, _ in chosen[:1])
        return f"DELETE {cols} FROM ks.{shape.name} WHERE {_where(shape, keys)}"
    if kind == "static" and shape.static:
        n = len(shape.pk)
        where = " AND ".join(f"{c} = {v}" for (c, _), v in zip(shape.pk, keys[:n]))
        return f"UPDATE ks.{shape.name} SET s = {draw(LITERALS[shape.static[0][1]])} WHERE {where}"
    names = [n for n, _ in shape.pk + shape.ck + chosen]
    cond = " IF NOT EXISTS" if kind == "lwt_insert" else ""
    return (f"INSERT INTO ks.{shape.name} ({', '.join(names)}) VALUES ({', '.join(keys + values)}){cond}"
            f"{_no_timestamp(using) if cond else using}")


def _no_timestamp(using: str) -> str:
    """``using`` without its timestamp: a conditional write takes the Paxos ballot's."""
    return using.replace(" AND TIMESTAMP 7", "").replace(" USING TIMESTAMP 5000", "")


def write(shapes: list[Shape]):
    one = st.sampled_from(shapes).flatmap(statement)
    return st.tuples(st.lists(one, min_size=1, max_size=5), st.sampled_from([0, 0, 0, 2]))


def _run(s, clock, writes) -> None:
    for stmts, advance in writes:
        clock.advance(seconds=advance)
        lwt = [x for x in stmts if " IF " in x]
        try:
            if len(stmts) == 1 or lwt:
                for x in stmts:
                    s.execute(x)
            else:
                s.execute("BEGIN UNLOGGED BATCH " + "; ".join(stmts) + "; APPLY BATCH")
        except InvalidRequest as e:  # a write refused as a whole (a value its type refuses): a clear error
            assert "Traceback" not in str(e)


@pytest.mark.parametrize("shape", SHAPES, ids=[sh.name for sh in SHAPES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_one_pass_bytes_equal_the_general_derivation_on_every_shape(compared, shape, data):
    options = data.draw(st.sampled_from(OPTIONS))
    writes = data.draw(st.lists(write([shape, SHAPES[1]]), min_size=1, max_size=6))
    clock = ManualClock(1_000_000)
    with tempfile.TemporaryDirectory() as d, logtide.open(d, clock=clock, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TYPE ks.u (a int, b text)")
        for sh in {shape.name: shape, SHAPES[1].name: SHAPES[1]}.values():
            s.execute(f"{sh.ddl} AND cdc = {options}" if " WITH " in sh.ddl else f"{sh.ddl} WITH cdc = {options}")
        _run(s, clock, writes)


def test_one_pass_is_taken_on_the_shapes(compared):
    assert compared.get("one pass", 0) > 0


small = st.integers(0, 2).map(str)
maybe = st.one_of(st.just("null"), st.integers(-2, 2).map(str))
CHANGE = st.one_of(
    st.builds(lambda k, c, v: f"INSERT INTO ks.t (pk, ck, v) VALUES ({k}, {c}, {v})", small, small, maybe),
    st.builds(lambda k, c, v: f"UPDATE ks.t SET v = {v}, w = 'x' WHERE pk = {k} AND ck = {c}", small, small, maybe),
    st.builds(lambda k, c: f"INSERT INTO ks.t (pk, ck, v, w) VALUES ({k}, {c}, 1, 'y') USING TTL 1", small, small),
    st.builds(lambda k, c: f"UPDATE ks.t USING TTL 1 SET w = 'z' WHERE pk = {k} AND ck = {c}", small, small),
    st.builds(lambda k, c: f"DELETE FROM ks.t WHERE pk = {k} AND ck = {c}", small, small),
    st.builds(lambda k, c: f"DELETE w FROM ks.t WHERE pk = {k} AND ck = {c}", small, small),
    st.builds(lambda k, c: f"DELETE FROM ks.t WHERE pk = {k} AND ck >= {c}", small, small),
    st.builds(lambda k: f"DELETE FROM ks.t WHERE pk = {k}", small),
    st.builds(lambda k, c: f"INSERT INTO ks.t (pk, ck, v) VALUES ({k}, {c}, 3) USING TIMESTAMP 1", small, small),
    st.builds(lambda k, c: f"DELETE FROM ks.t USING TIMESTAMP 1500000 WHERE pk = {k} AND ck = {c}", small, small),
    st.builds(lambda k, c: f"DELETE FROM ks.t USING TIMESTAMP 1 WHERE pk = {k} AND ck = {c}", small, small),
    st.builds(lambda v: f"UPDATE ks.t SET v = {v} WHERE pk IN (0, 1) AND ck IN (2, 0, 1)", maybe),
    st.builds(lambda k, c: f"UPDATE ks.t SET m = m + {{{c}: {c}}} WHERE pk = {k} AND ck = {c}", small, small),
    st.builds(lambda k, c: f"DELETE FROM ks.t USING TIMESTAMP 2500000 WHERE pk = {k} AND ck < {c}", small, small),
)
SCHEMA = st.one_of(st.sampled_from(["ALTER TABLE ks.t DROP w", "ALTER TABLE ks.t ADD w text", "ALTER TABLE ks.t DROP v",
                                     "ALTER TABLE ks.t ADD v int", "ALTER TABLE ks.t WITH cdc = {'enabled': false}",
                                     "ALTER TABLE ks.t DROP m", "ALTER TABLE ks.t ADD m map<int, int>"]),
                   st.sampled_from(OPTIONS).map(lambda o: f"ALTER TABLE ks.t WITH cdc = {o}"))
FEED = "ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON')"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.sampled_from(OPTIONS), feed=st.booleans(),
       steps=st.lists(st.tuples(st.one_of(CHANGE.map(lambda c: [c]), st.lists(CHANGE, min_size=2, max_size=4),
                                          SCHEMA.map(lambda c: [c])), st.sampled_from([0, 0, 1, 2])),
                      min_size=1, max_size=10))
def test_one_pass_reads_only_live_values_after_deletes_expiry_and_dropped_columns(compared, options, feed, steps):
    """Rows deleted (row, range, partition tombstones, some at later or equal timestamps), cells expired, columns
    dropped and added again (a dropped map's elements left in rows), CDC options altered before a plain upsert:
    the values the one pass reads are the live row's, and its bytes the general path's (``compared``), with a
    changefeed on the table (its shared row reads) or without."""
    clock = ManualClock(1_000_000)
    with tempfile.TemporaryDirectory() as d, logtide.open(d, clock=clock, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute(f"CREATE TABLE ks.t (pk int, ck int, v int, w text, m map<int, int>, PRIMARY KEY (pk, ck)) "
                  f"WITH cdc = {options}")
        if feed:
            s.execute(FEED)
        for stmts, advance in steps:
            clock.advance(seconds=advance)
            try:
                if len(stmts) == 1:
                    s.execute(stmts[0])
                else:
                    s.execute("BEGIN UNLOGGED BATCH " + "; ".join(stmts) + "; APPLY BATCH")
            except InvalidRequest:  # a column dropped or present already, a statement naming a dropped column
                pass


def test_one_pass_through_the_server_with_unset_values_and_batches(compared, tmp_path):
    """A real server and cassandra-driver: prepared INSERTs with unset values (left out of the delta, not
    deleted), a batch of prepared statements over two tables and several rows of one partition, and an
    INSERT with a bound timestamp take the one pass with the general path's bytes (``compared``)."""
    from cassandra import query as q

    from logtide.server import BackgroundServer, ServerConfig

    from ..server.conftest import cluster

    before = compared.get("one pass", 0)
    db = logtide.open(tmp_path / "data", synchronous="OFF")
    srv = BackgroundServer(db, ServerConfig(port=0), close_db=True).start()
    c = cluster(srv.port)
    try:
        s = c.connect()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (pk int, ck text, v int, w blob, PRIMARY KEY (pk, ck)) "
                  "WITH CLUSTERING ORDER BY (ck DESC) AND cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
        s.execute("CREATE TABLE ks.k (pk int PRIMARY KEY, v text) WITH cdc = {'enabled': true, 'preimage': 'full'}")
        insert = s.prepare("INSERT INTO ks.t (pk, ck, v, w) VALUES (?, ?, ?, ?)")
        s.execute(insert, (1, "é", 5, b""))
        s.execute(insert, (1, "é", q.UNSET_VALUE, b"\x01"))
        s.execute(insert, (1, "é", None, q.UNSET_VALUE))
        batch = q.BatchStatement(batch_type=q.BatchType.UNLOGGED)
        other = s.prepare("INSERT INTO ks.k (pk, v) VALUES (?, ?)")
        for ck in ("a", "b", "c"):
            batch.add(insert, (2, ck, len(ck), q.UNSET_VALUE))
        batch.add(other, (2, "日本"))
        s.execute(batch)
        at = s.prepare("INSERT INTO ks.k (pk, v) VALUES (?, ?) USING TIMESTAMP ?")
        s.execute(at, (3, "", 1_000_000))
        rows = list(s.execute('SELECT "cdc$operation", v, w, "cdc$deleted_v", "cdc$deleted_w" FROM ks.t_scylla_cdc_log '
                              "WHERE pk = 1 ALLOW FILTERING"))
        assert [tuple(r) for r in rows] == [
            (2, 5, b"", None, None), (9, 5, b"", None, None),
            (0, None, b"", None, None), (2, None, b"\x01", None, None), (9, 5, b"\x01", None, None),
            (0, 5, None, None, None), (2, None, None, True, None), (9, None, b"\x01", None, None)]
        ops = [tuple(r) for r in s.execute('SELECT ck, "cdc$operation" FROM ks.t_scylla_cdc_log WHERE pk = 2 '
                                           "ALLOW FILTERING")]
        assert ops == [("c", 2), ("b", 2), ("a", 2), ("c", 9), ("b", 9), ("a", 9)]  # clustering order: DESC
    finally:
        c.shutdown()
        srv.stop()
    assert compared["one pass"] >= before + 6


def test_one_pass_routes_each_write_to_the_stream_of_its_generation(compared, tmp_path):
    """Writes whose timestamps alternate between two generations (``USING TIMESTAMP`` of the old one after
    the switch): each log row is in the stream ``Generation.stream_for`` gives in the generation in force at
    its timestamp, whatever ``LogTargets.stream`` kept from the write before."""
    from logtide.cdc.streams import Topology
    from logtide.storage.keys import partition_token, serialize_partition_key

    clock = ManualClock(1_000_000_000_000)
    with logtide.open(tmp_path / "d", clock=clock, topology=Topology(vnodes=4, shards=1), synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
    clock.advance(seconds=5)
    before = compared.get("one pass", 0)
    with logtide.open(tmp_path / "d", clock=clock, topology=Topology(vnodes=8, shards=2), synchronous="OFF") as db:
        s = db.session()
        old, new = db.generations.generations
        clock.advance(seconds=2)  # past the switch
        stamps = [old.timestamp + 1, new.timestamp + 10, old.timestamp + 2, new.timestamp + 11, old.timestamp + 3]
        for i, ts in enumerate(stamps):
            for pk in range(4):
                s.execute(f"INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, {i}, {i}) USING TIMESTAMP {ts}")
        table = db.catalog.find_table("ks", "t")
        rows = list(s.execute('SELECT "cdc$stream_id", pk, ck FROM ks.t_scylla_cdc_log'))
        assert len(rows) == 20
        for r in rows:
            gen = db.generations.for_timestamp(stamps[r.ck])
            assert gen is (old if r.ck % 2 == 0 else new)
            key = serialize_partition_key([r.pk.to_bytes(4, "big", signed=True)])
            assert r[0] == gen.stream_for(partition_token(table, key))
    assert compared["one pass"] == before + 20


def test_one_pass_images_chain_under_concurrent_server_writes(compared, tmp_path):
    """Writes to one row sent at once through a real server commit in groups, each reading the row as the
    write before it in its group left it: ordered by ``cdc$time``, each preimage is the previous postimage
    (server timestamps; docs/cdc.md, "Preimages and concurrency")."""
    from logtide.server import BackgroundServer, ServerConfig

    from ..server.conftest import cluster

    before = compared.get("one pass", 0)
    db = logtide.open(tmp_path / "data", synchronous="OFF")
    groups: list[int] = []
    run_group = db.committer.run_group

    def counted(fns, blocking=True):
        groups.append(len(fns))
        return run_group(fns, blocking)

    db.committer.run_group = counted
    srv = BackgroundServer(db, ServerConfig(port=0), close_db=True).start()
    c = cluster(srv.port)
    try:
        s = c.connect()
        s.use_client_timestamp = False
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (pk int, ck int, v int, w int, PRIMARY KEY (pk, ck)) "
                  "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
        update = s.prepare("UPDATE ks.t SET v = ?, w = ? WHERE pk = 0 AND ck = 0")
        with srv.server.db.write_lock:  # the writes queue for the committer, which takes them in groups
            futures = [s.execute_async(update, (i, -i if i % 3 else None)) for i in range(150)]
            deadline = time.monotonic() + 10
            while srv.server.committer.pending() < 50 and time.monotonic() < deadline:
                time.sleep(0.01)
        for f in futures:
            f.result()
        rows = list(s.execute('SELECT "cdc$time", "cdc$batch_seq_no", "cdc$operation", v, w FROM ks.t_scylla_cdc_log'))
    finally:
        c.shutdown()
        srv.stop()
    images = [(r[2], (r.v, r.w)) for r in sorted(rows, key=lambda r: (r[0].time, r[1])) if r[2] in (0, 9)]
    assert len(images) == 299  # the first write has no preimage
    post = None
    for op, vw in images:
        if op == 0:
            assert vw == post
        post = vw
    assert compared["one pass"] == before + 150
    assert max(groups) > 1


def test_one_pass_writes_maps_of_15_16_and_17_entries_as_the_general_encoder(compared):
    """A log row's map crosses MessagePack's fixmap limit (15 entries) at every count around it: keys, 10 to 14
    written columns, ``cdc$operation`` and ``cdc$end_of_batch`` (checked by ``compared``)."""
    before = compared.get("one pass", 0)
    names = [f"c{i}" for i in range(14)]
    with tempfile.TemporaryDirectory() as d, logtide.open(d, clock=ManualClock(1_000_000), synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute(f"CREATE TABLE ks.t (pk int, ck int, {', '.join(n + ' int' for n in names)}, PRIMARY KEY (pk, ck)) "
                  "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
        for k in range(10, 15):
            for ck in range(2):
                cols = names[:k]
                s.execute(f"INSERT INTO ks.t (pk, ck, {', '.join(cols)}) VALUES (0, {ck}, {', '.join(['1'] * k)})")
                s.execute(f"UPDATE ks.t SET {', '.join(c + ' = null' for c in cols)} WHERE pk = 0 AND ck = {ck}")
    assert compared["one pass"] == before + 20


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.sampled_from(OPTIONS), feed=st.booleans(),
       steps=st.lists(st.tuples(st.one_of(st.lists(CHANGE, min_size=1, max_size=4), SCHEMA.map(lambda c: [c])),
                                st.sampled_from([0, 0, 1, 2])), min_size=1, max_size=8))
def test_one_pass_logs_what_the_general_path_logs_for_a_twin_table(compared, options, feed, steps):
    """Two tables of one schema get the same writes in the same batches (so the same timestamps): ``ks.a``'s
    plain upserts take the one pass, ``ks.b``'s the general path (rows read as live rows, ``mutation.images.live``).  Their
    logs read back the same, but for the random half of ``cdc$time``: the whole write path, reads included
    (with changefeeds on both tables, or none), not only the encoding."""
    from logtide.cdc import upsert as cdc_upsert

    one_pass = cdc_upsert.UpsertTemplate.append

    def not_for_b(self, pu, *args):
        return None if self.base.name == "b" else one_pass(self, pu, *args)

    clock = ManualClock(1_000_000)
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d, \
            logtide.open(d, clock=clock, synchronous="OFF") as db:
        mp.setattr(cdc_upsert.UpsertTemplate, "append", not_for_b)
        s = db.session()
        s.execute(KS)
        for name in "ab":
            s.execute(f"CREATE TABLE ks.{name} (pk int, ck int, v int, w text, PRIMARY KEY (pk, ck)) "
                      f"WITH cdc = {options}")
            if feed:
                s.execute(FEED.replace("ks.t", f"ks.{name}"))
        for stmts, advance in steps:
            clock.advance(seconds=advance)
            twins = [x.replace("ks.t", f"ks.{name}") for x in stmts for name in "ab"]
            try:
                if stmts[0].startswith("ALTER"):
                    for x in twins:
                        s.execute(x)
                else:
                    s.execute("BEGIN UNLOGGED BATCH " + "; ".join(twins) + "; APPLY BATCH")
            except InvalidRequest:
                pass

        def log(name: str) -> list[dict]:
            rows = [r._asdict() for r in s.execute(f"SELECT * FROM ks.{name}_scylla_cdc_log")]
            for r in rows:
                r["cdc$time"] = r["cdc$time"].time
            return sorted(rows, key=repr)  # partitions of one stream and timestamp differ in cdc$time's random half

        assert log("a") == log("b")


def test_a_prepared_plain_upsert_logs_with_the_cdc_options_in_force_when_it_runs(compared):
    """A statement prepared before ``ALTER TABLE ... WITH cdc`` or ``DROP`` of a column logs as the table is
    when it runs: the one pass's template and log target follow the new schema."""
    before = compared.get("one pass", 0)
    with tempfile.TemporaryDirectory() as d, logtide.open(d, clock=ManualClock(1_000_000), synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (pk int, ck int, v int, w int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
        insert = s.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (0, 0, ?)")
        s.execute(insert, [1])
        s.execute("ALTER TABLE ks.t WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
        s.execute(insert, [2])
        s.execute("ALTER TABLE ks.t DROP w")
        s.execute(insert, [3])
        s.execute("ALTER TABLE ks.t WITH cdc = {'enabled': false}")
        s.execute(insert, [4])
        rows = [tuple(r) for r in s.execute('SELECT "cdc$batch_seq_no", "cdc$operation", v FROM ks.t_scylla_cdc_log')]
    assert rows == [(0, 2, 1), (0, 0, 1), (1, 2, 2), (2, 9, 2), (0, 0, 2), (1, 2, 3), (2, 9, 3)]
    assert compared["one pass"] == before + 3
