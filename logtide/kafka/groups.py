"""The group coordinator: Kafka's classic consumer-group protocol (KIP-62/KIP-394), leader-based assignment.

Members join (JoinGroup), the leader computes the assignment with the
strategy every member offers (range, roundrobin, cooperative-sticky: the
clients' own assignors) and hands it over in SyncGroup; Heartbeat tells
members of a rebalance, which starts on a join, a leave or a session timeout.
State lives in memory on the broker's event loop; committed offsets do not
(they are the changefeed consumer of the group's name, see ``broker``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from . import errors as E

EMPTY, PREPARING, COMPLETING, STABLE = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable"


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
    assignment: bytes = b""
    last_heartbeat: float = field(default_factory=time.monotonic)
    join_waiter: asyncio.Future | None = None
    sync_waiter: asyncio.Future | None = None

    def metadata(self, protocol: str) -> bytes:
        return next((m for n, m in self.protocols if n == protocol), b"")


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
    pending: set[str] = field(default_factory=set)  # member ids handed out with MEMBER_ID_REQUIRED
    rebalance_deadline: float = 0.0
    delay_until: float = 0.0  # a rebalance of an empty group waits for more members until then


class Coordinator:
    """Every group of one broker; all methods run on the broker's event loop."""

    def __init__(self, initial_delay: float = 1.0) -> None:
        self.groups: dict[str, Group] = {}
        self.initial_delay = initial_delay

    def group(self, group_id: str) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    # -- JoinGroup ----------------------------------------------------------
    async def join(self, req: dict[str, Any], version: int, client_id: str, client_host: str) -> dict[str, Any]:
        group_id = req["group_id"]
        if not group_id:
            return {"error_code": E.INVALID_GROUP_ID}
        if not 1 <= req["session_timeout_ms"] <= 30 * 60 * 1000:
            return {"error_code": E.INVALID_SESSION_TIMEOUT}
        protocols = [(p["name"], p["metadata"]) for p in req["protocols"]]
        g = self.group(group_id)
        if not protocols or (g.members and req["protocol_type"] != g.protocol_type) or (
                g.members and not self._common_protocols(g, protocols, req["member_id"])):
            return {"error_code": E.INCONSISTENT_GROUP_PROTOCOL, "member_id": req["member_id"]}
        member_id = req["member_id"]
        if not member_id:
            member_id = f"{client_id or 'consumer'}-{uuid.uuid4()}"
            if version >= 4:
                g.pending.add(member_id)
                return {"error_code": E.MEMBER_ID_REQUIRED, "member_id": member_id}
        elif member_id not in g.members and member_id not in g.pending:
            return {"error_code": E.UNKNOWN_MEMBER_ID, "member_id": member_id}
        g.pending.discard(member_id)
        rebalance_ms = req["rebalance_timeout_ms"] if req["rebalance_timeout_ms"] > 0 else req["session_timeout_ms"]
        m = g.members.get(member_id)
        if m is None:
            m = g.members[member_id] = Member(member_id, client_id, client_host, req["session_timeout_ms"],
                                              rebalance_ms, req["protocol_type"], protocols,
                                              req.get("group_instance_id"))
        else:
            m.protocols, m.rebalance_timeout_ms = protocols, rebalance_ms
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
        if g is None or member_id not in g.members:
            return E.UNKNOWN_MEMBER_ID
        self._remove(g, member_id)
        return E.NONE

    def _remove(self, g: Group, member_id: str) -> None:
        m = g.members.pop(member_id)
        for w in (m.join_waiter, m.sync_waiter):
            if w is not None and not w.done():
                w.set_result({"error_code": E.UNKNOWN_MEMBER_ID})
        if g.leader == member_id:
            g.leader = None
        if not g.members:
            g.state, g.protocol, g.leader = EMPTY, None, None
            g.generation += 1
            return
        if g.state != PREPARING:
            self._prepare_rebalance(g)
        self._maybe_complete_join(g)

    def expire(self) -> None:
        """Remove members whose session timed out, and members that did not rejoin a rebalance in time."""
        now = time.monotonic()
        for g in list(self.groups.values()):
            for m in list(g.members.values()):
                waiting = (m.join_waiter is not None and not m.join_waiter.done()) or (
                    m.sync_waiter is not None and not m.sync_waiter.done())
                if waiting:
                    continue
                late = g.state == PREPARING and now > g.rebalance_deadline
                if late or now - m.last_heartbeat > m.session_timeout_ms / 1000:
                    self._remove(g, m.member_id)

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
