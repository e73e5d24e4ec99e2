"""Kafka's authorization of topics and consumer groups, in logtide's terms (docs/kafka.md,
"Authentication and authorization").

Kafka authorizes an operation on a resource (READ on topic t, READ or DESCRIBE on group g) through
ACLs.  logtide has no grants on topics or groups, only CQL permissions on keyspaces and tables; a
topic is a table's changefeed, and a group's committed offsets on a topic ARE the changefeed consumer
of the group's name on it (as YDB, where reading with a consumer needs the right to read the topic
and creating a consumer the right to alter it).  So, with ``--auth``:

- READ and DESCRIBE on a topic: SELECT on its table;
- the topics of a group: those it is a changefeed consumer of, and those its members subscribe to;
- DESCRIBE on a group: SELECT on the table of every topic of the group (a group without topics: any
  role);
- READ on a group: DESCRIBE on it and, for each topic a request would give it offsets on (the
  subscriptions of JoinGroup, the topics of OffsetCommit), the consumer exists already or the role
  may create it: ALTER on the table, as ``ALTER TOPIC ... ADD CONSUMER``;
- acting as a member (SyncGroup, Heartbeat, LeaveGroup, a member's OffsetCommit): being the role that
  joined as it, or a superuser.

Checks that need the topic store (which consumers exist) run on the broker's thread pool
(``durable``); the others read in-memory state and run on the event loop.
"""

from __future__ import annotations

from typing import Iterable

from . import errors as E
from .groups import Coordinator
from .topics import TopicRef, Topics


class GroupAccess:
    """The group rules above for one broker; everything is allowed when the endpoint has no auth."""

    def __init__(self, topics: Topics, coordinator: Coordinator) -> None:
        self.topics = topics
        self.coordinator = coordinator

    @property
    def enabled(self) -> bool:
        return self.topics.auth is not None

    # -- on the event loop ---------------------------------------------------------
    def may_describe(self, role: str | None, refs: Iterable[TopicRef]) -> bool:
        """DESCRIBE on a group whose topics are ``refs``: SELECT on the table of each."""
        return all(self.topics.allowed(role, r) for r in refs)

    def may_create_consumer(self, role: str | None, ref: TopicRef) -> bool:
        """ALTER on the table: the role may add a consumer to its changefeed (ALTER TOPIC ... ADD CONSUMER)."""
        return self.topics.permitted(role, "ALTER", ref)

    def in_memory(self, group_id: str) -> set[TopicRef]:
        """The topics the coordinator knows for the group: its members' subscriptions and its consumers as of
        its last join (empty for a group not in memory)."""
        g = self.coordinator.groups.get(group_id)
        return g.topics() if g is not None else set()

    def member_error(self, role: str | None, group_id: str, member_id: str) -> int:
        """GROUP_AUTHORIZATION_FAILED when ``member_id`` is a member of the group that another role joined as."""
        if not self.enabled or not member_id:
            return E.NONE
        m = self.coordinator.member(group_id, member_id)
        if m is None or m.role == role or self.topics.auth.is_superuser(role):
            return E.NONE
        return E.GROUP_AUTHORIZATION_FAILED

    def member_request_error(self, role: str | None, group_id: str, member_id: str) -> int:
        """SyncGroup, Heartbeat, LeaveGroup: READ on the group as the coordinator knows it, and the member's own
        role (a revoked SELECT ends membership at the next heartbeat)."""
        if not self.enabled:
            return E.NONE
        if not self.may_describe(role, self.in_memory(group_id)):
            return E.GROUP_AUTHORIZATION_FAILED
        return self.member_error(role, group_id, member_id)

    def join_error(self, role: str | None, group_id: str, member_id: str, subscribed: Iterable[TopicRef],
                   durable: Iterable[TopicRef]) -> int:
        """JoinGroup: READ on the group with the member's subscriptions added to its topics."""
        if not self.enabled:
            return E.NONE
        durable_paths = {r.path for r in durable}
        subscribed = list(subscribed)
        if not self.may_describe(role, self.in_memory(group_id) | set(durable) | set(subscribed)):
            return E.GROUP_AUTHORIZATION_FAILED
        if any(r.path not in durable_paths and not self.may_create_consumer(role, r) for r in subscribed):
            return E.GROUP_AUTHORIZATION_FAILED
        return self.member_error(role, group_id, member_id)

    def group_error(self, role: str | None, group_id: str, durable: Iterable[TopicRef]) -> int:
        """DESCRIBE on the group (FindCoordinator, OffsetFetch, DescribeGroups; OffsetCommit's group-wide part)."""
        if not self.enabled:
            return E.NONE
        if not self.may_describe(role, self.in_memory(group_id) | set(durable)):
            return E.GROUP_AUTHORIZATION_FAILED
        return E.NONE

    def joined_durable(self, group_id: str) -> tuple[TopicRef, ...] | None:
        """The topics a group with members was a consumer of at its last join (None: not known in memory)."""
        g = self.coordinator.groups.get(group_id)
        return g.durable if g is not None and g.members else None

    # -- on the broker's thread pool ---------------------------------------------------
    def durable(self, group_id: str) -> tuple[TopicRef, ...]:
        """The topics the group is a changefeed consumer of (reads the topic store; () without auth)."""
        return self.topics.consumer_topics(group_id) if self.enabled else ()
