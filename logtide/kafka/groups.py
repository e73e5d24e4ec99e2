"""The group coordinator: Kafka's classic consumer-group protocol (KIP-62/KIP-394), leader-based assignment.

Members join (JoinGroup), the leader computes the assignment with the
strategy every member offers (range, roundrobin, cooperative-sticky: the
clients' own assignors) and hands it over in SyncGroup; Heartbeat tells
members of a rebalance, which starts on a join, a leave or a session timeout.
State lives in memory on the broker's event loop; committed offsets do not
(they are the changefeed consumer of the group's name, see ``broker``).

The state is bounded and expires as in Kafka: a member that stops
heartbeating is removed after its session timeout, a member id handed out
with MEMBER_ID_REQUIRED and not used within the session timeout is
forgotten, and a group left with neither members nor such ids is dropped
from memory at once (its committed offsets stay: a changefeed consumer is
shown as an Empty group, see ``handlers``).  ``GroupLimits`` bounds the
members of a group, the members and pending member ids of all groups and
their protocol metadata.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from logtide.ratelog import RateLimitedLog

from . import errors as E
from .codec import MalformedFrame, Reader
from .topics import TopicRef

log = logging.getLogger("logtide.kafka")

EMPTY, PREPARING, COMPLETING, STABLE = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable"
CONSUMER_PROTOCOL = "consumer"


@dataclass(frozen=True)
class GroupLimits:
    """How much group state the coordinator keeps at most (a JoinGroup past a bound: GROUP_MAX_SIZE_REACHED).

    Kafka's ``group.max.size`` is unbounded by default; one logtide broker serves changefeeds with a
    few partitions each, so a group of a thousand members is already far past useful."""

    max_group_size: int = 1000  # members and pending member ids of one group
    max_members: int = 10_000  # members of every group together
    max_pending: int = 10_000  # member ids handed out and not yet used, every group together (the oldest go)
    max_metadata_bytes: int = 64 << 20  # the members' protocol metadata (subscriptions), every group together


def subscription_topics(protocol_type: str, protocols: list[tuple[str, bytes]]) -> list[str] | None:
    """The topics a member subscribes to, from its first protocol's metadata in the consumer protocol's
    Subscription (version, topics, user data...: every version starts the same); None when the group is
    not a consumer group or the metadata does not decode."""
    if protocol_type != CONSUMER_PROTOCOL or not protocols:
        return None
    r = Reader(protocols[0][1])
    try:
        r.int16()
        count = r.int32()
        if count < 0 or count > (len(r.buf) - r.pos) // 2:
            return None
        return [name for name in (r.string() for _ in range(count)) if name]
    except MalformedFrame:
        return None


@dataclass
class Member:
    """One member of a group and what it is waiting for."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    group_instance_id: str | None = None
    role: str | None = None  # the role that joined as this member (the only one that may act as it)
    topics: tuple[TopicRef, ...] = ()  # the changefeed topics it subscribes to
    assignment: bytes = b""
    last_heartbeat: float = field(default_factory=time.monotonic)
    join_waiter: asyncio.Future | None = None
    sync_waiter: asyncio.Future | None = None

    def metadata(self, protocol: str) -> bytes:
        return next((m for n, m in self.protocols if n == protocol), b"")

    @property
    def metadata_bytes(self) -> int:
        return sum(len(m) for _, m in self.protocols)


@dataclass
class Group:
    """A consumer group's membership and generation."""

    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending: dict[str, float] = field(default_factory=dict)  # member ids handed out with MEMBER_ID_REQUIRED -> expiry
    rebalance_deadline: float = 0.0
    delay_until: float = 0.0  # a rebalance of an empty group waits for more members until then
    durable: tuple[TopicRef, ...] = ()  # the topics the group is a changefeed consumer of, as of the last join

    def topics(self) -> set[TopicRef]:
        """The topics the group's offsets are on (as of the last join) and its members subscribe to."""
        out = set(self.durable)
        for m in self.members.values():
            out.update(m.topics)
        return out


class Coordinator:
    """Every group of one broker; all methods run on the broker's event loop."""

    def __init__(self, initial_delay: float = 1.0, limits: GroupLimits = GroupLimits()) -> None:
        self.groups: dict[str, Group] = {}
        self.initial_delay = initial_delay
        self.limits = limits
        self.members = 0  # over every group
        self.metadata_bytes = 0
        self._pending: OrderedDict[tuple[str, str], None] = OrderedDict()  # oldest first
        self._log = RateLimitedLog(log)

    def member(self, group_id: str, member_id: str) -> Member | None:
        g = self.groups.get(group_id)
        return g.members.get(member_id) if g is not None else None

    def _forget_if_empty(self, g: Group) -> None:
        """Drop a group with neither members nor pending member ids from memory (its offsets are durable)."""
        if not g.members and not g.pending and self.groups.get(g.group_id) is g:
            del self.groups[g.group_id]

    def _add_pending(self, g: Group, member_id: str, expires: float) -> None:
        while len(self._pending) >= self.limits.max_pending:
            (gid, mid), _ = self._pending.popitem(last=False)
            old = self.groups.get(gid)
            if old is not None:
                old.pending.pop(mid, None)
                self._forget_if_empty(old)
        g.pending[member_id] = expires
        self._pending[(g.group_id, member_id)] = None

    def _drop_pending(self, g: Group, member_id: str) -> None:
        g.pending.pop(member_id, None)
        self._pending.pop((g.group_id, member_id), None)

    def _over_limits(self, g: Group | None, new_member: bool, new_pending: bool, metadata_delta: int) -> bool:
        lim = self.limits
        size = 0 if g is None else len(g.members) + len(g.pending)
        if (new_member or new_pending) and size >= lim.max_group_size:
            return True
        if new_member and self.members >= lim.max_members:
            return True
        return self.metadata_bytes + metadata_delta > lim.max_metadata_bytes

    # -- JoinGroup ----------------------------------------------------------
    async def join(self, req: dict[str, Any], version: int, client_id: str, client_host: str,
                   role: str | None = None, topics: tuple[TopicRef, ...] = (),
                   durable: tuple[TopicRef, ...] | None = None) -> dict[str, Any]:
        """``role`` and ``topics`` (the subscribed changefeeds) are remembered with the member, ``durable``
        (the topics the group is a consumer of) with the group, for authorization (``acl``)."""
        group_id = req["group_id"]
        if not group_id:
            return {"error_code": E.INVALID_GROUP_ID}
        if not 1 <= req["session_timeout_ms"] <= 30 * 60 * 1000:
            return {"error_code": E.INVALID_SESSION_TIMEOUT}
        protocols = [(p["name"], p["metadata"]) for p in req["protocols"]]
        g = self.groups.get(group_id)
        if not protocols or (g is not None and g.members and req["protocol_type"] != g.protocol_type) or (
                g is not None and g.members and not self._common_protocols(g, protocols, req["member_id"])):
            return {"error_code": E.INCONSISTENT_GROUP_PROTOCOL, "member_id": req["member_id"]}
        member_id = req["member_id"]
        m = g.members.get(member_id) if g is not None and member_id else None
        size = sum(len(x) for _, x in protocols)
        if not member_id:
            if self._over_limits(g, new_member=version < 4, new_pending=version >= 4, metadata_delta=size):
                self._refused(group_id)
                return {"error_code": E.GROUP_MAX_SIZE_REACHED, "member_id": ""}
            member_id = f"{client_id or 'consumer'}-{uuid.uuid4()}"
            if version >= 4:
                g = g or self.group(group_id)
                self._add_pending(g, member_id, time.monotonic() + req["session_timeout_ms"] / 1000)
                return {"error_code": E.MEMBER_ID_REQUIRED, "member_id": member_id}
        elif m is None and (g is None or member_id not in g.pending):
            return {"error_code": E.UNKNOWN_MEMBER_ID, "member_id": member_id}
        elif self._over_limits(None, new_member=m is None, new_pending=False,
                               metadata_delta=size - (m.metadata_bytes if m is not None else 0)):
            self._refused(group_id)
            return {"error_code": E.GROUP_MAX_SIZE_REACHED, "member_id": member_id}
        g = g or self.group(group_id)
        self._drop_pending(g, member_id)
        if durable is not None:
            g.durable = durable
        rebalance_ms = req["rebalance_timeout_ms"] if req["rebalance_timeout_ms"] > 0 else req["session_timeout_ms"]
        if m is None:
            m = g.members[member_id] = Member(member_id, client_id, client_host, req["session_timeout_ms"],
                                              rebalance_ms, req["protocol_type"], protocols,
                                              req.get("group_instance_id"), role, topics)
            self.members += 1
            self.metadata_bytes += size
        else:
            self.metadata_bytes += size - m.metadata_bytes
            m.protocols, m.rebalance_timeout_ms, m.topics = protocols, rebalance_ms, topics
            m.session_timeout_ms = req["session_timeout_ms"]
        g.protocol_type = req["protocol_type"]
        m.last_heartbeat = time.monotonic()
        loop = asyncio.get_running_loop()
        if m.join_waiter is not None and not m.join_waiter.done():
            m.join_waiter.set_result({"error_code": E.REBALANCE_IN_PROGRESS, "member_id": member_id})
        waiter = m.join_waiter = loop.create_future()
        if g.state != PREPARING:
            if g.state == EMPTY and self.initial_delay:
                g.delay_until = time.monotonic() + self.initial_delay
                loop.call_later(self.initial_delay + 0.01, self._maybe_complete_join, g)
            self._prepare_rebalance(g)
        self._maybe_complete_join(g)
        return await waiter

    def group(self, group_id: str) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    def _refused(self, group_id: str) -> None:
        self._log.warning("group limits", "JoinGroup for group %s refused (GROUP_MAX_SIZE_REACHED): %d groups, %d "
                          "members, %d member ids pending, %d bytes of member metadata; limits %s", group_id,
                          len(self.groups), self.members, len(self._pending), self.metadata_bytes, self.limits)

    def _common_protocols(self, g: Group, protocols: list[tuple[str, bytes]], member_id: str) -> set[str]:
        names = {n for n, _ in protocols}
        for m in g.members.values():
            if m.member_id != member_id:
                names &= {n for n, _ in m.protocols}
        return names

    def _prepare_rebalance(self, g: Group) -> None:
        g.state = PREPARING
        timeout = max((m.rebalance_timeout_ms for m in g.members.values()), default=0) / 1000
        g.rebalance_deadline = time.monotonic() + timeout
        for m in g.members.values():  # members waiting for a SyncGroup answer rejoin
            if m.sync_waiter is not None and not m.sync_waiter.done():
                m.sync_waiter.set_result({"error_code": E.REBALANCE_IN_PROGRESS})

    def _maybe_complete_join(self, g: Group) -> None:
        if g.state != PREPARING or not g.members or time.monotonic() < g.delay_until:
            return
        if any(m.join_waiter is None or m.join_waiter.done() for m in g.members.values()):
            return
        g.generation += 1
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        leader = g.members[g.leader]
        common = set.intersection(*({n for n, _ in m.protocols} for m in g.members.values()))
        g.protocol = next(n for n, _ in leader.protocols if n in common)
        g.state = COMPLETING
        for m in g.members.values():
            m.assignment = b""
            answer = {"error_code": E.NONE, "generation_id": g.generation, "protocol_name": g.protocol,
                      "leader": g.leader, "member_id": m.member_id, "members": []}
            if m.member_id == g.leader:
                answer["members"] = [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                                      "metadata": x.metadata(g.protocol)} for x in g.members.values()]
            assert m.join_waiter is not None
            m.join_waiter.set_result(answer)
            m.join_waiter = None
            m.last_heartbeat = time.monotonic()

    # -- SyncGroup -----------------------------------------------------------
    async def sync(self, req: dict[str, Any]) -> dict[str, Any]:
        g = self.groups.get(req["group_id"])
        m = g.members.get(req["member_id"]) if g else None
        if g is None or m is None:
            return {"error_code": E.UNKNOWN_MEMBER_ID}
        if req["generation_id"] != g.generation:
            return {"error_code": E.ILLEGAL_GENERATION}
        if g.state == PREPARING:
            return {"error_code": E.REBALANCE_IN_PROGRESS}
        m.last_heartbeat = time.monotonic()
        if g.state == STABLE:
            return {"error_code": E.NONE, "assignment": m.assignment}
        if m.member_id == g.leader:
            given = {a["member_id"]: a["assignment"] for a in req["assignments"]}
            g.state = STABLE
            for x in g.members.values():
                x.assignment = given.get(x.member_id, b"")
                if x.sync_waiter is not None and not x.sync_waiter.done():
                    x.sync_waiter.set_result({"error_code": E.NONE, "assignment": x.assignment})
                x.sync_waiter = None
            return {"error_code": E.NONE, "assignment": m.assignment}
        m.sync_waiter = asyncio.get_running_loop().create_future()
        return await m.sync_waiter

    # -- Heartbeat, LeaveGroup -----------------------------------------------
    def heartbeat(self, req: dict[str, Any]) -> int:
        g = self.groups.get(req["group_id"])
        m = g.members.get(req["member_id"]) if g else None
        if g is None or m is None:
            return E.UNKNOWN_MEMBER_ID
        if req["generation_id"] != g.generation:
            return E.ILLEGAL_GENERATION
        m.last_heartbeat = time.monotonic()
        return E.REBALANCE_IN_PROGRESS if g.state == PREPARING else E.NONE

    def leave(self, group_id: str, member_id: str) -> int:
        g = self.groups.get(group_id)
        if g is not None and member_id in g.pending:
            self._drop_pending(g, member_id)
            self._forget_if_empty(g)
            return E.NONE
        if g is None or member_id not in g.members:
            return E.UNKNOWN_MEMBER_ID
        self._remove(g, member_id)
        return E.NONE

    def _remove(self, g: Group, member_id: str) -> None:
        m = g.members.pop(member_id)
        self.members -= 1
        self.metadata_bytes -= m.metadata_bytes
        for w in (m.join_waiter, m.sync_waiter):
            if w is not None and not w.done():
                w.set_result({"error_code": E.UNKNOWN_MEMBER_ID})
        if g.leader == member_id:
            g.leader = None
        if not g.members:
            g.state, g.protocol, g.leader = EMPTY, None, None
            g.generation += 1
            self._forget_if_empty(g)
            return
        if g.state != PREPARING:
            self._prepare_rebalance(g)
        self._maybe_complete_join(g)

    def expire(self) -> None:
        """Remove members whose session timed out, members that did not rejoin a rebalance in time and
        member ids handed out but not used within their session timeout; drop groups left empty."""
        now = time.monotonic()
        for g in list(self.groups.values()):
            for member_id, expires in list(g.pending.items()):
                if now > expires:
                    self._drop_pending(g, member_id)
            for m in list(g.members.values()):
                waiting = (m.join_waiter is not None and not m.join_waiter.done()) or (
                    m.sync_waiter is not None and not m.sync_waiter.done())
                if waiting:
                    continue
                late = g.state == PREPARING and now > g.rebalance_deadline
                if late or now - m.last_heartbeat > m.session_timeout_ms / 1000:
                    self._remove(g, m.member_id)
            self._forget_if_empty(g)

    # -- commits ---------------------------------------------------------------
    def check_commit(self, group_id: str, generation: int, member_id: str) -> int:
        """The error an OffsetCommit gets from group state (simple commits: generation -1, no member)."""
        g = self.groups.get(group_id)
        if generation < 0 and not member_id:
            return E.NONE if g is None or not g.members else E.ILLEGAL_GENERATION
        if g is None or member_id not in g.members:
            return E.UNKNOWN_MEMBER_ID
        if generation != g.generation:
            return E.ILLEGAL_GENERATION
        if g.state == COMPLETING:  # while preparing, members commit what they had before rejoining
            return E.REBALANCE_IN_PROGRESS
        g.members[member_id].last_heartbeat = time.monotonic()
        return E.NONE
