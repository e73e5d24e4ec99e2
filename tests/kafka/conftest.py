"""Fixtures of the Kafka endpoint tests.

``changefeeds`` is the ONE fixture that decides where topics come from: today
the in-memory stand-in (``memory_topics.MemoryTopics``); once the changefeed
reader is merged it creates tables and changefeeds through CQL
(``ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE='NEW_AND_OLD_IMAGES', FORMAT=...)``)
and writes rows, and ``broker`` serves ``db.changefeeds``.  Tests only use
``Feed.topic``, ``Feed.write(i)``, ``Feed.row_id(key, value)``, ``changefeeds.reader``
and ``changefeeds.expire(feed, partition, offset)``.
"""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import dataclass
from typing import Any

import pytest

from logtide.kafka import BackgroundKafka, KafkaConfig

from .memory_topics import MemoryTopics


@dataclass
class Feed:
    """One changefeed topic and how to make records in it."""

    source: "StandInChangefeeds"
    path: str
    format: str
    partitions: int

    @property
    def topic(self) -> str:
        return self.path.replace("/", ".")

    def write(self, i: int) -> None:
        """A table write of the row with key ``i`` (one change record)."""
        part = i % self.partitions
        if self.format == "DEBEZIUM_JSON":
            key = json.dumps({"payload": {"id": i}}).encode()
            value = json.dumps({"payload": {"op": "c", "after": {"id": i, "v": f"row {i}"}, "before": None,
                                            "source": {"connector": "logtide"}}}).encode()
        else:
            key = None
            value = json.dumps({"update": {"v": f"row {i}"}, "key": [i], "newImage": {"v": f"row {i}"}}).encode()
        self.source.reader.append(self.path, part, value, key)

    def row_id(self, key: bytes | None, value: bytes) -> int:
        """The row key a delivered message is about."""
        if self.format == "DEBEZIUM_JSON":
            assert key is not None
            return json.loads(key)["payload"]["id"]
        assert key is None
        return json.loads(value)["key"][0]


class StandInChangefeeds:
    """Changefeed topics of the in-memory stand-in reader."""

    def __init__(self) -> None:
        self.reader = MemoryTopics()
        self._n = itertools.count()

    def make(self, format: str = "JSON", partitions: int = 2) -> Feed:
        path = f"ks/t{next(self._n)}/feed"
        self.reader.create(path, partitions, format)
        return Feed(self, path, format, partitions)

    def expire(self, feed: Feed, partition: int, offset: int) -> None:
        """Retention deletes the partition's records below ``offset``."""
        self.reader.truncate(feed.path, partition, offset)


@pytest.fixture
def changefeeds() -> StandInChangefeeds:
    return StandInChangefeeds()


@pytest.fixture
def broker(changefeeds: StandInChangefeeds):
    with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0)) as b:
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
