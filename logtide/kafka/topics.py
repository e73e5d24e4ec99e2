"""The broker's view of changefeed topics: Kafka names, authorization and the group's consumer.

Every call here blocks (it reads the topic store) and runs on the broker's
thread pool, never on the event loop.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from logtide.auth import DataResource
from logtide.changefeed.api import TopicDescription, TopicReader, UnknownConsumer, UnknownTopic
from logtide.errors import InvalidRequest

from . import errors as E
from .codec import ZERO_UUID

TOPIC_ID_NAMESPACE = uuid.UUID("6c6f6774-6964-6500-8000-6b61666b6121")  # names logtide's topic ids (uuid5)


def topic_id(desc: TopicDescription) -> uuid.UUID:
    """The Kafka topic id (KIP-516) of a changefeed topic: a UUID made from its path, store id and creation time,
    so it stays the same across restarts and a changefeed dropped and re-created under the same name gets a new
    one (store ids are never reused), as Kafka gives a re-created topic."""
    return uuid.uuid5(TOPIC_ID_NAMESPACE, f"{desc.path}/{desc.feed_id}/{desc.created_ms}")


@dataclass(frozen=True)
class TopicRef:
    """A changefeed topic as authorization needs it: its path and its table."""

    path: str
    keyspace: str
    table: str

    @classmethod
    def of(cls, desc: TopicDescription) -> "TopicRef":
        return cls(desc.path, desc.keyspace, desc.table)

    @property
    def resource(self) -> DataResource:
        return DataResource(self.keyspace, self.table)


class Topics:
    """Resolves names a client sends (``ks.t.name`` or ``ks/t/name``) and checks SELECT on the table."""

    def __init__(self, reader: TopicReader, auth: Any) -> None:
        self.reader = reader
        self.auth = auth if auth is not None and getattr(auth, "enabled", False) else None
        self._consumers: set[tuple[str, str]] = set()  # (path, group) seen to exist; a drop is caught on commit
        self._ids: dict[uuid.UUID, str] = {}  # topic id -> path: the ids handed out, and reader.topics() on a miss
        self._ids_lock = threading.Lock()
        self._ids_listed = 0.0  # when reader.topics() last filled _ids (at most once a second: unknown ids are cheap)

    def allowed(self, role: str | None, desc: TopicDescription | TopicRef) -> bool:
        """SELECT on the topic's table: the role may read the topic (Kafka's READ and DESCRIBE on it)."""
        return self.permitted(role, "SELECT", desc)

    def permitted(self, role: str | None, permission: str, desc: TopicDescription | TopicRef) -> bool:
        """``permission`` on the topic's table (or its keyspace, or ALL KEYSPACES); always without auth."""
        if self.auth is None:
            return True
        return self.auth.has_permission(role, permission, DataResource(desc.keyspace, desc.table))

    def resolve(self, name: str, role: str | None) -> tuple[TopicDescription | None, int]:
        """The topic a client names and NONE, or None and the Kafka error for it."""
        try:
            desc = self.reader.describe(name)
        except (UnknownTopic, InvalidRequest):
            return None, E.UNKNOWN_TOPIC_OR_PARTITION
        if not self.allowed(role, desc):
            return None, E.TOPIC_AUTHORIZATION_FAILED
        return desc, E.NONE

    def resolve_id(self, tid: uuid.UUID, role: str | None) -> tuple[TopicDescription | None, int]:
        """The topic a client names by topic id and NONE, or None and UNKNOWN_TOPIC_ID (or the authorization
        error: a role that may not read the topic learns no more than with its name)."""
        if tid == ZERO_UUID:
            return None, E.UNKNOWN_TOPIC_ID
        with self._ids_lock:
            path = self._ids.get(tid)
            if path is None and time.monotonic() - self._ids_listed >= 1.0:
                self._ids = {topic_id(d): d.path for d in self.reader.topics()}
                self._ids_listed = time.monotonic()
                path = self._ids.get(tid)
        if path is None:
            return None, E.UNKNOWN_TOPIC_ID
        desc, err = self.resolve(path, role)
        if desc is not None and topic_id(desc) != tid:  # dropped and re-created since the id was learnt
            return None, E.UNKNOWN_TOPIC_ID
        return desc, (E.UNKNOWN_TOPIC_ID if err == E.UNKNOWN_TOPIC_OR_PARTITION else err)

    def topic_id(self, desc: TopicDescription) -> uuid.UUID:
        """The topic's id, remembered so that requests naming it by id find it."""
        tid = topic_id(desc)
        if tid not in self._ids:
            with self._ids_lock:
                self._ids[tid] = desc.path
        return tid

    def visible(self, role: str | None) -> list[TopicDescription]:
        return [d for d in self.reader.topics() if self.allowed(role, d)]

    def refs(self, names: Iterable[str]) -> tuple[TopicRef, ...]:
        """The changefeed topics among ``names`` (Kafka or path form); names of no topic are left out."""
        out: dict[str, TopicRef] = {}
        for name in names:
            try:
                ref = TopicRef.of(self.reader.describe(name))
            except (UnknownTopic, InvalidRequest):
                continue
            out.setdefault(ref.path, ref)
        return tuple(out.values())

    def consumer_topics(self, group: str) -> tuple[TopicRef, ...]:
        """The topics ``group`` is a changefeed consumer of (its committed offsets are on)."""
        return tuple(self.consumers_by_name().get(group, ()))

    def consumers_by_name(self) -> dict[str, list[TopicRef]]:
        """Every changefeed consumer's name and the topics it is a consumer of."""
        out: dict[str, list[TopicRef]] = {}
        for d in self.reader.topics():
            try:
                consumers = self.reader.consumers(d.path)
            except (UnknownTopic, InvalidRequest):  # dropped meanwhile
                continue
            for c in consumers:
                out.setdefault(c.name, []).append(TopicRef.of(d))
        return out

    def has_consumer(self, path: str, group: str) -> bool:
        if (path, group) in self._consumers:
            return True
        return any(c.name == group for c in self.reader.consumers(path))

    def ensure_consumer(self, path: str, group: str) -> None:
        """Make the group a consumer of the topic (created on first use: YDB reads need one to exist)."""
        if (path, group) in self._consumers:
            return
        if self.is_consumer(path, group):
            self._consumers.add((path, group))
            return
        try:
            self.reader.add_consumer(path, group)
        except InvalidRequest:
            if not self.is_consumer(path, group):
                raise
        self._consumers.add((path, group))

    def is_consumer(self, path: str, group: str) -> bool:
        """Whether the group is a consumer of the topic; reads only its own stored state, so that another
        consumer's damaged offsets (``docs/durability.md``, format 3) never fail this group."""
        try:
            self.reader.committed(path, group)
        except UnknownConsumer:
            return False
        return True

    def committed(self, path: str, group: str, create: bool = True) -> dict[int, int]:
        """The group's committed offsets on the topic; a missing consumer is created first (``create``) or
        has none."""
        try:
            return dict(self.reader.committed(path, group))
        except UnknownConsumer:
            self._consumers.discard((path, group))
            if not create:
                return {}
            self.ensure_consumer(path, group)
            return dict(self.reader.committed(path, group))

    def commit(self, path: str, group: str, offsets: dict[int, int], create: bool = True) -> None:
        """Commit the group's offsets; a consumer dropped meanwhile is created again (``create``) or the
        UnknownConsumer raised."""
        try:
            self.reader.commit(path, group, offsets)
        except UnknownConsumer:
            self._consumers.discard((path, group))
            if not create:
                raise
            self.ensure_consumer(path, group)
            self.reader.commit(path, group, offsets)
