"""Each client speaks its newest protocol versions to the broker (docs/kafka.md "APIs and versions served").

A consumer group member of each client reads a changefeed while the broker
counts the (API, version) of every request it serves.  The floors below are
the versions each client used when this test was written (kafka-python 3.0,
confluent-kafka 2.16 with librdkafka 2.16, aiokafka 0.14, KafkaJS 2.2.4, kcat
1.7 with Debian's librdkafka 2.0): a client must use at least those, and one
version of each API (no falling back), so an older broker table or a
regression in the flexible versions shows here.  A newer client may go higher.
"""

from __future__ import annotations

import subprocess

import pytest

from logtide.kafka.messages import APIS

from .clients import GroupConsumer
from .conftest import kcat_path, wait_for
from .kafkajs import require_kafkajs

FLOORS = {
    "kafka-python": {"ApiVersions": 4, "Metadata": 12, "Fetch": 12, "ListOffsets": 10, "FindCoordinator": 6,
                     "JoinGroup": 7, "SyncGroup": 5, "Heartbeat": 4, "OffsetCommit": 8, "OffsetFetch": 8,
                     "LeaveGroup": 5},
    "confluent-kafka": {"ApiVersions": 3, "Metadata": 12, "Fetch": 16, "ListOffsets": 7, "FindCoordinator": 2,
                        "JoinGroup": 5, "SyncGroup": 3, "Heartbeat": 3, "OffsetCommit": 9, "OffsetFetch": 9,
                        "LeaveGroup": 1},
    "aiokafka": {"Metadata": 5, "Fetch": 11, "ListOffsets": 3, "FindCoordinator": 1, "JoinGroup": 5,
                 "SyncGroup": 3, "OffsetCommit": 3, "OffsetFetch": 3, "LeaveGroup": 1},
    "kafkajs": {"ApiVersions": 2, "Metadata": 6, "Fetch": 11, "ListOffsets": 3, "FindCoordinator": 2, "JoinGroup": 5,
                "SyncGroup": 3, "Heartbeat": 3, "OffsetCommit": 5, "OffsetFetch": 4, "LeaveGroup": 3},
    "kcat": {"ApiVersions": 3, "Metadata": 4, "Fetch": 11, "FindCoordinator": 2, "JoinGroup": 5, "SyncGroup": 3,
             "OffsetFetch": 7},
}


@pytest.mark.parametrize("client", sorted(FLOORS))
def test_each_client_uses_its_newest_versions_and_only_those(client, broker, changefeeds):
    if client == "kafkajs":
        require_kafkajs()
    feed = changefeeds.make("JSON", partitions=2)
    for i in range(10):
        feed.write(i)
    if client == "kcat":
        kcat_bin = kcat_path()
        if kcat_bin is None:
            pytest.skip("kcat is not installed and could not be (apt-get install kcat)")
        done = subprocess.run([kcat_bin, "-b", broker.bootstrap, "-G", "versions", feed.topic, "-e", "-q"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    else:
        member = GroupConsumer(client, broker.bootstrap, feed.topic, "versions").start()
        wait_for(lambda: len(member.records) >= 10, what="every record")
        member.stop()
    used: dict[str, set[int]] = {}
    for (key, version), _count in broker.broker.requests.items():
        used.setdefault(APIS[key].name, set()).add(version)
    assert {"Metadata", "Fetch", "FindCoordinator", "JoinGroup", "SyncGroup", "OffsetFetch"} <= used.keys()
    for api, floor in FLOORS[client].items():  # Heartbeat, LeaveGroup ...: when the run was long enough to send them
        if api in used:
            assert len(used[api]) == 1 and min(used[api]) >= floor, (client, api, used[api])
    by_name = {api.name: api for api in APIS.values()}
    flexible = {name for name, versions in used.items() if by_name[name].is_flexible(max(versions))}
    if client in ("kafka-python", "confluent-kafka"):  # current clients: the flexible versions of their reads
        assert {"Fetch", "Metadata", "ApiVersions", "OffsetCommit", "OffsetFetch"} <= flexible
