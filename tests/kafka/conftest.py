"""Fixtures of the Kafka endpoint tests: real changefeeds, made and written through CQL.

``changefeeds`` opens a real database (``logtide.open``) and makes each topic
with ``ALTER TABLE ks.tN ADD CHANGEFEED feed WITH (MODE='NEW_AND_OLD_IMAGES',
FORMAT=...)``; ``Feed.write(i)`` is an INSERT of row ``i`` and the broker
serves ``db.changefeeds``.  The database's clock is the wall clock plus a
skew the tests move forward (``changefeeds.advance``), so retention can
delete records for real: records written before ``advance(s)`` are older
than a ``RETENTION_PERIOD`` shorter than ``s``, and ``changefeeds.tick()``
runs the changefeed worker's pass now (``db.feeds.tick``: due barriers, retention).
"""

from __future__ import annotations

import itertools
import json
import shutil
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from logtide.kafka import BackgroundKafka, KafkaConfig


class SkewedClock:
    """The wall clock plus a skew that only grows (``advance``): time passes at once for retention."""

    def __init__(self) -> None:
        self.skew_micros = 0

    def now_micros(self) -> int:
        return time.time_ns() // 1000 + self.skew_micros

    def advance(self, seconds: float) -> None:
        self.skew_micros += int(seconds * 1_000_000)


@dataclass
class Feed:
    """One changefeed topic and how to make records in it."""

    source: "CqlChangefeeds"
    path: str
    format: str
    partitions: int

    @property
    def topic(self) -> str:
        return self.path.replace("/", ".")

    @property
    def table(self) -> str:
        return self.path.split("/")[1]

    def write(self, i: int) -> None:
        """A table write of the row with key ``i`` (one change record)."""
        self.source.write(self, i)

    def row_id(self, key: bytes | None, value: bytes) -> int:
        """The row key a delivered message is about, checked against its Kafka key (JSON: the record's key array,
        byte for byte; Debezium: the key message; DynamoDB: the record's Keys object)."""
        if self.format == "DEBEZIUM_JSON":
            assert key is not None
            return json.loads(key)["payload"]["id"]
        record = json.loads(value)
        if self.format == "DYNAMODB_STREAMS_JSON":
            assert key is not None and json.loads(key) == record["dynamodb"]["Keys"]
            return int(record["dynamodb"]["Keys"]["id"]["N"])
        assert key == json.dumps(record["key"], separators=(",", ":")).encode(), (key, value)
        return record["key"][0]

    def value_row_id(self, value: bytes) -> int:
        """The row key of a message whose key the client does not show (kcat's default output)."""
        assert self.format == "JSON"
        return json.loads(value)["key"][0]


class CqlChangefeeds:
    """Real changefeeds of a logtide database, made and written through CQL."""

    def __init__(self, data_dir: Any) -> None:
        import logtide
        self.clock = SkewedClock()
        self.db = logtide.open(data_dir, clock=self.clock, synchronous="OFF")
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

    def make(self, format: str = "JSON", partitions: int = 2, **options: str) -> Feed:
        """A new table ``ks.tN`` with a changefeed ``feed``; ``options`` adds WITH options (name=CQL literal)."""
        table = f"t{next(self._n)}"
        s = self.session()
        s.execute(f"CREATE TABLE IF NOT EXISTS ks.{table} (id int PRIMARY KEY, v text)")
        extra = "".join(f", {k.upper()} = {v}" for k, v in options.items())
        s.execute(f"ALTER TABLE ks.{table} ADD CHANGEFEED feed WITH (MODE = 'NEW_AND_OLD_IMAGES', "
                  f"FORMAT = '{format}', TOPIC_MIN_ACTIVE_PARTITIONS = {partitions}{extra})")
        return Feed(self, f"ks/{table}/feed", format, partitions)

    def write(self, feed: Feed, i: int) -> None:
        self.session().execute(f"INSERT INTO ks.{feed.table} (id, v) VALUES ({i}, 'row {i}')")

    def now_ms(self) -> int:
        """The database's clock, in milliseconds (what records' write times are taken from)."""
        return self.clock.now_micros() // 1000

    def advance(self, seconds: float) -> None:
        """Move the database's clock forward: records written so far become ``seconds`` older."""
        self.clock.advance(seconds)

    def tick(self) -> None:
        """Run the changefeed worker's pass now: barriers that are due and retention (records older than RETENTION_PERIOD go)."""
        self.db.feeds.tick(retention=True)

    def close(self) -> None:
        self.db.close()


@pytest.fixture
def changefeeds(tmp_path):
    feeds = CqlChangefeeds(tmp_path / "data")
    yield feeds
    feeds.close()


@pytest.fixture
def broker(changefeeds):
    with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0)) as b:
        yield b


def kcat_path() -> str | None:
    """kcat (tests/conftest.py installs the Debian package ``kcat`` before collection when it is missing)."""
    return shutil.which("kcat") or shutil.which("kafkacat")


@pytest.fixture
def kcat_bin() -> str:
    path = kcat_path()
    if path is None:
        pytest.skip("kcat is not installed and could not be (apt-get install kcat)")
    return path


def wait_for(cond: Any, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
