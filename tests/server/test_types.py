"""Every CQL type round-trips through the server: bound values in, result values out, per protocol version."""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import uuid

import pytest
from cassandra.util import Date, Duration, Time

from .conftest import KEYSPACE_DDL, cluster

COLUMNS = {
    "c_ascii": ("ascii", "plain ascii"),
    "c_bigint": ("bigint", -(2 ** 63) + 1),
    "c_blob": ("blob", b"\x00\xffbytes"),
    "c_boolean": ("boolean", True),
    "c_date": ("date", Date(datetime.date(2021, 3, 4))),
    "c_decimal": ("decimal", decimal.Decimal("-12.3450")),
    "c_double": ("double", 1.5e300),
    "c_duration": ("duration", Duration(1, 2, 3_000_000_004)),
    "c_float": ("float", 2.5),
    "c_inet4": ("inet", "192.168.1.20"),
    "c_inet6": ("inet", "2001:db8::1"),
    "c_int": ("int", -2 ** 31),
    "c_smallint": ("smallint", -32768),
    "c_text": ("text", "héllo wörld ☃"),
    "c_time": ("time", Time(datetime.time(13, 14, 15, 123456))),
    "c_timestamp": ("timestamp", datetime.datetime(2020, 9, 13, 12, 26, 40, 123000)),
    "c_timeuuid": ("timeuuid", uuid.UUID("f4b6cb5e-ffc6-11ea-adc1-0242ac120002")),
    "c_tinyint": ("tinyint", -128),
    "c_uuid": ("uuid", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    "c_varint": ("varint", 2 ** 100 + 7),
    "c_list": ("list<int>", [3, 1, 2, 1]),
    "c_set": ("set<text>", {"b", "a", "c"}),
    "c_map": ("map<int, text>", {2: "two", 1: "one"}),
    "c_frozen": ("frozen<list<frozen<map<text, int>>>>", [{"a": 1}, {"b": 2, "c": 3}]),
    "c_tuple": ("tuple<int, text, frozen<set<int>>>", (1, "x", {5, 4})),
    "c_udt": ("frozen<point>", None),  # filled in below (needs the driver's UDT class)
    "c_udts": ("list<frozen<point>>", None),
}


def normalise(value):
    """Driver result containers as plain Python values, for comparison."""
    if isinstance(value, (Date, Time)):
        return str(value)
    if hasattr(value, "_fields"):  # UDT namedtuple
        return tuple(normalise(v) for v in value)
    if isinstance(value, dict) or hasattr(value, "items"):
        return {normalise(k): normalise(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)) or type(value).__name__ == "SortedSet":
        return {normalise(v) for v in value}
    if isinstance(value, (list, tuple)):
        return type(value)(normalise(v) for v in value)
    if isinstance(value, str):
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            return value
    return value


@pytest.mark.parametrize("protocol", [4, 5])
def test_all_types_round_trip(port, protocol):
    c = cluster(port, protocol)
    s = c.connect()
    ks = f"types_v{protocol}"
    s.execute(KEYSPACE_DDL.format(ks))
    s.execute(f"CREATE TYPE {ks}.point (x int, y double, label text, tags frozen<list<text>>)")
    columns = ", ".join(f"{name} {cql}" for name, (cql, _) in COLUMNS.items())
    s.execute(f"CREATE TABLE {ks}.every (k int PRIMARY KEY, {columns})")
    s.execute(f"CREATE TABLE {ks}.counters (k int PRIMARY KEY, n counter)")
    values = {name: v for name, (_, v) in COLUMNS.items()}
    values["c_udt"] = (1, 2.5, "p", ["t1", "t2"])
    values["c_udts"] = [(3, None, None, None), (4, 0.5, "q", [])]
    names = list(COLUMNS)
    insert = s.prepare(f"INSERT INTO {ks}.every (k, {', '.join(names)}) VALUES (?, {', '.join('?' * len(names))})")
    s.execute(insert, [1] + [values[n] for n in names])
    s.execute(f"INSERT INTO {ks}.every (k, {', '.join(names[:20])}) VALUES (%s, {', '.join(['%s'] * 20)})",
              [2] + [values[n] for n in names[:20]])  # client-side interpolation: CQL literals
    s.execute(f"INSERT INTO {ks}.every (k) VALUES (3)")
    for k in (1, 2):
        row = s.execute(f"SELECT * FROM {ks}.every WHERE k = %s", (k,)).one()
        for name in names if k == 1 else names[:20]:
            assert normalise(getattr(row, name)) == normalise(values[name]), name
    nulls = s.execute(f"SELECT * FROM {ks}.every WHERE k = 3").one()
    assert all(getattr(nulls, n) is None for n in names)
    bump = s.prepare(f"UPDATE {ks}.counters SET n = n + ? WHERE k = ?")
    s.execute(bump, (2 ** 40, 1))
    s.execute(bump, (-1, 1))
    assert s.execute(f"SELECT n FROM {ks}.counters WHERE k = 1").one().n == 2 ** 40 - 1
    c.shutdown()


def test_bound_values_in_where_and_collections_ops(port):
    c = cluster(port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("types_ops"))
    s.execute("CREATE TABLE types_ops.t (k text, c timestamp, l list<int>, m map<text, int>, st set<int>, "
              "PRIMARY KEY (k, c))")
    ts = datetime.datetime(2021, 1, 1, 0, 0, 1)
    s.execute(s.prepare("INSERT INTO types_ops.t (k, c, l, m, st) VALUES (?, ?, ?, ?, ?)"),
              ("a", ts, [1], {"x": 1}, {1}))
    s.execute(s.prepare("UPDATE types_ops.t SET l = l + ?, m[?] = ?, st = st - ? WHERE k = ? AND c = ?"),
              ([2, 3], "y", 2, {1}, "a", ts))
    row = s.execute(s.prepare("SELECT l, m, st FROM types_ops.t WHERE k = ? AND c IN ?"), ("a", [ts])).one()
    assert row.l == [1, 2, 3] and dict(row.m) == {"x": 1, "y": 2} and row.st is None
    c.shutdown()


@pytest.mark.parametrize("protocol", [4, 5])
def test_vectors_travel_as_scylla_sends_them_a_custom_vector_type(port, protocol):
    from cassandra.cqltypes import VectorType

    c = cluster(port, protocol)
    s = c.connect()
    ks = f"vectors_v{protocol}"
    s.execute(KEYSPACE_DDL.format(ks))
    s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, f vector<float, 3>, t vector<text, 2>, "
              "s vector<set<int>, 2>)")
    insert = s.prepare(f"INSERT INTO {ks}.t (k, f, t, s) VALUES (?, ?, ?, ?)")
    bound = {m.name: m.type for m in insert.column_metadata}
    assert issubclass(bound["f"], VectorType) and bound["f"].vector_size == 3
    assert bound["f"].subtype.typename == "float"
    s.execute(insert, (1, [1.0, 2.5, -3.0], ["a", "bc" * 100], [{2, 1}, {3}]))
    s.execute(f"INSERT INTO {ks}.t (k, f) VALUES (2, [0.5, 0.25, 0.125])")
    row = s.execute(f"SELECT f, t, s FROM {ks}.t WHERE k = 1").one()
    assert row.f == [1.0, 2.5, -3.0] and row.t == ["a", "bc" * 100] and [set(x) for x in row.s] == [{1, 2}, {3}]
    score = s.prepare(f"SELECT k, similarity_euclidean(f, ?) FROM {ks}.t WHERE k = 2")
    assert s.execute(score, ([0.5, 0.25, 0.125],)).one()[1] == 1.0
    with pytest.raises(ValueError):  # the driver checks the dimension of a bound vector
        s.execute(insert, (3, [1.0], None, None))
    c.shutdown()
