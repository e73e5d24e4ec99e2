"""STAND-IN: an in-memory TopicReader for the Kafka tests until the real changefeed reader is merged.

It follows ``logtide.changefeed.api.TopicReader`` and nothing more; the
fixtures in ``conftest.py`` are the one place that chooses it (switching them
to changefeeds made through CQL is a one-fixture change).
"""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass, field
from typing import Mapping

from logtide.changefeed.api import (ConsumerInfo, TopicDescription, TopicPartition, TopicRecord, UnknownConsumer,
                                    UnknownTopic)
from logtide.errors import InvalidRequest


@dataclass
class _Topic:
    desc: TopicDescription
    parts: list[list[TopicRecord]]
    starts: list[int]
    consumers: dict[str, dict[int, int]] = field(default_factory=dict)


class MemoryTopics:
    """Topics held in lists; ``append`` plays the role of a table write."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._topics: dict[str, _Topic] = {}

    # -- what the tests use to make data ----------------------------------
    def create(self, path: str, partitions: int = 2, format: str = "JSON") -> TopicDescription:
        ks, table, name = path.split("/")
        desc = TopicDescription(path, ks, table, name, partitions, "NEW_AND_OLD_IMAGES", format, "ENABLED", 86400)
        with self._cond:
            self._topics[path] = _Topic(desc, [[] for _ in range(partitions)], [0] * partitions)
        return desc

    def append(self, path: str, partition: int, value: bytes, key: bytes | None = None) -> int:
        with self._cond:
            t = self._topics[path]
            recs = t.parts[partition]
            offset = t.starts[partition] + len(recs)
            recs.append(TopicRecord(partition, offset, int(time.time() * 1000), key, value))
            self._cond.notify_all()
            return offset

    def truncate(self, path: str, partition: int, new_start: int) -> None:
        """Retention: delete records below ``new_start``."""
        with self._cond:
            t = self._topics[path]
            drop = new_start - t.starts[partition]
            del t.parts[partition][:drop]
            t.starts[partition] = new_start

    # -- TopicReader -------------------------------------------------------
    def _t(self, path: str) -> _Topic:
        t = self._topics.get(path.replace(".", "/"))
        if t is None:
            raise UnknownTopic(f"no changefeed topic {path}")
        return t

    def topics(self):
        with self._cond:
            return [self._topics[p].desc for p in sorted(self._topics)]

    def describe(self, path: str) -> TopicDescription:
        with self._cond:
            return self._t(path).desc

    def partitions(self, path: str):
        with self._cond:
            t = self._t(path)
            return [TopicPartition(i, t.starts[i], t.starts[i] + len(t.parts[i])) for i in range(len(t.parts))]

    def read(self, path: str, partition: int, offset: int, max_records: int = 1000, max_bytes: int = 1 << 20):
        with self._cond:
            t = self._t(path)
            recs = t.parts[partition]
            i = max(offset - t.starts[partition], 0)
            out, size = [], 0
            for r in recs[i:i + max_records]:
                if out and size + len(r.value) > max_bytes:
                    break
                out.append(r)
                size += len(r.value) + len(r.key or b"")
            return out

    def wait(self, path: str, positions: Mapping[int, int], timeout: float) -> bool:
        def ready() -> bool:
            t = self._t(path)
            return any(t.starts[p] + len(t.parts[p]) > o for p, o in positions.items() if p < len(t.parts))
        with self._cond:
            return self._cond.wait_for(ready, timeout)

    def offset_for_time(self, path: str, partition: int, time_ms: int) -> int:
        with self._cond:
            t = self._t(path)
            recs = t.parts[partition]
            i = bisect.bisect_left([r.write_time_ms for r in recs], time_ms)
            return t.starts[partition] + i

    def consumers(self, path: str):
        with self._cond:
            return [ConsumerInfo(n, committed=dict(c)) for n, c in sorted(self._t(path).consumers.items())]

    def add_consumer(self, path: str, name: str, important: bool = False, read_from_ms: int = 0) -> None:
        with self._cond:
            t = self._t(path)
            if name in t.consumers:
                raise InvalidRequest(f"consumer {name} already exists on {path}")
            t.consumers[name] = {}

    def drop_consumer(self, path: str, name: str) -> None:
        with self._cond:
            if self._t(path).consumers.pop(name, None) is None:
                raise UnknownConsumer(f"no consumer {name} on {path}")

    def committed(self, path: str, name: str):
        with self._cond:
            c = self._t(path).consumers.get(name)
            if c is None:
                raise UnknownConsumer(f"no consumer {name} on {path}")
            return dict(c)

    def commit(self, path: str, name: str, offsets: Mapping[int, int]) -> None:
        with self._cond:
            c = self._t(path).consumers.get(name)
            if c is None:
                raise UnknownConsumer(f"no consumer {name} on {path}")
            c.update(offsets)
