"""The broker's view of changefeed topics: Kafka names, authorization and the group's consumer.

Every call here blocks (it reads the topic store) and runs on the broker's
thread pool, never on the event loop.
"""

from __future__ import annotations

from typing import Any

from logtide.auth import DataResource
from logtide.changefeed.api import TopicDescription, TopicReader, UnknownConsumer, UnknownTopic
from logtide.errors import InvalidRequest

from . import errors as E


class Topics:
    """Resolves names a client sends (``ks.t.name`` or ``ks/t/name``) and checks SELECT on the table."""

    def __init__(self, reader: TopicReader, auth: Any) -> None:
        self.reader = reader
        self.auth = auth if auth is not None and getattr(auth, "enabled", False) else None
        self._consumers: set[tuple[str, str]] = set()  # (path, group) seen to exist; a drop is caught on commit

    def allowed(self, role: str | None, desc: TopicDescription) -> bool:
        if self.auth is None:
            return True
        return self.auth.has_permission(role, "SELECT", DataResource(desc.keyspace, desc.table))

    def resolve(self, name: str, role: str | None) -> tuple[TopicDescription | None, int]:
        """The topic a client names and NONE, or None and the Kafka error for it."""
        try:
            desc = self.reader.describe(name)
        except (UnknownTopic, InvalidRequest):
            return None, E.UNKNOWN_TOPIC_OR_PARTITION
        if not self.allowed(role, desc):
            return None, E.TOPIC_AUTHORIZATION_FAILED
        return desc, E.NONE

    def visible(self, role: str | None) -> list[TopicDescription]:
        return [d for d in self.reader.topics() if self.allowed(role, d)]

    def ensure_consumer(self, path: str, group: str) -> None:
        """Make the group a consumer of the topic (created on first use: YDB reads need one to exist)."""
        if (path, group) in self._consumers:
            return
        if any(c.name == group for c in self.reader.consumers(path)):
            self._consumers.add((path, group))
            return
        try:
            self.reader.add_consumer(path, group)
        except InvalidRequest:
            if not any(c.name == group for c in self.reader.consumers(path)):
                raise
        self._consumers.add((path, group))

    def committed(self, path: str, group: str) -> dict[int, int]:
        try:
            return dict(self.reader.committed(path, group))
        except UnknownConsumer:
            self._consumers.discard((path, group))
            self.ensure_consumer(path, group)
            return dict(self.reader.committed(path, group))

    def commit(self, path: str, group: str, offsets: dict[int, int]) -> None:
        try:
            self.reader.commit(path, group, offsets)
        except UnknownConsumer:
            self._consumers.discard((path, group))
            self.ensure_consumer(path, group)
            self.reader.commit(path, group, offsets)
