"""ScyllaDB's batch size thresholds (batch_size_warn_threshold_in_kb 128, batch_size_fail_threshold_in_kb
1024) for a batch over several partitions: a warning to the client, then "Batch too large"."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


def big_batch(n: int) -> str:
    inserts = "\n".join(f"INSERT INTO b (k, t) VALUES ({i}, '{'x' * 743}');" for i in range(n))
    return f"BEGIN BATCH\n{inserts}\nAPPLY BATCH"


@pytest.fixture
def b(session):
    session.execute("CREATE TABLE b (k int PRIMARY KEY, t text)")
    return session


def test_a_small_batch_has_no_warning(b):
    assert b.execute(big_batch(10)).warnings == []


def test_a_batch_over_the_warn_threshold_is_applied_with_a_warning(b):
    r = b.execute(big_batch(129))
    assert len(r.warnings) == 1
    assert r.warnings[0].startswith("Logged batch modifying 129 partitions in ks.b is of size ")
    assert "exceeding specified WARN threshold of 131072" in r.warnings[0]
    assert rows(b.execute("SELECT count(*) FROM b")) == [(129,)]


def test_a_batch_over_the_fail_threshold_is_refused_and_changes_nothing(b):
    with pytest.raises(InvalidRequest, match="Batch too large"):
        b.execute(big_batch(1025))
    assert rows(b.execute("SELECT count(*) FROM b")) == [(0,)]


def test_a_large_batch_on_one_partition_is_not_measured(session):
    session.execute("CREATE TABLE one (k int, c int, t text, PRIMARY KEY (k, c))")
    inserts = "\n".join(f"INSERT INTO one (k, c, t) VALUES (0, {i}, '{'x' * 743}');" for i in range(1100))
    assert session.execute(f"BEGIN BATCH\n{inserts}\nAPPLY BATCH").warnings == []
