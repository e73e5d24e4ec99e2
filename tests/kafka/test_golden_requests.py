"""Every (API, version) the broker advertises in ApiVersions gets a golden request and a well-formed answer.

The requests are the hex files of golden/requests/ (tests/kafka/golden_requests.py
makes them).  Each is checked three ways: logtide's classes generated from
Kafka's definitions encode exactly those bytes; kafka-python's classes (their
own code, their own copy of the definitions) encode them too wherever
kafka-python defines the version; and a broker serving a real changefeed
answers each on a fresh connection with a response that decodes to its last
byte, decodes alike with kafka-python, and says what the API should.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any, Callable

import pytest

from logtide.kafka import BackgroundKafka, KafkaConfig
from logtide.kafka import errors as E
from logtide.kafka.codec import ZERO_UUID, Reader
from logtide.kafka.messages import APIS, response_header_flexible
from logtide.kafka.records import decode_batches

from . import kafka_python as KP
from .conftest import CqlChangefeeds
from .golden_requests import CORRELATION_ID, GOLDEN, TOPIC, frame, path, read_golden, served, values

SERVED = served()
IDS = [f"{api}_v{v}" for api, _, v in SERVED]


@pytest.fixture(scope="module")
def golden_broker(tmp_path_factory):
    """A broker over one real changefeed, ks.t0.feed (1 partition, rows 0-2); groups complete at once."""
    feeds = CqlChangefeeds(tmp_path_factory.mktemp("golden") / "data")
    feed = feeds.make("JSON", partitions=1)
    assert feed.topic == TOPIC
    for i in range(3):
        feed.write(i)
    with BackgroundKafka(feeds.reader, KafkaConfig(port=0)) as b:
        b.broker.coordinator.initial_delay = 0
        yield b
    feeds.close()


def test_the_golden_requests_are_exactly_the_versions_apiversions_advertises(golden_broker):
    host, port = golden_broker.broker.advertised
    answer = exchange(host, port, [frame(18, 0, {})])[-1]
    r = Reader(answer)
    assert r.int32() == CORRELATION_ID
    advertised = APIS[18].responses[0].decode(r)["api_keys"]
    expected = {(a["api_key"], v) for a in advertised for v in range(a["min_version"], a["max_version"] + 1)}
    assert {(key, v) for _, key, v in SERVED} == expected
    assert sorted(p.name for p in GOLDEN.glob("*.txt")) == sorted(f"{i}.txt" for i in IDS)


@pytest.mark.parametrize("api, key, version", SERVED, ids=IDS)
def test_logtide_and_kafka_python_encode_the_golden_bytes(api, key, version):
    golden = read_golden(path(api, version))
    assert frame(key, version, values(api, version)) == golden
    if KP.knows(key, "request", version):
        assert golden[header_size(key, version):] == KP.encode_request(key, version, values(api, version))


def header_size(key: int, version: int) -> int:
    """api key, version, correlation id, client id "golden", and a tagged-field count in header v2."""
    return 2 + 2 + 4 + 2 + len("golden") + (1 if APIS[key].is_flexible(version) else 0)


@pytest.mark.parametrize("api, key, version", SERVED, ids=IDS)
def test_each_golden_request_gets_a_well_formed_answer(golden_broker, api, key, version):
    host, port = golden_broker.broker.advertised
    request = read_golden(path(api, version))
    frames = [request]
    if key == 36:  # SaslAuthenticate follows a SaslHandshake v1 (PLAIN: any login, the endpoint is open)
        frames = [frame(17, 1, {"mechanism": "PLAIN"}), request]
    data = exchange(host, port, frames)[-1]
    r = Reader(data)
    assert r.int32() == CORRELATION_ID
    if response_header_flexible(key, version):
        r.skip_tagged_fields()
    body_start = r.pos
    answer = APIS[key].responses[version].decode(r)
    assert r.remaining() == 0, f"{r.remaining()} bytes after the {api} v{version} response"
    if KP.knows(key, "response", version):
        assert_same(KP.decode_response(key, version, data[body_start:]), answer)
    CHECKS[api](answer, version)


def exchange(host: str, port: int, frames: list[bytes]) -> list[bytes]:
    """Send each frame on one new connection and read one answer to each."""
    with socket.create_connection((host, port), timeout=30) as s:
        out = []
        for f in frames:
            s.sendall(struct.pack(">i", len(f)) + f)
            size = struct.unpack(">i", recv(s, 4))[0]
            out.append(recv(s, size))
        return out


def recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "the broker closed the connection"
        buf += chunk
    return bytes(buf)


def assert_same(theirs: Any, ours: Any, where: str = "") -> None:
    """kafka-python's values equal ours wherever both have the field."""
    if isinstance(theirs, dict):
        for k, v in theirs.items():
            if k in ours:
                assert_same(v, ours[k], f"{where}.{k}")
    elif isinstance(theirs, list) and theirs and isinstance(theirs[0], dict):
        assert len(theirs) == len(ours), where
        for i, (a, b) in enumerate(zip(theirs, ours)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        if isinstance(theirs, set) and isinstance(ours, int):  # kafka-python gives an operations bitfield as a set
            ours = {bit for bit in range(32) if ours >> bit & 1}
        assert theirs == ours, f"{where}: kafka-python {theirs!r}, logtide {ours!r}"


# -- what each API's answer should say ---------------------------------------------------------------------

def check_produce(a: dict, v: int) -> None:
    part = a["responses"][0]["partition_responses"][0]
    assert a["responses"][0]["name"] == TOPIC and part["error_code"] != E.NONE  # refused: read-only topics


def check_fetch(a: dict, v: int) -> None:
    part = a["responses"][0]["partitions"][0]
    if v >= 13:  # topics by id: the golden id names no topic
        assert part["error_code"] == E.UNKNOWN_TOPIC_ID
        return
    assert part["error_code"] == E.NONE and part["high_watermark"] == 3
    records = decode_batches(part["records"])
    assert [json.loads(x.value)["key"] for x in records] == [[0], [1], [2]]
    assert [x.key for x in records] == [b"[0]", b"[1]", b"[2]"]


def check_list_offsets(a: dict, v: int) -> None:
    part = a["topics"][0]["partitions"][0]
    assert part["error_code"] == E.NONE
    assert (part["old_style_offsets"] if v == 0 else [part["offset"]]) == [3]


def check_metadata(a: dict, v: int) -> None:
    topic = a["topics"][0]
    assert (topic["name"], topic["error_code"], len(topic["partitions"])) == (TOPIC, E.NONE, 1)
    assert a["brokers"][0]["node_id"] == 0
    if v >= 10:
        assert topic["topic_id"] != ZERO_UUID
    if v >= 8:
        assert topic["topic_authorized_operations"] > 0


def check_offset_commit(a: dict, v: int) -> None:
    assert a["topics"][0]["partitions"][0]["error_code"] == E.NONE


def check_offset_fetch(a: dict, v: int) -> None:
    topics = a["groups"][0]["topics"] if v >= 8 else a["topics"]
    part = topics[0]["partitions"][0]
    assert (part["error_code"], part["committed_offset"]) == (E.NONE, -1)


def check_find_coordinator(a: dict, v: int) -> None:
    c = a["coordinators"][0] if v >= 4 else a
    assert (c["error_code"], c["node_id"]) == (E.NONE, 0)


def check_join_group(a: dict, v: int) -> None:
    if v >= 4:  # KIP-394: a first join gets a member id to join with
        assert a["error_code"] == E.MEMBER_ID_REQUIRED and a["member_id"]
        return
    assert a["error_code"] == E.NONE and a["generation_id"] >= 1 and a["leader"] == a["member_id"]
    assert [m["member_id"] for m in a["members"]] == [a["member_id"]]


def check_unknown_member(a: dict, v: int) -> None:
    assert a["error_code"] == E.UNKNOWN_MEMBER_ID


def check_leave_group(a: dict, v: int) -> None:
    if v >= 3:
        assert a["error_code"] == E.NONE and [m["error_code"] for m in a["members"]] == [E.UNKNOWN_MEMBER_ID]
    else:
        assert a["error_code"] == E.UNKNOWN_MEMBER_ID


def check_describe_groups(a: dict, v: int) -> None:
    assert [(g["group_id"], g["error_code"]) for g in a["groups"]] == [(f"golden-describegroups-v{v}", E.NONE)]


def check_list_groups(a: dict, v: int) -> None:
    assert a["error_code"] == E.NONE and isinstance(a["groups"], list)


def check_sasl_handshake(a: dict, v: int) -> None:
    assert a["error_code"] == E.NONE and "PLAIN" in a["mechanisms"] and "SCRAM-SHA-512" in a["mechanisms"]


def check_api_versions(a: dict, v: int) -> None:
    assert a["error_code"] == E.NONE
    assert {x["api_key"] for x in a["api_keys"]} == set(APIS)


def check_describe_configs(a: dict, v: int) -> None:
    result = a["results"][0]
    configs = {c["name"]: c for c in result["configs"]}
    assert result["error_code"] == E.NONE and configs["cleanup.policy"]["value"] == "delete"
    assert configs["logtide.table.schema"]["value"].startswith("CREATE TABLE ks.t0 (")


def check_sasl_authenticate(a: dict, v: int) -> None:
    assert a["error_code"] == E.NONE


def check_describe_cluster(a: dict, v: int) -> None:
    assert (a["error_code"], a["cluster_id"], [b["broker_id"] for b in a["brokers"]]) == (E.NONE, "logtide", [0])


CHECKS: dict[str, Callable[[dict, int], None]] = {
    "Produce": check_produce, "Fetch": check_fetch, "ListOffsets": check_list_offsets, "Metadata": check_metadata,
    "OffsetCommit": check_offset_commit, "OffsetFetch": check_offset_fetch, "FindCoordinator": check_find_coordinator,
    "JoinGroup": check_join_group, "Heartbeat": check_unknown_member, "LeaveGroup": check_leave_group,
    "SyncGroup": check_unknown_member, "DescribeGroups": check_describe_groups, "ListGroups": check_list_groups,
    "SaslHandshake": check_sasl_handshake, "ApiVersions": check_api_versions,
    "DescribeConfigs": check_describe_configs, "SaslAuthenticate": check_sasl_authenticate,
    "DescribeCluster": check_describe_cluster,
}
