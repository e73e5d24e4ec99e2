"""kcat (librdkafka's command-line client, Debian package ``kcat``) lists and consumes changefeed topics."""

from __future__ import annotations

import json
import subprocess

import pytest

from .conftest import kcat_path


@pytest.fixture(autouse=True)
def _kcat(kcat_bin):
    """Every test here needs kcat (installed on first use when missing, else skipped)."""


def kcat(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([kcat_path(), *args], capture_output=True, text=True, timeout=120)


def test_kcat_lists_topics_by_their_dotted_names(broker, changefeeds):
    feed = changefeeds.make("JSON", partitions=3)
    done = kcat("-b", broker.bootstrap, "-L")
    assert done.returncode == 0, done.stderr
    assert f'topic "{feed.topic}" with 3 partitions:' in done.stdout
    assert "broker 0 at" in done.stdout and "/" not in feed.topic


def test_kcat_consumes_to_the_end_with_keys_and_timestamps(broker, changefeeds):
    feed = changefeeds.make("DEBEZIUM_JSON", partitions=2)
    for i in range(6):
        feed.write(i)
    done = kcat("-b", broker.bootstrap, "-C", "-t", feed.topic, "-e", "-o", "beginning", "-f", "%p|%o|%T|%k|%s\n")
    assert done.returncode == 0, done.stderr
    rows = [line.split("|", 4) for line in done.stdout.splitlines()]
    assert sorted(json.loads(r[3])["payload"]["id"] for r in rows) == list(range(6))
    assert all(int(r[2]) > 0 and json.loads(r[4])["payload"]["op"] == "c" for r in rows)


def test_kcat_consumes_with_a_group_and_commits_to_the_changefeed_consumer(broker, changefeeds):
    feed = changefeeds.make("JSON", partitions=2)
    for i in range(8):
        feed.write(i)
    done = kcat("-b", broker.bootstrap, "-G", "kcat-group", feed.topic, "-e", "-o", "beginning",
                "-X", "auto.commit.interval.ms=100")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 8
    ends = {p.partition: p.end_offset for p in changefeeds.reader.partitions(feed.path)}
    assert changefeeds.reader.committed(feed.path, "kcat-group") == {p: n for p, n in ends.items() if n}
