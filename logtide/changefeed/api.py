"""The changefeed topic reader's interface (YDB topics, spec ``004``): what every front end reads through.

One implementation (``logtide.changefeed.reader``) serves every read and
commit, whether embedded, from the CLI (``logtide topic read``) or over the
Kafka protocol (``logtide.kafka``).  A topic is addressed by YDB's path form
``ks/t/name``; its partitions hold records at contiguous offsets from 0 that
are never reused (retention deletes a prefix, so a partition's start offset
grows).  Consumers are named, per topic, and hold one committed offset per
partition: the offset of the next record to read, as YDB and Kafka count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from ..errors import InvalidRequest


class UnknownTopic(InvalidRequest):
    """No changefeed topic has this path (or its Kafka name ``ks.t.name``)."""


class UnknownConsumer(InvalidRequest):
    """The topic has no consumer of this name."""


@dataclass(frozen=True)
class TopicPartition:
    """One partition's offsets: records exist at ``start_offset <= offset < end_offset``."""

    partition: int
    start_offset: int
    end_offset: int


@dataclass(frozen=True)
class TopicRecord:
    """One message of a topic: the change record (or barrier) JSON as ``value``.

    ``key`` is the Debezium key message for DEBEZIUM_JSON and None otherwise
    (YDB's Kafka API); ``write_time_ms`` is when the record was committed.
    """

    partition: int
    offset: int
    write_time_ms: int
    key: bytes | None
    value: bytes


@dataclass(frozen=True)
class TopicDescription:
    """A changefeed topic as readers see it."""

    path: str  # 'ks/t/name'
    keyspace: str
    table: str
    name: str
    partitions: int
    mode: str
    format: str
    state: str  # 'ENABLED' | 'DISABLED' | 'INITIAL_SCAN'
    retention_seconds: int
    feed_id: int = 0  # the changefeed's store id: never reused, so a re-created changefeed has a new one
    created_ms: int = 0  # when the changefeed was created

    @property
    def kafka_name(self) -> str:
        """The name Kafka clients use (they refuse ``/``): ``ks.t.name``."""
        return self.path.replace("/", ".")


@dataclass(frozen=True)
class ConsumerInfo:
    """A consumer of a topic and its committed offsets (partition -> next offset to read)."""

    name: str
    important: bool = False
    read_from_ms: int = 0
    committed: Mapping[int, int] = field(default_factory=dict)


class TopicReader(Protocol):
    """Reads changefeed topics and keeps consumer offsets (YDB's topic model)."""

    def topics(self) -> Sequence[TopicDescription]:
        """Every changefeed topic, in path order."""

    def describe(self, path: str) -> TopicDescription:
        """The topic at ``path`` (``ks/t/name`` or ``ks.t.name``); raises UnknownTopic."""

    def feed(self, path: str) -> tuple[Any, Any]:
        """The table (``logtide.schema.model.Table``) and ``Changefeed`` at ``path``; raises UnknownTopic."""

    def partitions(self, path: str) -> Sequence[TopicPartition]:
        """Each partition's [start, end) offsets, by partition id."""

    def read(self, path: str, partition: int, offset: int, max_records: int = 1000,
             max_bytes: int = 1 << 20) -> Sequence[TopicRecord]:
        """Records of one partition from ``offset`` on, in offset order (at least one if any exists,
        even past ``max_bytes``); an offset below the start begins at the start."""

    def read_rows(self, path: str, partition: int, offset: int, max_records: int = 1000,
                  max_bytes: int = 1 << 20) -> Sequence[tuple[int, int, bytes | None, bytes]]:
        """``read`` as bare ``(offset, write_time_ms, key, value)`` tuples, for bulk readers that re-encode
        every record at once (the Kafka endpoint's record batches) and need no TopicRecord objects."""

    def wait(self, path: str, positions: Mapping[int, int], timeout: float) -> bool:
        """Block until some partition in ``positions`` has a record at or past its offset, or ``timeout``
        seconds pass; True if there is something to read."""

    def offset_for_time(self, path: str, partition: int, time_ms: int) -> int:
        """The first offset whose record was written at or after ``time_ms`` (the end offset if none)."""

    def consumers(self, path: str) -> Sequence[ConsumerInfo]:
        """The topic's consumers with their committed offsets."""

    def add_consumer(self, path: str, name: str, important: bool = False, read_from_ms: int = 0) -> None:
        """Create a consumer (ALTER TOPIC ... ADD CONSUMER); an existing name is an error."""

    def drop_consumer(self, path: str, name: str) -> None:
        """Remove a consumer and its offsets; raises UnknownConsumer."""

    def committed(self, path: str, name: str) -> Mapping[int, int]:
        """The consumer's committed offsets by partition (absent: nothing committed); raises UnknownConsumer."""

    def commit(self, path: str, name: str, offsets: Mapping[int, int]) -> None:
        """Durably set the consumer's committed offsets for the given partitions; raises UnknownConsumer."""
