"""The group coordinator's state machine (Kafka's classic group protocol), driven directly."""

from __future__ import annotations

import asyncio

from logtide.kafka import errors as E
from logtide.kafka.groups import COMPLETING, PREPARING, STABLE, Coordinator


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
