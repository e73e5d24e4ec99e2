"""Consumer groups under ``--auth``: Kafka's group ACLs in CQL permissions (docs/kafka.md, "Authentication and
authorization").  Before, a role with SELECT on a table could list another role's group and member ids,
remove its member and overwrite its committed offset, and any role created durable consumers by committing.

Roles: ``app`` may SELECT and ALTER ks.t0 (it may create consumers of its changefeed), ``reader`` may only
SELECT ks.t0, ``other`` may only SELECT ks.t1.
"""

from __future__ import annotations

import struct

import pytest

from logtide import auth
from logtide.kafka import BackgroundKafka, KafkaConfig
from logtide.kafka import errors as E

from .conftest import wait_for
from .rawclient import RawClient

ADMIN, ADMIN_PW = "admin", "admin pw"


def subscription(*topics: str) -> bytes:
    """The consumer protocol's Subscription v0: version, topics, user data (null)."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


@pytest.fixture
def roles(changefeeds):
    """Feeds ks.t0 (3 records) and ks.t1, the three roles, and a broker requiring logins."""
    db = changefeeds.db
    manager = auth.attach(db, True, ADMIN, ADMIN_PW)
    t0, t1 = changefeeds.make("JSON", partitions=1), changefeeds.make("JSON", partitions=1)
    for i in range(3):
        t0.write(i)
    s = db.session()
    for name in ("app", "reader", "other"):
        s.execute(f"CREATE ROLE {name} WITH PASSWORD = '{name} pw' AND LOGIN = true")
    s.execute("GRANT SELECT ON ks.t0 TO app")
    s.execute("GRANT ALTER ON ks.t0 TO app")
    s.execute("GRANT SELECT ON ks.t0 TO reader")
    s.execute("GRANT SELECT ON ks.t1 TO other")
    with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0), manager) as b:
        b.feeds = (t0, t1)
        yield b


def login(broker: BackgroundKafka, role: str) -> RawClient:
    host, port = broker.broker.advertised
    c = RawClient(host, port)
    assert c.login(role, f"{role} pw")["error_code"] == E.NONE
    return c


def join(c: RawClient, group: str, topic: str, member_id: str = "") -> dict:
    """JoinGroup v5 (twice when the first answer is MEMBER_ID_REQUIRED)."""
    req = {"group_id": group, "session_timeout_ms": 30_000, "rebalance_timeout_ms": 30_000, "member_id": member_id,
           "group_instance_id": None, "protocol_type": "consumer",
           "protocols": [{"name": "range", "metadata": subscription(topic)}]}
    answer = c.request(11, 5, req)
    if answer["error_code"] == E.MEMBER_ID_REQUIRED:
        answer = c.request(11, 5, dict(req, member_id=answer["member_id"]))
    return answer


def start_member(c: RawClient, group: str, topic: str) -> dict:
    """Join, sync (the assignment is opaque to the broker) and commit offset 2: a running group."""
    j = join(c, group, topic)
    assert j["error_code"] == E.NONE, j
    sync = c.request(14, 3, {"group_id": group, "generation_id": j["generation_id"], "member_id": j["member_id"],
                             "group_instance_id": None,
                             "assignments": [{"member_id": j["member_id"], "assignment": b"p0"}]})
    assert sync["error_code"] == E.NONE
    assert commit(c, group, topic, 2, j["generation_id"], j["member_id"]) == E.NONE
    return j


def commit(c: RawClient, group: str, topic: str, offset: int, generation: int = -1, member: str = "") -> int:
    answer = c.request(8, 2, {"group_id": group, "generation_id_or_member_epoch": generation,
                              "member_id": member, "retention_time_ms": -1, "topics": [{"name": topic, "partitions": [
                                  {"partition_index": 0, "committed_offset": offset, "committed_metadata": None}]}]})
    return answer["topics"][0]["partitions"][0]["error_code"]


def fetched(c: RawClient, group: str, topic: str) -> tuple[int, int, int]:
    """OffsetFetch v5: (top-level error, partition error, committed offset)."""
    a = c.request(9, 5, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]})
    p = a["topics"][0]["partitions"][0]
    return a["error_code"], p["error_code"], p["committed_offset"]


def test_a_role_that_may_not_read_a_groups_topics_can_neither_see_nor_touch_the_group(roles, changefeeds):
    t0, t1 = roles.feeds
    app = login(roles, "app")
    j = start_member(app, "billing", t0.topic)
    other = login(roles, "other")
    assert [g["group_id"] for g in other.request(16, 2, {})["groups"]] == []
    assert "billing" in [g["group_id"] for g in app.request(16, 2, {})["groups"]]
    described = other.request(15, 4, {"groups": ["billing"], "include_authorized_operations": False})["groups"][0]
    assert (described["error_code"], described["members"]) == (E.GROUP_AUTHORIZATION_FAILED, [])
    assert other.request(10, 2, {"key": "billing", "key_type": 0})["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    assert join(other, "billing", t1.topic)["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    member = {"group_id": "billing", "generation_id": j["generation_id"], "member_id": j["member_id"],
              "group_instance_id": None}
    assert other.request(12, 3, member)["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    assert other.request(13, 2, {"group_id": "billing", "member_id": j["member_id"]})["error_code"] == \
        E.GROUP_AUTHORIZATION_FAILED
    assert commit(other, "billing", t1.topic, 0) == E.GROUP_AUTHORIZATION_FAILED
    assert commit(other, "billing", t0.topic, 0) == E.GROUP_AUTHORIZATION_FAILED
    assert fetched(other, "billing", t0.topic)[:2] == (E.GROUP_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED)
    # the group is untouched: its member heartbeats on, its offset is still 2, no consumer was made on t1
    assert app.request(12, 3, member)["error_code"] == E.NONE
    assert fetched(app, "billing", t0.topic) == (E.NONE, E.NONE, 2)
    assert [c.name for c in changefeeds.reader.consumers(t1.path)] == []
    for c in (app, other):
        c.close()


def test_a_member_is_acted_as_only_by_the_role_that_joined_as_it(roles):
    """``reader`` may read ks.t0, so it may see the group (Kafka's DESCRIBE) but not act as its member."""
    t0, _ = roles.feeds
    app = login(roles, "app")
    j = start_member(app, "billing", t0.topic)
    reader = login(roles, "reader")
    described = reader.request(15, 4, {"groups": ["billing"], "include_authorized_operations": True})["groups"][0]
    assert described["error_code"] == E.NONE and [m["member_id"] for m in described["members"]] == [j["member_id"]]
    assert described["authorized_operations"] == (1 << 3) | (1 << 8)  # READ and DESCRIBE; DeleteGroups not served
    member = {"group_id": "billing", "generation_id": j["generation_id"], "member_id": j["member_id"],
              "group_instance_id": None}
    assert reader.request(13, 2, {"group_id": "billing", "member_id": j["member_id"]})["error_code"] == \
        E.GROUP_AUTHORIZATION_FAILED
    assert reader.request(12, 3, member)["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    assert commit(reader, "billing", t0.topic, 0, j["generation_id"], j["member_id"]) == E.GROUP_AUTHORIZATION_FAILED
    assert commit(reader, "billing", t0.topic, 0) == E.ILLEGAL_GENERATION  # a simple commit to a running group
    assert app.request(12, 3, member)["error_code"] == E.NONE  # the member is still there
    assert fetched(reader, "billing", t0.topic) == (E.NONE, E.NONE, 2)
    for c in (app, reader):
        c.close()


def test_only_a_role_that_may_alter_the_table_creates_a_consumer(roles, changefeeds):
    """As ``ALTER TOPIC ... ADD CONSUMER``: committing, fetching offsets or joining as a group the changefeed
    has no consumer of needs ALTER on the table; once the consumer exists, SELECT is enough."""
    t0, _ = roles.feeds
    reader = login(roles, "reader")
    assert commit(reader, "fresh", t0.topic, 1) == E.GROUP_AUTHORIZATION_FAILED
    assert join(reader, "fresh", t0.topic)["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    assert fetched(reader, "fresh", t0.topic) == (E.NONE, E.NONE, -1)  # no offsets, and nothing created
    assert "fresh" not in [c.name for c in changefeeds.reader.consumers(t0.path)]
    changefeeds.session().execute(f"ALTER TOPIC \"{t0.path}\" ADD CONSUMER fresh")
    assert commit(reader, "fresh", t0.topic, 1) == E.NONE
    assert join(reader, "fresh", t0.topic)["error_code"] == E.NONE
    app = login(roles, "app")
    assert commit(app, "made-by-app", t0.topic, 3) == E.NONE  # app may ALTER: the consumer is created
    assert dict(changefeeds.reader.committed(t0.path, "made-by-app")) == {0: 3}
    for c in (app, reader):
        c.close()


def test_revoking_select_ends_a_members_access_at_its_next_heartbeat(roles, changefeeds):
    t0, _ = roles.feeds
    app = login(roles, "app")
    j = start_member(app, "billing", t0.topic)
    member = {"group_id": "billing", "generation_id": j["generation_id"], "member_id": j["member_id"],
              "group_instance_id": None}
    changefeeds.db.session().execute("REVOKE SELECT ON ks.t0 FROM app")
    assert app.request(12, 3, member)["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    app.close()


def test_kafka_clients_see_group_authorization_failed_and_work_once_the_consumer_exists(roles, changefeeds):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError
    t0, _ = roles.feeds

    def consumer(group: str) -> KafkaConsumer:
        return KafkaConsumer(t0.topic, bootstrap_servers=roles.bootstrap, group_id=group,
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="reader", sasl_plain_password="reader pw",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=300)
    c = consumer("reports")
    with pytest.raises(GroupAuthorizationFailedError):
        for _ in range(50):
            c.poll(200)
    c.close()
    changefeeds.session().execute(f"ALTER TOPIC \"{t0.path}\" ADD CONSUMER reports")
    c = consumer("reports")
    got: list[int] = []
    wait_for(lambda: got.extend(m.offset for ms in c.poll(200).values() for m in ms) or len(got) >= 3,
             what="the three records")
    c.commit()
    c.close()
    assert dict(changefeeds.reader.committed(t0.path, "reports")) == {0: 3}


def test_without_auth_every_group_is_open_and_consumers_are_made_on_first_use(broker, changefeeds):
    feed = changefeeds.make("JSON", partitions=1)
    c = RawClient(*broker.broker.advertised)
    assert commit(c, "anyone", feed.topic, 0) == E.NONE
    assert "anyone" in [x.name for x in changefeeds.reader.consumers(feed.path)]
    assert join(c, "anyone", feed.topic)["error_code"] == E.NONE
    c.close()


def test_the_group_rules_hold_for_each_key_group_and_member_a_batched_request_names(roles):
    """FindCoordinator v4+ (several keys), OffsetFetch v8+ (several groups) and LeaveGroup v3+ (several members)
    are checked per key, group and member, as their single-name versions are."""
    t0, _ = roles.feeds
    app = login(roles, "app")
    j = start_member(app, "billing", t0.topic)
    other, reader = login(roles, "other"), login(roles, "reader")
    coordinators = other.request(10, 4, {"key_type": 0, "coordinator_keys": ["billing", "fresh"]})["coordinators"]
    assert [(c["key"], c["error_code"]) for c in coordinators] == [("billing", E.GROUP_AUTHORIZATION_FAILED),
                                                                   ("fresh", E.NONE)]
    wanted = [{"name": t0.topic, "partition_indexes": [0]}]
    req = {"groups": [{"group_id": "billing", "topics": wanted}, {"group_id": "fresh", "topics": None}],
           "require_stable": False}
    groups = other.request(9, 8, req)["groups"]
    assert [(g["group_id"], g["error_code"]) for g in groups] == [("billing", E.GROUP_AUTHORIZATION_FAILED),
                                                                  ("fresh", E.NONE)]
    assert groups[0]["topics"][0]["partitions"][0]["committed_offset"] == -1  # nothing of billing's is shown
    groups = reader.request(9, 8, req)["groups"]
    assert groups[0]["error_code"] == E.NONE and groups[0]["topics"][0]["partitions"][0]["committed_offset"] == 2
    leave = {"group_id": "billing", "members": [{"member_id": j["member_id"], "group_instance_id": None}]}
    assert other.request(13, 3, leave)["error_code"] == E.GROUP_AUTHORIZATION_FAILED
    answer = reader.request(13, 3, leave)
    assert (answer["error_code"], answer["members"][0]["error_code"]) == (E.NONE, E.GROUP_AUTHORIZATION_FAILED)
    answer = app.request(13, 3, leave)
    assert (answer["error_code"], answer["members"][0]["error_code"]) == (E.NONE, E.NONE)
    for c in (app, other, reader):
        c.close()
