"""A secondary index built in the background by the real server (``logtide serve``): CREATE INDEX over 20k rows
answers before the build ends, a SIGKILL in the middle of the build loses nothing, the restarted server goes on
with it while clients write, and the index ends complete (docs/views-and-indexes.md, "Building an index")."""

from __future__ import annotations

import signal
import time

import logtide

from ..engine.test_secondary_index_build import KS, entries_agree, fill
from ..engine.test_secondary_index_maintenance import stored_entries
from .conftest import cluster
from .serveproc import Serve


def entries(db) -> set:
    return stored_entries(db, db.catalog.table("ks", "t").indexes[0])


def wait_for_index(s, name: str, timeout: float = 240) -> None:
    """Until ``system."IndexInfo"`` lists the index (what ScyllaDB's cqlpy wait_for_index reads)."""
    deadline = time.monotonic() + timeout
    while not list(s.execute(f"SELECT index_name FROM system.\"IndexInfo\" WHERE table_name = 'ks' "
                             f"AND index_name = '{name}'")):
        assert time.monotonic() < deadline, f"index {name} was not built"
        time.sleep(0.1)


def test_sigkill_during_an_index_build_then_the_restarted_server_completes_it(tmp_path):
    data = tmp_path / "data"
    with logtide.open(data, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("USE ks")
        fill(s, 20000)
    with Serve("--data-dir", str(data)) as srv:
        c = cluster(srv.wait_listening())
        s = c.connect()
        s.execute("CREATE INDEX ON ks.t (v)")
        building = list(s.execute("SELECT view_name, last_token FROM system.views_builds_in_progress"))
        assert [r.view_name for r in building] == ["t_v_idx_index"] and building[0].last_token is not None
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(30)
        c.shutdown()
    with logtide.open(data, readonly=True) as db:  # the kill came in the middle of the build
        assert 0 < len(entries(db)) < 20000
        assert list(db.view_builds.progress()) == [db.catalog.table("ks", "t").indexes[0].store_id]
    with Serve("--data-dir", str(data)) as srv:
        c = cluster(srv.wait_listening())
        s = c.connect()
        write = s.prepare("UPDATE ks.t SET v = ? WHERE p = ?")
        for i in range(0, 20000, 97):  # writes while the build goes on: each moves a row to value 1000 + i
            s.execute(write, (1000 + i, i))
        s.execute("INSERT INTO ks.t (p, v) VALUES (20001, 5)")
        wait_for_index(s, "t_v_idx")
        assert [r.status for r in s.execute("SELECT status FROM system_distributed.view_build_status")] == ["SUCCESS"]
        assert sorted(r.p for r in s.execute("SELECT p FROM ks.t WHERE v = 5")) == [
            p for p in range(5, 20000, 100) if p % 97 != 0] + [20001]
        assert [r.p for r in s.execute("SELECT p FROM ks.t WHERE v = 1097")] == [97]
        c.shutdown()
        assert srv.stop() == 0
    with logtide.open(data) as db:
        entries_agree(db)
