"""Golden requests: one request frame for every API version the broker serves, as readable hex under golden/.

``values(api, version)`` is what each request asks (a table of the tests:
the topic is the first changefeed the ``changefeeds`` fixture makes,
``ks.t0.feed``); ``frame`` encodes it with a request header (correlation id
7, client id ``golden``).  ``python -m tests.kafka.golden_requests`` writes
``golden/requests/<Api>_v<N>.txt`` afresh (after a version is added to
``logtide.kafka.messages.SERVED``); tests/kafka/test_golden_requests.py checks
that the files are exactly the versions served, that logtide's encoder and
kafka-python's (an independent one) both write those bytes, and that the
broker answers each with a well-formed response.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

from logtide.kafka.codec import ZERO_UUID
from logtide.kafka.messages import APIS
from logtide.kafka.records import Record, encode_batch

from .rawclient import request_frame

GOLDEN = Path(__file__).parent / "golden" / "requests"
TOPIC = "ks.t0.feed"
CORRELATION_ID = 7
CLIENT_ID = "golden"
UNKNOWN_TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")  # Fetch 13+ names topics by id: none has this


def values(api: str, version: int) -> dict[str, Any]:
    """The request of ``api`` (its name in messages.SERVED) in ``version``: fields a version lacks are left out
    when it is encoded."""
    group = f"golden-{api.lower()}-v{version}"
    partitions = [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "commit_timestamp": -1,
                   "committed_metadata": "", "current_leader_epoch": -1, "timestamp": -1, "max_num_offsets": 1}]
    table: dict[str, dict[str, Any]] = {
        "Produce": {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": TOPIC, "partition_data": [{"index": 0, "records": encode_batch(
                [Record(0, 1_700_000_000_000, b"k", b'{"produced":true}')])}]}]},
        "Fetch": {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                  "session_id": 0, "session_epoch": -1, "topics": [{"topic": TOPIC, "topic_id": UNKNOWN_TOPIC_ID,
                  "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                  "last_fetched_epoch": -1, "log_start_offset": -1,
                                  "partition_max_bytes": 1 << 20}]}],
                  "forgotten_topics_data": [], "rack_id": ""},
        "ListOffsets": {"replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": partitions}],
                        "timeout_ms": 1000},
        "Metadata": {"topics": [{"name": TOPIC, "topic_id": ZERO_UUID}], "allow_auto_topic_creation": False,
                     "include_cluster_authorized_operations": False, "include_topic_authorized_operations": True},
        "OffsetCommit": {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                         "group_instance_id": None, "retention_time_ms": -1,
                         "topics": [{"name": TOPIC, "partitions": partitions}]},
        "OffsetFetch": {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                        "groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                                    "topics": [{"name": TOPIC, "partition_indexes": [0]}]}], "require_stable": False},
        "FindCoordinator": {"key": group, "key_type": 0, "coordinator_keys": [group]},
        "JoinGroup": {"group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": "",
                      "group_instance_id": None, "protocol_type": "consumer",
                      "protocols": [{"name": "range", "metadata": b"\x00\x01\x00\x00\x00\x00"}], "reason": None},
        "Heartbeat": {"group_id": group, "generation_id": 1, "member_id": "nobody", "group_instance_id": None},
        "LeaveGroup": {"group_id": group, "member_id": "nobody",
                       "members": [{"member_id": "nobody", "group_instance_id": None, "reason": None}]},
        "SyncGroup": {"group_id": group, "generation_id": 1, "member_id": "nobody", "group_instance_id": None,
                      "protocol_type": "consumer", "protocol_name": "range", "assignments": []},
        "DescribeGroups": {"groups": [group], "include_authorized_operations": True},
        "ListGroups": {"states_filter": [], "types_filter": []},
        "SaslHandshake": {"mechanism": "PLAIN"},
        "ApiVersions": {"client_software_name": "logtide-golden", "client_software_version": "1.0"},
        "DescribeConfigs": {"resources": [{"resource_type": 2, "resource_name": TOPIC, "configuration_keys": None}],
                            "include_synonyms": True, "include_documentation": True},
        "SaslAuthenticate": {"auth_bytes": b"\x00golden\x00golden password"},
        "DescribeCluster": {"include_cluster_authorized_operations": True, "endpoint_type": 1},
    }
    return table[api]


def frame(api_key: int, version: int, body: dict[str, Any]) -> bytes:
    """A request frame without its 4-byte length: header v1 (v2 in flexible versions), then the body."""
    return request_frame(api_key, version, body, CORRELATION_ID, CLIENT_ID)[4:]


def served() -> list[tuple[str, int, int]]:
    """(API name, key, version) of every version served."""
    return [(api.name, api.key, v) for api in APIS.values() for v in range(api.min_version, api.max_version + 1)]


def path(api: str, version: int) -> Path:
    return GOLDEN / f"{api}_v{version}.txt"


def hexdump(data: bytes) -> str:
    """16 bytes a line: offset, hex (a gap after 8), the printable ASCII."""
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off:off + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk[:8]) + "  " + " ".join(f"{b:02x}" for b in chunk[8:])
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:04x}  {hexes:<49}  {text}")
    return "\n".join(lines)


def golden_text(api: str, key: int, version: int) -> str:
    flexible = APIS[key].is_flexible(version)
    head = (f"# {api} v{version} (API key {key}): a request frame without its 4-byte length, request header "
            f"v{2 if flexible else 1}, {'flexible' if flexible else 'non-flexible'} body\n"
            f"# written by `python -m tests.kafka.golden_requests` from tests/kafka/golden_requests.py values()\n")
    return head + hexdump(frame(key, version, values(api, version))) + "\n"


def read_golden(file: Path) -> bytes:
    """The bytes of a golden file (comment lines skipped; the hex columns of each line)."""
    out = bytearray()
    for line in file.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        out += bytes.fromhex(line[6:55])
    return bytes(out)


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for old in GOLDEN.glob("*.txt"):
        old.unlink()
    for api, key, version in served():
        path(api, version).write_text(golden_text(api, key, version))
    print(f"wrote {len(served())} golden requests to {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    main()
