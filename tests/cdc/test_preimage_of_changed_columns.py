"""ScyllaDB's ``'preimage': true`` (not ``'full'``, no postimage) holds only the columns a write changes: the one
pass (``cdc/upsert.py``) then reads before the write only the images of the collections the write changes, and
of the others only whether they hold a live element (``UpsertTemplate.before_plan``).  A row live only through
a collection the write does not change still has its preimage row; the bytes are the general derivation's
(the ``compared`` fixture checks each write).
"""

from __future__ import annotations

import tempfile

import logtide

from .test_log_fast_path import compared  # noqa: F401  (the fixture checking both paths)

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


def test_a_preimage_of_changed_columns_holds_their_values_and_no_other(compared):  # noqa: F811
    with tempfile.TemporaryDirectory() as d:
        db = logtide.open(d)
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (p int, c int, v int, m map<int, int>, l list<int>, PRIMARY KEY (p, c)) "
                  "WITH cdc = {'enabled': true, 'preimage': true}")
        s.execute("UPDATE ks.t SET m = m + {1: 10} WHERE p = 0 AND c = 0")  # live by its map alone
        s.execute("UPDATE ks.t SET m = m + {1: 10}, l = l + [5], v = 1 WHERE p = 0 AND c = 1")
        before = compared.get("one pass of collection changes", 0)
        s.execute("UPDATE ks.t SET v = 2 WHERE p = 0 AND c = 0")  # m unchanged: whether it is live, no image
        s.execute("UPDATE ks.t SET m = m + {2: 20} WHERE p = 0 AND c = 1")  # m changed: its image; v and l not
        assert compared.get("one pass of collection changes", 0) == before + 1
        rows = s.execute("SELECT c, v, m, l, \"cdc$deleted_v\", \"cdc$deleted_m\", \"cdc$operation\" "
                         "FROM ks.t_scylla_cdc_log")
        preimages = sorted((r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows if r[6] == 0)
        assert preimages == [(0, None, None, None, True, None),  # v was null: cdc$deleted_v, as ScyllaDB
                             (1, None, {1: 10}, None, None, None)]
        db.close()
