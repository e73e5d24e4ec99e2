"""The APIs the broker serves, each generated from Kafka's definitions for the versions it implements.

``SERVED`` names each API and the versions the broker implements, which is
what ApiVersions advertises: up to the newest version of the vendored
definitions (Apache Kafka 4.0's, ``definitions/README.md``), flexible
versions included, so that current clients (kafka-python 3, aiokafka,
librdkafka 2 in confluent-kafka and kcat, KafkaJS) use their newest versions
and older ones find theirs.  The lowest versions are where record batch v2
starts (Produce 3, Fetch 4); every other API is served from version 0.
``APIS`` maps an API key to its generated classes.
"""

from __future__ import annotations

from .schema import Api, generate, load

SERVED: dict[str, tuple[int, int]] = {
    "Produce": (3, 11),  # refused (changefeed topics are read-only), answered in every version
    "Fetch": (4, 17),  # 13+: topics by topic id (KIP-516)
    "ListOffsets": (0, 10),
    "Metadata": (0, 12),  # 10+: topic ids; 12: topics asked by id
    "OffsetCommit": (0, 9),
    "OffsetFetch": (0, 9),  # 8+: several groups in one request
    "FindCoordinator": (0, 6),  # 4+: several keys in one request
    "JoinGroup": (0, 9),
    "Heartbeat": (0, 4),
    "LeaveGroup": (0, 5),  # 3+: several members in one request
    "SyncGroup": (0, 5),
    "DescribeGroups": (0, 5),
    "ListGroups": (0, 5),
    "SaslHandshake": (0, 1),
    "ApiVersions": (0, 4),
    "DescribeConfigs": (0, 4),
    "SaslAuthenticate": (0, 2),
    "DescribeCluster": (0, 1),
}


def _generate() -> dict[int, Api]:
    apis = [generate(load(f"{name}Request"), load(f"{name}Response"), versions) for name, versions in SERVED.items()]
    return {api.key: api for api in sorted(apis, key=lambda a: a.key)}


APIS: dict[int, Api] = _generate()
API_VERSIONS = APIS[18]


def request_header_flexible(api_key: int, version: int) -> bool:
    """Whether a request uses header v2 (tagged fields after client_id): its version is a flexible one."""
    api = APIS.get(api_key)
    return api is not None and api.is_flexible(version)


def response_header_flexible(api_key: int, version: int) -> bool:
    """Response header v1 for flexible versions, except ApiVersions, which always answers with header v0
    (a client reads it before it knows which versions the broker speaks)."""
    return api_key != 18 and request_header_flexible(api_key, version)
