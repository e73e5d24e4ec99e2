"""kill -9 of a real ``logtide serve`` while ALTER TABLE ADD/DROP column statements and writes run (spec 004).

Changefeeds with SCHEMA_CHANGES write one schema-change record per column change, in the transaction of the
catalog change.  The server is killed (SIGKILL) at a random moment, several times over; after each kill the
data directory must show: base table, CDC log and every changefeed agreeing (no gap, no duplicate, no lost
acknowledged write), exactly one schema-change record in every partition for each DDL that committed
(every acknowledged one, plus at most the one in flight), none for a DDL that did not commit, and every
data record shaped by the schema of the last schema-change record before it.

Each DDL is numbered: DDL ``j`` adds column ``x<j>`` when ``j`` is even and drops ``x<j-1>`` when it is odd,
so the columns of a schema-change record tell which DDL wrote it.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time

import logtide

from ..ops.serving import ServeProcess
from ..server.conftest import KEYSPACE_DDL, cluster

BASE_COLUMNS = {"pk": "int", "ck": "int", "v": "int"}
FEEDS = {
    # name: (DDL settings, partitions)
    "sc": ("MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', VIRTUAL_TIMESTAMPS = TRUE, SCHEMA_CHANGES = TRUE, "
           "TOPIC_MIN_ACTIVE_PARTITIONS = 3", 3),
    "keys": ("MODE = 'KEYS_ONLY', FORMAT = 'JSON', SCHEMA_CHANGES = TRUE", 1),
    "dbz": ("MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON'", 1),
}


OTHER = 1_000_000  # the second client's sequence numbers start here


def _ddl(j: int) -> str:
    return f"ALTER TABLE ks.t ADD x{j} int" if j % 2 == 0 else f"ALTER TABLE ks.t DROP x{j - 1}"


def _columns_after(j: int) -> dict[str, str]:
    """The table's columns once DDL ``j`` (-1: none yet) committed."""
    return {**BASE_COLUMNS, f"x{j}": "int"} if j >= 0 and j % 2 == 0 else dict(BASE_COLUMNS)


def _ddl_of(columns: dict[str, str]) -> int:
    """Which DDL a schema-change record's columns come from."""
    extra = [c for c in columns if c not in BASE_COLUMNS]
    assert len(extra) <= 1, columns
    return int(extra[0][1:]) if extra else -2  # -2: a DROP; resolved by the caller from the record before it


class Client:
    """Writes and DDL through the driver until stopped; records what the server acknowledged."""

    def __init__(self, port: int, seq: int, ddl: int, rng: random.Random, ddl_share: float) -> None:
        self.cluster = cluster(port)
        self.session = self.cluster.connect()
        self.seq, self.ddl, self.rng, self.ddl_share = seq, ddl, rng, ddl_share
        self.acked_writes: list[int] = []
        self.acked_ddl: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        ins = self.session.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?)")
        try:
            while not self.stop.is_set():
                if self.rng.random() < self.ddl_share:
                    self.session.execute(_ddl(self.ddl))
                    self.acked_ddl.append(self.ddl)
                    self.ddl += 1
                else:
                    self.session.execute(ins, [self.seq % 5, self.seq, self.seq])
                    self.acked_writes.append(self.seq)
                    self.seq += 1
        except Exception:  # noqa: BLE001 - the server was killed under the request
            return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(120)
        self.cluster.shutdown()


def _records(reader, path: str) -> dict[int, list[dict]]:
    """Every partition's records, checked to be contiguous from offset 0."""
    out = {}
    for p in reader.partitions(path):
        got = reader.read(path, p.partition, 0, max_records=1_000_000, max_bytes=1 << 40)
        assert [r.offset for r in got] == list(range(p.end_offset)), f"{path}: offsets must be contiguous from 0"
        out[p.partition] = [json.loads(r.value) for r in got]
    return out


def _check(data, acked_writes: set[int], acked_ddl: list[int], issued_ddl: int) -> tuple[set[int], int]:
    """Check the data directory after a kill; (the rows' clustering keys, the next DDL number)."""
    with logtide.open(data) as db:
        db.feeds.pause()
        s = db.session()
        base = {r.ck for r in s.execute("SELECT ck FROM ks.t")}
        assert acked_writes <= base, "an acknowledged write was lost"
        assert {r.ck for r in s.execute("SELECT ck FROM ks.t_scylla_cdc_log")} == base, "CDC log and table disagree"
        table = db.catalog.table("ks", "t")
        catalog_columns = {c.name: c.type.cql() for c in table.columns}
        applied = None
        for name, (_, partitions) in FEEDS.items():
            parts = _records(db.changefeeds, f"ks/t/{name}")
            assert len(parts) == partitions
            data_keys = []
            schema_lists = []
            for recs in parts.values():
                history: list[int] = []  # the DDL of each schema-change record, in offset order
                for rec in recs:
                    if "tableChanges" in rec:
                        t = rec["tableChanges"][0]["table"]
                        j = _ddl_of(t["columns"])
                        j = history[-1] + 1 if j == -2 and history else j
                        assert t["columns"] == _columns_after(j)
                        history.append(j)
                    else:
                        data_keys.append(tuple(rec["key"]) if "key" in rec else rec["payload"]["after"]["ck"])
                        if "newImage" in rec:  # shaped by the latest schema change before it in its partition
                            expected = _columns_after(history[-1] if history else -1)
                            assert set(rec["newImage"]) == set(expected) - {"pk", "ck"}, (rec, history)
                schema_lists.append(history)
            if name == "dbz":
                assert sorted(data_keys) == sorted(base)
                assert not any(schema_lists[0])
                continue
            assert all(h == schema_lists[0] for h in schema_lists), "every partition gets every schema change"
            history = schema_lists[0]
            assert history == list(range(len(history))), f"one record per committed DDL, in order: {history}"
            assert sorted(k[1] for k in data_keys) == sorted(base), "records and base rows disagree (gap or dup)"
            applied = history[-1] if history else -1
            assert catalog_columns == _columns_after(applied), "a schema-change record without its catalog change"
        assert applied is not None
        assert applied >= (acked_ddl[-1] if acked_ddl else -1), "an acknowledged DDL has no schema-change record"
        assert applied < issued_ddl, "a schema-change record for a DDL never sent"
        return base, applied + 1


def test_kill_9_during_column_ddl_and_writes_keeps_schema_change_records_exactly_once(tmp_path):
    data = tmp_path / "data"
    rng = random.Random(8)
    seq, ddl = [0, OTHER], 0
    acked_writes: set[int] = set()
    acked_ddl: list[int] = []
    ddl_total = 0
    for round_no in range(6):
        with ServeProcess.logtide("--data-dir", str(data)) as srv:
            port = srv.wait_listening()
            if round_no == 0:
                c = cluster(port)
                s = c.connect()
                s.execute(KEYSPACE_DDL.format("ks"))
                s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
                for name, (settings, _) in FEEDS.items():
                    s.execute(f"ALTER TABLE ks.t ADD CHANGEFEED {name} WITH ({settings})")
                c.shutdown()
            # one client alters the table and writes, another only writes, at the same time
            client = Client(port, seq[0], ddl, rng, 0.25)
            other = Client(port, seq[1], 0, random.Random(rng.random()), 0.0)
            client.thread.start()
            other.thread.start()
            time.sleep(rng.uniform(0.5, 2.0))
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait(60)
            client.close()
            other.close()
        acked_writes |= set(client.acked_writes) | set(other.acked_writes)
        acked_ddl += client.acked_ddl
        ddl_total += len(client.acked_ddl)
        base, ddl = _check(data, acked_writes, acked_ddl, client.ddl + 1)
        seq = [max((k for k in base if k < OTHER), default=-1) + 1, max(base | {OTHER - 1}) + 1]
    assert ddl_total >= 6 and len(acked_writes) > 30, (ddl_total, len(acked_writes))
