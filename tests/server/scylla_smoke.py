"""Smoke test run by scylla-driver's Python in its own venv: ``python scylla_smoke.py PORT [PROTOCOL]``.

Prints one JSON object with what it observed and exits 0; any failure is an
exception (exit status 1).  It must not import logtide: scylla-driver and
cassandra-driver both install the module ``cassandra``.
"""

from __future__ import annotations

import json
import sys

import cassandra
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import RoundRobinPolicy
from cassandra.query import BatchStatement, SimpleStatement


def main(port: int, protocol: int | None) -> dict:
    kwargs = {"protocol_version": protocol} if protocol else {}
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=30)
    cluster = Cluster(["127.0.0.1"], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      connect_timeout=10, **kwargs)
    session = cluster.connect()
    ks = f"scylla_v{cluster.protocol_version}"
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.t (pk int, ck int, v text, tags set<text>, "
                    "PRIMARY KEY (pk, ck))")
    columns = sorted(cluster.metadata.keyspaces[ks].tables["t"].columns)
    insert = session.prepare(f"INSERT INTO {ks}.t (pk, ck, v, tags) VALUES (?, ?, ?, ?)")
    futures = [session.execute_async(insert, (i % 3, i, f"v{i}", {"a", str(i)})) for i in range(1000)]
    for f in futures:
        f.result()
    batch = BatchStatement()
    batch.add(insert, (9, 1, "batched", None))
    batch.add(SimpleStatement(f"UPDATE {ks}.t SET v = 'simple' WHERE pk = 9 AND ck = 2"))
    session.execute(batch)
    select = session.prepare(f"SELECT ck, v, tags FROM {ks}.t WHERE pk = ?")
    row = session.execute(f"SELECT v, tags FROM {ks}.t WHERE pk = 1 AND ck = 4").one()
    session.execute(insert, (9, 3, None, None))
    in_list = session.prepare(f"UPDATE {ks}.t SET v = 'in' WHERE pk = 9 AND ck = 3 IF v IN ?")
    lwt_in_null = session.execute(in_list, ([None],)).one()[0]  # scylla-driver sends the None as a null element
    session.execute(f"DELETE FROM {ks}.t WHERE pk = 9 AND ck = 3")
    paged = session.execute(SimpleStatement(f"SELECT pk, ck FROM {ks}.t", fetch_size=50))
    all_rows = [(r.pk, r.ck) for r in paged]
    out = {
        "driver": cassandra.__version__,
        "protocol": cluster.protocol_version,
        "columns": columns,
        "row": [row.v, sorted(row.tags)],
        "pk0": len(list(session.execute(select, (0,)))),
        "batch": [(r.ck, r.v) for r in session.execute(select, (9,))],
        "paged_rows": len(all_rows),
        "lwt_in_null": lwt_in_null,
        "distinct": len(set(all_rows)),
        "release_version": session.execute("SELECT release_version FROM system.local").one().release_version,
    }
    cluster.shutdown()
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)))
