"""What the broker answers to each API (Kafka protocol guide; logtide's choices in docs/kafka.md).

Each handler takes the decoded request dict and its version and returns the
response dict (None: no response, Produce with acks=0).  Topic store calls run
on the broker's thread pool through ``conn.blocking``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Iterable

from logtide.changefeed.api import TopicDescription, UnknownConsumer
from logtide.errors import CorruptRecord, InvalidRequest

from . import errors as E
from .admin import (CLUSTER_ID, CLUSTER_OPERATIONS, TOPIC_OPERATIONS, UNKNOWN_OPERATIONS, describe_cluster,
                    describe_configs)
from .codec import ZERO_UUID
from .groups import CONSUMER_PROTOCOL, EMPTY, subscription_topics
from .messages import APIS
from .topics import TopicRef

KafkaConnection = Any  # the connection.KafkaConnection a request came on (it imports this module, not back)

log = logging.getLogger("logtide.kafka")

MAX_WAIT_MS = 30_000  # a Fetch waits at most this long, whatever it asks
WAIT_SLICE = 0.5  # seconds per blocking wait, so a closed connection frees its thread soon


def api_versions(conn: "KafkaConnection", req: dict, version: int) -> dict:
    return {"error_code": E.NONE, "api_keys": supported_api_keys()}


def supported_api_keys() -> list[dict]:
    return [{"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version}
            for a in sorted(APIS.values(), key=lambda a: a.key)]


async def metadata(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """Topics asked by name (each once, as Kafka answers), or by topic id (v12), or every topic the role may
    read; v10+ answers carry topic ids."""
    asked = req["topics"]
    everything = asked is None or (version == 0 and not asked)
    operations = req["include_topic_authorized_operations"]

    def look() -> list[dict]:
        if everything:
            return [_topic_meta(conn, d.kafka_name, d, E.NONE, operations) for d in conn.topics.visible(conn.role)]
        out, seen = [], set()
        for t in asked:
            name, tid = t["name"], t["topic_id"]
            if name is None or (tid != ZERO_UUID and version >= 12):  # by id
                if (tid, None) in seen:
                    continue
                seen.add((tid, None))
                desc, err = conn.topics.resolve_id(tid, conn.role) if version >= 12 else (None, E.INVALID_REQUEST)
                out.append(_topic_meta(conn, desc.kafka_name if desc else None, desc, err, operations, tid))
                continue
            if name in seen:
                continue
            seen.add(name)
            desc, err = conn.topics.resolve(name, conn.role)
            out.append(_topic_meta(conn, name, desc, err, operations))
        return out

    host, port = conn.broker.advertised
    return {"brokers": [{"node_id": 0, "host": host, "port": port, "rack": None}], "cluster_id": CLUSTER_ID,
            "controller_id": 0, "topics": await conn.blocking(look),
            "cluster_authorized_operations": CLUSTER_OPERATIONS if req["include_cluster_authorized_operations"]
            else UNKNOWN_OPERATIONS}


def _topic_meta(conn: "KafkaConnection", name: str | None, desc: TopicDescription | None, err: int,
                operations: bool = False, tid: Any = ZERO_UUID) -> dict:
    parts = [] if desc is None else [
        {"error_code": E.NONE, "partition_index": p, "leader_id": 0, "leader_epoch": -1, "replica_nodes": [0],
         "isr_nodes": [0], "offline_replicas": []} for p in range(desc.partitions)]
    return {"error_code": err, "name": name, "is_internal": False, "partitions": parts,
            "topic_id": tid if desc is None else conn.topics.topic_id(desc),
            "topic_authorized_operations": TOPIC_OPERATIONS if operations and desc is not None
            else UNKNOWN_OPERATIONS}


async def find_coordinator(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """Node 0 coordinates every consumer group; v4+ asks for several keys at once; with auth, a group's
    coordinator is found only with DESCRIBE on the group (acl)."""
    keys = req["coordinator_keys"] if version >= 4 else [req["key"]]
    access = conn.broker.access
    consumers: dict[str, list[TopicRef]] = {}
    if req["key_type"] == 0 and access.enabled:  # one read of the consumers answers every key
        consumers = await conn.blocking(conn.topics.consumers_by_name)
    answers = [_coordinator(conn, req["key_type"], k, consumers.get(k, ())) for k in keys]
    if version >= 4:
        return {"coordinators": [dict(a, key=k) for a, k in zip(answers, keys)]}
    return answers[0]


def _coordinator(conn: "KafkaConnection", key_type: int, key: str, durable: Iterable[TopicRef]) -> dict:
    if key_type != 0:  # 1: a transactional id, 2: a share group (KIP-932)
        return {"error_code": E.COORDINATOR_NOT_AVAILABLE, "node_id": -1, "host": "", "port": -1,
                "error_message": "logtide coordinates consumer groups only (no transactions, no share groups)"}
    host, port = conn.broker.advertised
    err = conn.broker.access.group_error(conn.role, key, durable)  # DESCRIBE on the group (acl)
    if err:
        return {"error_code": err, "error_message": f"Not authorized to access group {key}",
                "node_id": -1, "host": "", "port": -1}
    return {"error_code": E.NONE, "error_message": None, "node_id": 0, "host": host, "port": port}


async def list_offsets(conn: "KafkaConnection", req: dict, version: int) -> dict:
    def look() -> list[dict]:
        topics = []
        looked: dict[str, tuple] = {}  # each topic a request names is resolved and its bounds read once
        for t in req["topics"]:
            if t["name"] not in looked:
                desc, err = conn.topics.resolve(t["name"], conn.role)
                looked[t["name"]] = desc, err, ({} if desc is None else
                                                {p.partition: p for p in conn.topics.reader.partitions(desc.path)})
            desc, err, bounds = looked[t["name"]]
            parts = []
            for p in t["partitions"]:
                idx = p["partition_index"]
                if desc is None or idx not in bounds:
                    parts.append({"partition_index": idx, "error_code": err or E.UNKNOWN_TOPIC_OR_PARTITION})
                    continue
                try:
                    offset, ts = _offset_for(conn, desc.path, bounds[idx], p["timestamp"])
                except CorruptRecord as e:  # the records the answer rests on do not verify
                    conn.broker.damage_log.error(f"{desc.path}/{idx}", "ListOffsets of %s partition %d answered "
                                                 "CORRUPT_MESSAGE: %s", desc.path, idx, e)
                    parts.append({"partition_index": idx, "error_code": E.CORRUPT_MESSAGE})
                    continue
                parts.append({"partition_index": idx, "error_code": E.NONE, "timestamp": ts, "offset": offset,
                              "old_style_offsets": [offset] if offset >= 0 else []})
            topics.append({"name": t["name"], "partitions": parts})
        return topics

    return {"topics": await conn.blocking(look)}


def _offset_for(conn: "KafkaConnection", path: str, bounds: Any, timestamp: int) -> tuple[int, int]:
    """ListOffsets: -1 latest, -2 earliest (-4 earliest local: the same, all records are local), -3 the record
    with the largest timestamp (KIP-734: the first one written at the last record's time), -5 the last tiered
    offset (KIP-1005: -1, nothing is tiered); else the first record written at or after ``timestamp``."""
    if timestamp == -1:
        return bounds.end_offset, -1
    if timestamp in (-2, -4):
        return bounds.start_offset, -1
    if timestamp == -5:
        return -1, -1
    if timestamp == -3:
        if bounds.end_offset <= bounds.start_offset:
            return -1, -1
        last = conn.topics.reader.read(path, bounds.partition, bounds.end_offset - 1, 1)
        if not last:
            return -1, -1
        timestamp = last[0].write_time_ms
    offset = max(conn.topics.reader.offset_for_time(path, bounds.partition, timestamp), bounds.start_offset)
    if offset >= bounds.end_offset:
        return -1, -1
    recs = conn.topics.reader.read(path, bounds.partition, offset, 1)
    return offset, (recs[0].write_time_ms if recs else -1)


async def fetch(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """Fetch with long polling: answer once ``min_bytes`` are there, an error occurs or ``max_wait_ms`` passes."""
    deadline = time.monotonic() + min(max(req["max_wait_ms"], 0), MAX_WAIT_MS) / 1000
    min_bytes = max(req["min_bytes"], 1)
    responses, size, errors, waits = await conn.blocking(_fetch_once, conn, req, version)
    while True:
        remaining = deadline - time.monotonic()
        if size >= min_bytes or errors or remaining <= 0 or not waits or conn.closing():
            return {"error_code": E.NONE, "session_id": 0, "responses": responses}
        again = await _wait_any(conn, req, version, waits, min(remaining, WAIT_SLICE))
        if again is not None:
            responses, size, errors, waits = again


FetchResult = tuple[list[dict], int, bool, dict[str, dict[int, int]]]


async def _wait_any(conn: "KafkaConnection", req: dict, version: int, waits: dict[str, dict[int, int]],
                    timeout: float) -> FetchResult | None:
    """Wait for a record past the waited positions; the fetch done again then (None: nothing arrived).

    With one topic waited on (the common case) the wait and the fetch after it run on the same wait thread,
    so a commit reaches the answer without a hop through the event loop in between (latency)."""
    reader = conn.topics.reader
    loop = asyncio.get_running_loop()
    if len(waits) == 1:
        ((path, positions),) = waits.items()

        def wait_then_fetch() -> FetchResult | None:
            try:
                arrived = reader.wait(path, positions, timeout)
            except Exception:  # e.g. the changefeed was dropped: the fetch answers the error
                arrived = True
            return _fetch_once(conn, req, version) if arrived else None
        return await loop.run_in_executor(conn.broker.wait_pool, wait_then_fetch)
    futures = [loop.run_in_executor(conn.broker.wait_pool, reader.wait, path, positions, timeout)
               for path, positions in waits.items()]
    _done, pending = await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    for f in pending:
        f.cancel()
    return await conn.blocking(_fetch_once, conn, req, version)


def _fetch_once(conn: "KafkaConnection", req: dict, version: int) -> "FetchResult":
    reader = conn.topics.reader
    budget = req.get("max_bytes", 0x7FFFFFFF)
    if budget <= 0:
        budget = 0x7FFFFFFF
    size = 0
    errors = False
    waits: dict[str, dict[int, int]] = {}
    responses = []
    looked: dict[Any, tuple] = {}  # each topic a request names is resolved and its bounds read once
    for t in req["topics"]:
        name = t["topic_id"] if version >= 13 else t["topic"]  # 13+: topics by id (KIP-516)
        if name not in looked:
            desc, err = (conn.topics.resolve_id(name, conn.role) if version >= 13
                         else conn.topics.resolve(name, conn.role))
            looked[name] = desc, err, ({} if desc is None else {p.partition: p for p in reader.partitions(desc.path)})
        desc, err, bounds = looked[name]
        parts = []
        for p in t["partitions"]:
            idx, offset = p["partition"], p["fetch_offset"]
            b = bounds.get(idx)
            if desc is None or b is None:
                errors = True
                parts.append({"partition_index": idx, "error_code": err or E.UNKNOWN_TOPIC_OR_PARTITION,
                              "aborted_transactions": [], "records": b""})
                continue
            answer = {"partition_index": idx, "error_code": E.NONE, "high_watermark": b.end_offset,
                      "last_stable_offset": b.end_offset, "log_start_offset": b.start_offset,
                      "aborted_transactions": [], "records": b""}
            parts.append(answer)
            if offset < b.start_offset or offset > b.end_offset:
                answer["error_code"] = E.OFFSET_OUT_OF_RANGE
                errors = True
                continue
            if offset == b.end_offset:
                waits.setdefault(desc.path, {})[idx] = offset
                continue
            limit = max(1, min(p["partition_max_bytes"], budget - size)) if size < budget else 0
            if limit == 0:
                continue
            try:
                batch = conn.broker.batches.read(desc.path, idx, offset, limit, b.end_offset, desc.format)
            except CorruptRecord as e:  # never altered data: this partition's error, the others still answered
                conn.broker.damage_log.error(f"{desc.path}/{idx}", "Fetch of %s partition %d at offset %d answered "
                                             "CORRUPT_MESSAGE: %s", desc.path, idx, offset, e)
                answer["error_code"] = E.CORRUPT_MESSAGE
                errors = True
                continue
            if not batch:
                waits.setdefault(desc.path, {})[idx] = offset
                continue
            answer["records"] = batch
            size += len(batch)
        responses.append({"topic": t["topic"], "topic_id": t["topic_id"], "partitions": parts})
    return responses, size, errors, waits


async def produce(conn: "KafkaConnection", req: dict, version: int) -> dict | None:
    """Changefeed topics are written only by table writes: Produce to one is refused with POLICY_VIOLATION
    (kcat: "Broker: Policy violation"; TOPIC_AUTHORIZATION_FAILED, as before, made librdkafka drop the
    topic's partitions first), and the server log says why, once a minute per topic."""
    def look() -> dict[str, Any]:
        return {t["name"]: conn.topics.resolve(t["name"], conn.role) for t in req["topic_data"]}

    found = await conn.blocking(look)
    answers = {}
    for name, (desc, err) in found.items():
        if desc is None:
            answers[name] = (err, None)
            continue
        message = (f"changefeed topic {desc.kafka_name} is read-only: it is written by writes to its table "
                   f"{desc.keyspace}.{desc.table}")
        answers[name] = (E.POLICY_VIOLATION, message)
        conn.broker.failures.warning(f"produce {desc.path}", "refusing Produce to %s from %s (client %s): %s",
                                     name, conn.peer_host, conn.client_id, message)
    if req["acks"] == 0:
        return None
    return {"responses": [
        {"name": t["name"], "partition_responses": [
            {"index": p["index"], "error_code": answers[t["name"]][0], "base_offset": -1,
             "error_message": answers[t["name"]][1]}
            for p in t["partition_data"]]} for t in req["topic_data"]]}


# -- groups ------------------------------------------------------------------

async def join_group(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """JoinGroup; with auth, READ on the group with the member's subscriptions (acl)."""
    access = conn.broker.access
    subscribed: tuple[TopicRef, ...] = ()
    durable: tuple[TopicRef, ...] | None = None
    if access.enabled:
        group = req["group_id"]
        names = subscription_topics(req["protocol_type"], [(p["name"], p["metadata"]) for p in req["protocols"]])
        if names is None:
            conn.broker.failures.info("join not consumer", "JoinGroup for group %s from %s refused: with "
                                      "authentication only consumer groups (protocol type 'consumer', whose "
                                      "subscriptions name their topics) are served", group, conn.peer_host)
            return {"error_code": E.INCONSISTENT_GROUP_PROTOCOL, "member_id": req["member_id"]}
        subscribed, durable = await conn.blocking(lambda: (conn.topics.refs(names), access.durable(group)))
        err = access.join_error(conn.role, group, req["member_id"], subscribed, durable)
        if err:
            return {"error_code": err, "member_id": req["member_id"]}
    answer = await conn.broker.coordinator.join(req, version, conn.client_id or "", conn.peer_host, conn.role,
                                                subscribed, durable)
    if answer.get("error_code") == E.NONE:  # v7+ tells the member the group's protocol type
        answer["protocol_type"] = req["protocol_type"]
    return answer


async def sync_group(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """SyncGroup; v5 names the protocol type and name, which must be the group's (Kafka answers
    INCONSISTENT_GROUP_PROTOCOL otherwise) and are given back; with auth, READ on the group as its member."""
    err = conn.broker.access.member_request_error(conn.role, req["group_id"], req["member_id"])
    if err:
        return {"error_code": err, "assignment": b""}
    g = conn.broker.coordinator.groups.get(req["group_id"])
    if g is not None and g.protocol is not None and (
            req["protocol_type"] not in (None, g.protocol_type) or req["protocol_name"] not in (None, g.protocol)):
        return {"error_code": E.INCONSISTENT_GROUP_PROTOCOL}
    answer = await conn.broker.coordinator.sync(req)
    if answer.get("error_code") == E.NONE and g is not None:
        answer = dict(answer, protocol_type=g.protocol_type, protocol_name=g.protocol)
    return answer


def heartbeat(conn: "KafkaConnection", req: dict, version: int) -> dict:
    err = conn.broker.access.member_request_error(conn.role, req["group_id"], req["member_id"])
    return {"error_code": err or conn.broker.coordinator.heartbeat(req)}


def leave_group(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """v0-2: one member; v3+ (KIP-345): several, each by member id or by its group.instance.id, each answered;
    with auth, READ on the group, and each member only by the role that joined as it (acl)."""
    access = conn.broker.access
    group = req["group_id"]
    if version < 3:
        err = access.member_request_error(conn.role, group, req["member_id"])
        return {"error_code": err or conn.broker.coordinator.leave(group, req["member_id"])}
    if access.enabled and not access.may_describe(conn.role, access.in_memory(group)):
        return {"error_code": E.GROUP_AUTHORIZATION_FAILED, "members": []}
    g = conn.broker.coordinator.groups.get(group)
    out = []
    for m in req["members"]:
        member_id = m["member_id"]
        if not member_id and m["group_instance_id"] is not None and g is not None:
            member_id = next((x.member_id for x in g.members.values()
                              if x.group_instance_id == m["group_instance_id"]), "")
        err = access.member_error(conn.role, group, member_id)
        out.append({"member_id": m["member_id"], "group_instance_id": m["group_instance_id"],
                    "error_code": err or conn.broker.coordinator.leave(group, member_id)})
    return {"error_code": E.NONE, "members": out}


async def offset_commit(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """Commit to the changefeed consumer named after the group, created on first use when the role may
    (ALTER on the table, as ALTER TOPIC ... ADD CONSUMER; anyone without auth)."""
    group, member = req["group_id"], req["member_id"]
    access = conn.broker.access
    durable: tuple[TopicRef, ...] = ()
    state_err = E.NONE
    if access.enabled:  # a running group's consumers are known from its last join: no scan of every topic
        known = access.joined_durable(group)
        durable = known if known is not None else await conn.blocking(access.durable, group)
        state_err = access.group_error(conn.role, group, durable) or access.member_error(conn.role, group, member)
    state_err = state_err or conn.broker.coordinator.check_commit(group, req["generation_id_or_member_epoch"], member)
    consumer_of = {r.path for r in durable}

    def commit_topic(t: dict) -> list[dict]:
        def answer(errors: dict[int, int]) -> list[dict]:
            return [{"partition_index": p["partition_index"], "error_code": errors.get(p["partition_index"], E.NONE)}
                    for p in t["partitions"]]

        desc, err = (None, state_err) if state_err else conn.topics.resolve(t["name"], conn.role)
        if desc is None:
            return answer({p["partition_index"]: err for p in t["partitions"]})
        bounds = {p.partition for p in conn.topics.reader.partitions(desc.path)}
        errors = {p["partition_index"]: E.UNKNOWN_TOPIC_OR_PARTITION for p in t["partitions"]
                  if p["partition_index"] not in bounds}
        offsets = {p["partition_index"]: p["committed_offset"] for p in t["partitions"]
                   if p["partition_index"] in bounds}
        may_create = not access.enabled or access.may_create_consumer(conn.role, TopicRef.of(desc))
        if access.enabled and not may_create and desc.path not in consumer_of and \
                not conn.topics.has_consumer(desc.path, group):
            log.info("offset commit of group %s to %s refused: the changefeed has no consumer %s and role %s may "
                     "not create one (ALTER on %s.%s)", group, desc.path, group, conn.role, desc.keyspace, desc.table)
            return answer({p: E.GROUP_AUTHORIZATION_FAILED for p in offsets} | errors)
        def damaged(e: CorruptRecord) -> list[dict]:  # the group's stored state does not verify: nothing is written
            conn.broker.damage_log.error(f"{desc.path} {group}", "OffsetCommit of group %s on %s answered "
                                         "CORRUPT_MESSAGE: %s", group, desc.path, e)
            return answer({p: E.CORRUPT_MESSAGE for p in offsets} | errors)

        try:
            if may_create:
                conn.topics.ensure_consumer(desc.path, group)
        except CorruptRecord as e:
            return damaged(e)
        except InvalidRequest as e:
            log.info("group %s cannot be a consumer of %s: %s", group, desc.path, e)
            return answer({p: E.INVALID_GROUP_ID for p in offsets} | errors)
        try:
            conn.topics.commit(desc.path, group, offsets, create=may_create)
        except CorruptRecord as e:
            return damaged(e)
        except UnknownConsumer:  # dropped since it was looked up, and the role may not create it again
            return answer({p: E.GROUP_AUTHORIZATION_FAILED for p in offsets} | errors)
        except InvalidRequest as e:
            log.warning("offset commit of group %s to %s refused: %s", group, desc.path, e)
            return answer({p: E.UNKNOWN_SERVER_ERROR for p in offsets} | errors)
        return answer(errors)

    def commit() -> list[dict]:
        # a topic named several times is committed once, with all its partitions (the last offset of one wins)
        merged: dict[str, dict] = {}
        for t in req["topics"]:
            merged.setdefault(t["name"], {"name": t["name"], "partitions": []})["partitions"].extend(t["partitions"])
        errors = {name: {p["partition_index"]: p["error_code"] for p in commit_topic(t)} for name, t in merged.items()}
        return [{"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": errors[t["name"]][p["partition_index"]]}
            for p in t["partitions"]]} for t in req["topics"]]

    return {"topics": await conn.blocking(commit)}


async def offset_fetch(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """The committed offsets of one group (v0-7) or of several (v8+, KIP-709); with auth, DESCRIBE on each group
    (acl), and a missing consumer is created only when the role may, else the group has no offsets there (-1)."""
    access = conn.broker.access
    groups = ([(req["group_id"], req["topics"])] if version < 8
              else [(g["group_id"], g["topics"]) for g in req["groups"]])
    consumers: dict[str, list[TopicRef]] = {}
    if access.enabled:  # one read of the consumers answers every group
        consumers = await conn.blocking(conn.topics.consumers_by_name)
    answers = []
    for group, topics in groups:
        err = access.group_error(conn.role, group, consumers.get(group, ()))
        if err:
            answers.append((err, [{"name": t["name"], "partitions": [
                {"partition_index": p, "committed_offset": -1, "error_code": err} for p in t["partition_indexes"]]}
                for t in topics or []]))
        else:
            answers.append((E.NONE, await conn.blocking(_group_offsets, conn, group, topics)))
    if version < 8:
        return {"error_code": answers[0][0], "topics": answers[0][1]}
    return {"groups": [{"group_id": group, "error_code": err, "topics": topics}
                       for (group, _), (err, topics) in zip(groups, answers)]}


def _group_offsets(conn: "KafkaConnection", group: str, wanted: list[dict] | None) -> list[dict]:
    """A group's committed offsets on the topics asked (None: every topic it has offsets on)."""
    access = conn.broker.access
    if wanted is None:  # every topic the group has offsets on
        out = []
        for d in conn.topics.visible(conn.role):
            try:
                if not conn.topics.is_consumer(d.path, group):
                    continue
                parts = [{"partition_index": p, "committed_offset": o}
                         for p, o in sorted(conn.topics.committed(d.path, group).items())]
            except CorruptRecord as e:  # the group's offsets there do not verify: every partition says so
                conn.broker.damage_log.error(f"{d.path} {group}", "OffsetFetch of group %s on %s answered "
                                             "CORRUPT_MESSAGE: %s", group, d.path, e)
                parts = [{"partition_index": p, "committed_offset": -1, "error_code": E.CORRUPT_MESSAGE}
                         for p in range(d.partitions)]
            out.append({"name": d.kafka_name, "partitions": parts})
        return out
    out = []
    looked: dict[str, tuple[dict[int, int], int]] = {}  # each topic a request names is read once
    for t in wanted:
        if t["name"] not in looked:
            desc, err = conn.topics.resolve(t["name"], conn.role)
            committed: dict[int, int] = {}
            if desc is not None:
                create = not access.enabled or access.may_create_consumer(conn.role, TopicRef.of(desc))
                try:
                    committed = conn.topics.committed(desc.path, group, create=create)
                except InvalidRequest as e:
                    log.info("offsets of group %s on %s: %s", group, desc.path, e)
                    err = E.INVALID_GROUP_ID
                except CorruptRecord as e:  # a committed offset that does not verify is never answered
                    conn.broker.damage_log.error(f"{desc.path} {group}", "OffsetFetch of group %s on %s answered "
                                                 "CORRUPT_MESSAGE: %s", group, desc.path, e)
                    err = E.CORRUPT_MESSAGE
            looked[t["name"]] = committed, err
        committed, err = looked[t["name"]]
        out.append({"name": t["name"], "partitions": [
            {"partition_index": p, "committed_offset": committed.get(p, -1), "error_code": err}
            for p in t["partition_indexes"]]})
    return out


async def describe_groups(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """Groups in memory as they are; a changefeed consumer without members (made over CQL, the CLI or by
    earlier commits) as Kafka shows a group with committed offsets and no members: Empty; others Dead.
    With auth, each group needs DESCRIBE (acl)."""
    access = conn.broker.access
    consumers = await conn.blocking(conn.topics.consumers_by_name)
    operations = GROUP_OPERATIONS if req["include_authorized_operations"] else UNKNOWN_OPERATIONS
    out = []
    for gid in req["groups"]:
        err = access.group_error(conn.role, gid, consumers.get(gid, ()))
        g = conn.broker.coordinator.groups.get(gid)
        if err:
            out.append({"error_code": err, "group_id": gid, "group_state": "", "members": [],
                        "authorized_operations": UNKNOWN_OPERATIONS})
        elif g is not None:
            out.append({"error_code": E.NONE, "group_id": gid, "group_state": g.state,
                        "protocol_type": g.protocol_type or "", "protocol_data": g.protocol or "",
                        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                     "client_id": m.client_id, "client_host": m.client_host,
                                     "member_metadata": m.metadata(g.protocol or ""),
                                     "member_assignment": m.assignment} for m in g.members.values()],
                        "authorized_operations": operations})
        elif gid in consumers:
            out.append({"error_code": E.NONE, "group_id": gid, "group_state": EMPTY,
                        "protocol_type": CONSUMER_PROTOCOL, "protocol_data": "", "members": [],
                        "authorized_operations": operations})
        else:
            out.append({"error_code": E.NONE, "group_id": gid, "group_state": "Dead", "members": [],
                        "authorized_operations": operations})
    return {"groups": out}


GROUP_OPERATIONS = (1 << 3) | (1 << 8)  # Kafka AclOperation bits READ, DESCRIBE (no DELETE: DeleteGroups is not served)


async def list_groups(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """The groups in memory and every changefeed consumer (state Empty when not in memory), those the role may
    DESCRIBE (acl); with state (v4+) and type (v5+: "classic", the only one logtide runs); v4+ filters by
    state and v5+ by type, both without regard to case, as Kafka does."""
    access = conn.broker.access
    consumers = await conn.blocking(conn.topics.consumers_by_name)
    found = {name: (CONSUMER_PROTOCOL, EMPTY) for name in consumers}
    found.update({g.group_id: (g.protocol_type or CONSUMER_PROTOCOL, g.state)
                  for g in conn.broker.coordinator.groups.values()})
    states = {s.lower() for s in req["states_filter"]}
    types = {t.lower() for t in req["types_filter"]}
    return {"error_code": E.NONE, "groups": [
        {"group_id": name, "protocol_type": kind, "group_state": state, "group_type": "classic"}
        for name, (kind, state) in sorted(found.items())
        if (not states or state.lower() in states) and (not types or "classic" in types)
        and not access.group_error(conn.role, name, consumers.get(name, ()))]}


HANDLERS: dict[int, Callable[..., Any]] = {
    0: produce, 1: fetch, 2: list_offsets, 3: metadata, 8: offset_commit, 9: offset_fetch, 10: find_coordinator,
    11: join_group, 12: heartbeat, 13: leave_group, 14: sync_group, 15: describe_groups, 16: list_groups,
    18: api_versions, 32: describe_configs, 60: describe_cluster,
}
