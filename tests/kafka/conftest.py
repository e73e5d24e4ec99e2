"""Fixtures of the Kafka endpoint tests.

``changefeeds`` is the ONE fixture that decides where topics come from: real
changefeeds made through CQL (``ALTER TABLE ks.tN ADD CHANGEFEED feed WITH
(MODE='NEW_AND_OLD_IMAGES', FORMAT=...)``, rows written with INSERT, served
from ``db.changefeeds``) when this build has the changefeed reader, else the
in-memory stand-in (``memory_topics.MemoryTopics``).  Tests only use
``Feed.topic``/``path``, ``Feed.write(i)``, ``Feed.row_id(key, value)`` and
``changefeeds.reader``; retention tests use ``standin_changefeeds``, whose
``expire`` deletes a prefix at will (real retention goes by time).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import shutil
import threading
from dataclasses import dataclass
from typing import Any

import pytest

from logtide.kafka import BackgroundKafka, KafkaConfig

from .memory_topics import MemoryTopics

HAVE_CHANGEFEED_READER = importlib.util.find_spec("logtide.changefeed.reader") is not None


@dataclass
class Feed:
    """One changefeed topic and how to make records in it."""

    source: Any
    path: str
    format: str
    partitions: int

    @property
    def topic(self) -> str:
        return self.path.replace("/", ".")

    def write(self, i: int) -> None:
        """A table write of the row with key ``i`` (one change record)."""
        self.source.write(self, i)

    def row_id(self, key: bytes | None, value: bytes) -> int:
        """The row key a delivered message is about (JSON: ``key[0]``; Debezium: the key message)."""
        if self.format == "DEBEZIUM_JSON":
            assert key is not None
            return json.loads(key)["payload"]["id"]
        assert key is None
        return json.loads(value)["key"][0]


class StandInChangefeeds:
    """Changefeed topics of the in-memory stand-in reader, with records shaped as YDB's formats."""

    db = None

    def __init__(self) -> None:
        self.reader = MemoryTopics()
        self._n = itertools.count()

    def make(self, format: str = "JSON", partitions: int = 2) -> Feed:
        path = f"ks/t{next(self._n)}/feed"
        self.reader.create(path, partitions, format)
        return Feed(self, path, format, partitions)

    def write(self, feed: Feed, i: int) -> None:
        if feed.format == "DEBEZIUM_JSON":
            key = json.dumps({"payload": {"id": i}}).encode()
            value = json.dumps({"payload": {"op": "c", "after": {"id": i, "v": f"row {i}"},
                                            "source": {"connector": "ydb"}}}).encode()
        else:
            key = None
            value = json.dumps({"key": [i], "update": {}, "newImage": {"v": f"row {i}"}}).encode()
        self.reader.append(feed.path, i % feed.partitions, value, key)

    def expire(self, feed: Feed, partition: int, offset: int) -> None:
        """Retention deletes the partition's records below ``offset``."""
        self.reader.truncate(feed.path, partition, offset)


class CqlChangefeeds:
    """Real changefeeds of a logtide database, made and written through CQL."""

    def __init__(self, data_dir: Any) -> None:
        import logtide
        self.db = logtide.open(data_dir, synchronous="OFF")
        self.reader = self.db.changefeeds
        self._n = itertools.count()
        self._local = threading.local()
        self.session().execute("CREATE KEYSPACE IF NOT EXISTS ks WITH replication = "
                               "{'class': 'SimpleStrategy', 'replication_factor': 1}")

    def session(self) -> Any:
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = self.db.session()
        return s

    def make(self, format: str = "JSON", partitions: int = 2) -> Feed:
        table = f"t{next(self._n)}"
        s = self.session()
        s.execute(f"CREATE TABLE IF NOT EXISTS ks.{table} (id int PRIMARY KEY, v text)")
        s.execute(f"ALTER TABLE ks.{table} ADD CHANGEFEED feed WITH (MODE = 'NEW_AND_OLD_IMAGES', "
                  f"FORMAT = '{format}', TOPIC_MIN_ACTIVE_PARTITIONS = {partitions})")
        return Feed(self, f"ks/{table}/feed", format, partitions)

    def write(self, feed: Feed, i: int) -> None:
        table = feed.path.split("/")[1]
        self.session().execute(f"INSERT INTO ks.{table} (id, v) VALUES ({i}, 'row {i}')")

    def close(self) -> None:
        self.db.close()


@pytest.fixture
def changefeeds(tmp_path):
    if not HAVE_CHANGEFEED_READER:
        yield StandInChangefeeds()
        return
    feeds = CqlChangefeeds(tmp_path / "data")
    yield feeds
    feeds.close()


@pytest.fixture
def standin_changefeeds() -> StandInChangefeeds:
    return StandInChangefeeds()


@pytest.fixture
def broker(changefeeds):
    with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0)) as b:
        yield b


@pytest.fixture
def standin_broker(standin_changefeeds):
    with BackgroundKafka(standin_changefeeds.reader, KafkaConfig(port=0)) as b:
        yield b


def kcat_path() -> str | None:
    return shutil.which("kcat") or shutil.which("kafkacat")


def wait_for(cond: Any, timeout: float = 60.0, what: str = "condition") -> None:
    import time
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
