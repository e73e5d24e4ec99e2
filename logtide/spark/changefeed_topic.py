"""Where the ``logtide-changefeed`` source reads a topic: over Kafka, or a local data directory.

Both give the same small interface (:class:`TopicAccess`), used by the driver (offsets, barriers,
commits) and inside executors (reading one partition's offset range).  Accesses are opened where
they are used and never pickled: a :class:`TopicAddress` (picklable) opens one.

One idea split for size with ``changefeed_kafka.py``: reading a changefeed topic (its access over the
Kafka protocol there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Protocol

# One message: (offset, write time in ms, Kafka key or None, value)
Message = tuple[int, int, "bytes | None", bytes]


class TopicAccess(Protocol):
    """A topic's partitions, offsets, messages and consumer commits."""

    def partitions(self) -> list[tuple[int, int]]:
        """Each partition's (start offset, end offset), by partition id."""

    def offset_for_time(self, partition: int, time_ms: int) -> int:
        """The first offset written at or after ``time_ms`` (the end offset when none)."""

    def read(self, partition: int, start: int, end: int) -> Iterator[Message]:
        """The messages at ``start <= offset < end``, in offset order (retention may have removed a head)."""

    def commit(self, consumer: str, offsets: Mapping[int, int]) -> None:
        """Commit the consumer's next offsets (partition -> offset)."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class KafkaSettings:
    """How to reach a Kafka-protocol endpoint (bootstrap servers, SASL/PLAIN, TLS); ``extra``: the
    ``kafka.``-prefixed options, passed to the client as Spark's Kafka source does."""

    bootstrap: str
    username: str | None = None
    password: str | None = None
    ssl: bool = False
    ssl_ca_file: str | None = None
    timeout: float = 60.0
    extra: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class TopicAddress:
    """A topic and where to read it: ``kafka`` settings, or a local data directory ``path``."""

    topic: str  # ks/t/name
    kafka: KafkaSettings | None = None
    path: str | None = None

    @property
    def kafka_name(self) -> str:
        return self.topic.replace("/", ".")

    def open(self) -> TopicAccess:
        if self.path is not None:
            return LocalAccess(self.path, self.topic)
        from .changefeed_kafka import KafkaAccess

        assert self.kafka is not None
        return KafkaAccess(self.kafka, self.kafka_name)


class LocalAccess:
    """A topic of a local data directory, through logtide's ``DirectoryTopicReader`` (no Kafka)."""

    CHUNK = 5000

    def __init__(self, path: str, topic: str) -> None:
        from ..changefeed.reader import DirectoryTopicReader

        self.reader = DirectoryTopicReader(path)
        self.topic = topic

    def partitions(self) -> list[tuple[int, int]]:
        return [(p.start_offset, p.end_offset) for p in self.reader.partitions(self.topic)]

    def offset_for_time(self, partition: int, time_ms: int) -> int:
        return self.reader.offset_for_time(self.topic, partition, time_ms)

    def read(self, partition: int, start: int, end: int) -> Iterator[Message]:
        offset = start
        while offset < end:
            records = self.reader.read(self.topic, partition, offset, min(self.CHUNK, end - offset), 8 << 20)
            if not records:
                return
            for r in records:
                if r.offset >= end:
                    return
                yield r.offset, r.write_time_ms, r.key, r.value
            offset = records[-1].offset + 1

    def commit(self, consumer: str, offsets: Mapping[int, int]) -> None:
        from ..changefeed.api import UnknownConsumer

        try:
            self.reader.committed(self.topic, consumer)
        except UnknownConsumer:  # as the Kafka endpoint does for a group: create it on first commit
            self.reader.add_consumer(self.topic, consumer)
        self.reader.commit(self.topic, consumer, dict(offsets))

    def describe(self) -> Any:
        return self.reader.describe(self.topic)

    def close(self) -> None:
        self.reader.close()
