"""The group coordinator's state machine (Kafka's classic group protocol), driven directly."""

from __future__ import annotations

import asyncio

from logtide.kafka import errors as E
from logtide.kafka.groups import COMPLETING, PREPARING, STABLE, Coordinator, GroupLimits


def join_req(member_id: str = "", session_ms: int = 10_000, protocols=(("range", b"m"),)) -> dict:
    return {"group_id": "g", "session_timeout_ms": session_ms, "rebalance_timeout_ms": 60_000,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": n, "metadata": m} for n, m in protocols]}


async def join(c: Coordinator, member_id: str = "", **kw) -> dict:
    first = await c.join(join_req(member_id, **kw), 5, "client", "/127.0.0.1")
    if first["error_code"] == E.MEMBER_ID_REQUIRED:
        return await c.join(join_req(first["member_id"], **kw), 5, "client", "/127.0.0.1")
    return first


def test_first_join_needs_a_member_id_then_the_leader_gets_the_members():
    async def run() -> None:
        c = Coordinator(initial_delay=0)
        first = await c.join(join_req(), 4, "client", "/h")
        assert first["error_code"] == E.MEMBER_ID_REQUIRED and first["member_id"]
        answer = await c.join(join_req(first["member_id"]), 4, "client", "/h")
        assert answer["error_code"] == E.NONE and answer["leader"] == first["member_id"]
        assert [m["member_id"] for m in answer["members"]] == [first["member_id"]]
        assert c.groups["g"].state == COMPLETING
        sync = await c.sync({"group_id": "g", "generation_id": answer["generation_id"],
                             "member_id": first["member_id"], "assignments": [
                                 {"member_id": first["member_id"], "assignment": b"all"}]})
        assert sync == {"error_code": E.NONE, "assignment": b"all"} and c.groups["g"].state == STABLE
    asyncio.run(run())


def test_a_second_member_makes_the_first_rejoin_and_both_get_the_leaders_assignment():
    async def run() -> None:
        c = Coordinator(initial_delay=0)
        a = await join(c)
        await c.sync({"group_id": "g", "generation_id": a["generation_id"], "member_id": a["member_id"],
                      "assignments": [{"member_id": a["member_id"], "assignment": b"a-all"}]})
        b_join = asyncio.ensure_future(join(c))
        await asyncio.sleep(0.01)
        hb = {"group_id": "g", "generation_id": a["generation_id"], "member_id": a["member_id"]}
        assert c.heartbeat(hb) == E.REBALANCE_IN_PROGRESS
        a2 = await join(c, a["member_id"])
        b = await b_join
        assert a2["generation_id"] == b["generation_id"] == a["generation_id"] + 1
        assert a2["leader"] == a["member_id"] and len(a2["members"]) == 2 and b["members"] == []
        b_sync = asyncio.ensure_future(c.sync({"group_id": "g", "generation_id": b["generation_id"],
                                               "member_id": b["member_id"], "assignments": []}))
        await asyncio.sleep(0.01)
        await c.sync({"group_id": "g", "generation_id": a2["generation_id"], "member_id": a["member_id"],
                      "assignments": [{"member_id": a["member_id"], "assignment": b"p0"},
                                      {"member_id": b["member_id"], "assignment": b"p1"}]})
        assert (await b_sync)["assignment"] == b"p1"
    asyncio.run(run())


def test_a_member_that_stops_heartbeating_is_removed_after_its_session_timeout():
    async def run() -> None:
        c = Coordinator(initial_delay=0)
        a = await join(c, session_ms=50)
        b_join = asyncio.ensure_future(join(c, session_ms=50))
        await asyncio.sleep(0.2)  # a never rejoins nor heartbeats
        c.expire()
        b = await b_join
        assert b["error_code"] == E.NONE and b["leader"] == b["member_id"] and len(b["members"]) == 1
        stale = {"group_id": "g", "generation_id": a["generation_id"], "member_id": a["member_id"]}
        assert c.heartbeat(stale) == E.UNKNOWN_MEMBER_ID
    asyncio.run(run())


def test_leave_rebalances_and_commits_follow_kafkas_rules():
    async def run() -> None:
        c = Coordinator(initial_delay=0)
        a = await join(c)
        assert c.check_commit("g", a["generation_id"], a["member_id"]) == E.REBALANCE_IN_PROGRESS  # awaiting sync
        await c.sync({"group_id": "g", "generation_id": a["generation_id"], "member_id": a["member_id"],
                      "assignments": []})
        assert c.check_commit("g", a["generation_id"], a["member_id"]) == E.NONE
        assert c.check_commit("g", a["generation_id"] - 1, a["member_id"]) == E.ILLEGAL_GENERATION
        assert c.check_commit("g", -1, "") == E.ILLEGAL_GENERATION  # simple commits only to empty groups
        b_join = asyncio.ensure_future(join(c))
        await asyncio.sleep(0.01)
        assert c.groups["g"].state == PREPARING
        assert c.check_commit("g", a["generation_id"], a["member_id"]) == E.NONE  # commit before rejoining
        assert c.leave("g", a["member_id"]) == E.NONE
        b = await b_join
        assert b["leader"] == b["member_id"]
        assert c.leave("g", b["member_id"]) == E.NONE and c.check_commit("g", -1, "") == E.NONE
    asyncio.run(run())


def test_members_without_a_common_protocol_are_refused():
    async def run() -> None:
        c = Coordinator(initial_delay=0)
        await join(c, protocols=(("range", b""),))
        answer = await c.join(join_req(protocols=(("roundrobin", b""),)), 5, "x", "/h")
        assert answer["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    asyncio.run(run())


def test_member_ids_handed_out_and_never_used_expire_with_their_session_timeout_and_the_group_goes():
    async def run() -> None:
        c = Coordinator(initial_delay=0)
        first = await c.join(join_req(session_ms=50), 4, "client", "/h")
        assert first["error_code"] == E.MEMBER_ID_REQUIRED and "g" in c.groups
        await asyncio.sleep(0.1)
        c.expire()
        assert c.groups == {}
        late = await c.join(join_req(first["member_id"]), 4, "client", "/h")
        assert late["error_code"] == E.UNKNOWN_MEMBER_ID  # the client starts over with a fresh join
    asyncio.run(run())


def test_a_group_left_by_its_last_member_is_dropped_from_memory():
    async def run() -> None:
        c = Coordinator(initial_delay=0)
        a = await join(c)
        assert c.leave("g", a["member_id"]) == E.NONE
        assert c.groups == {} and c.members == 0 and c.metadata_bytes == 0
        b = await join(c, session_ms=50)  # and by its last member's session timing out
        await c.sync({"group_id": "g", "generation_id": b["generation_id"], "member_id": b["member_id"],
                      "assignments": []})
        await asyncio.sleep(0.1)
        c.expire()
        assert c.groups == {} and c.members == 0
    asyncio.run(run())


def test_pending_member_ids_are_bounded_the_oldest_going_first():
    async def run() -> None:
        c = Coordinator(initial_delay=0, limits=GroupLimits(max_pending=100))
        handed = []
        for i in range(1000):
            req = dict(join_req(), group_id=f"g{i}")
            handed.append((await c.join(req, 4, "client", "/h"))["member_id"])
        assert sum(len(g.pending) for g in c.groups.values()) == 100 and len(c.groups) == 100
        assert (await c.join(dict(join_req(handed[0]), group_id="g0"), 4, "c", "/h"))["error_code"] == \
            E.UNKNOWN_MEMBER_ID
        newest = await c.join(dict(join_req(handed[-1]), group_id="g999"), 4, "c", "/h")
        assert newest["error_code"] == E.NONE
    asyncio.run(run())


def test_groups_and_members_are_bounded_with_group_max_size_reached():
    async def run() -> None:
        c = Coordinator(initial_delay=0, limits=GroupLimits(max_group_size=2, max_members=3,
                                                            max_metadata_bytes=1000))
        await join(c)
        await asyncio.gather(join(c), join(c, member_id=next(iter(c.groups["g"].members))))
        third = await c.join(join_req(), 4, "client", "/h")
        assert third["error_code"] == E.GROUP_MAX_SIZE_REACHED  # group.max.size
        assert (await join_in(c, "h"))["error_code"] == E.NONE
        assert (await join_in(c, "i"))["error_code"] == E.GROUP_MAX_SIZE_REACHED  # members of every group
        big = await c.join(dict(join_req(protocols=(("range", b"x" * 2000),)), group_id="j"), 3, "c", "/h")
        assert big["error_code"] == E.GROUP_MAX_SIZE_REACHED  # metadata of every member
    asyncio.run(run())


async def join_in(c: Coordinator, group: str) -> dict:
    first = await c.join(dict(join_req(), group_id=group), 5, "client", "/h")
    if first["error_code"] != E.MEMBER_ID_REQUIRED:
        return first
    return await c.join(dict(join_req(first["member_id"]), group_id=group), 5, "client", "/h")


def test_twenty_thousand_join_requests_leave_no_group_behind(broker):
    """Over the wire, pipelined: JoinGroup v4 without a member id, each for a new group (before: 20,000 groups
    stayed in memory for good)."""
    from .rawclient import RawClient, request_frame
    host, port = broker.broker.advertised
    c = RawClient(host, port)
    frames = b"".join(request_frame(11, 4, dict(join_req(session_ms=500), group_id=f"flood-{i}"), i)
                      for i in range(20_000))
    c.send(frames)
    for _ in range(20_000):
        frame = c.recv_frame()
        assert frame is not None
    stats = broker.stats()
    assert stats["groups"] <= GroupLimits().max_pending, stats
    c.close()
    from .conftest import wait_for
    wait_for(lambda: broker.stats()["groups"] == 0, timeout=30, what="the pending member ids to expire")
