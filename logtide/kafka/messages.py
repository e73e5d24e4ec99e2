"""The schema table of every API the broker serves (Kafka's ``clients/src/main/resources/common/message``).

Versions served are chosen so that kafka-python 3, aiokafka, librdkafka
(confluent-kafka, kcat) all find one they speak; only ApiVersions v3 is a
flexible version.  ``APIS`` maps an API key to its generated classes.
"""

from __future__ import annotations

from .schema import Api, F, generate

NEVER = 99  # flexible_from for APIs served only in non-flexible versions

_PRODUCE = generate(0, "Produce", (3, 8), NEVER, [
    F("transactional_id", "nstring"), F("acks", "int16"), F("timeout_ms", "int32"),
    F("topic_data", [F("name", "string"), F("partition_data", [F("index", "int32"), F("records", "nbytes")])]),
], [
    F("responses", [F("name", "string"), F("partition_responses", [
        F("index", "int32"), F("error_code", "int16"), F("base_offset", "int64", default=-1),
        F("log_append_time_ms", "int64", "2+", default=-1), F("log_start_offset", "int64", "5+", default=-1),
        F("record_errors", [F("batch_index", "int32"), F("batch_index_error_message", "nstring")], "8+"),
        F("error_message", "nstring", "8+")])]),
    F("throttle_time_ms", "int32", "1+"),
])

_FETCH = generate(1, "Fetch", (4, 11), NEVER, [
    F("replica_id", "int32"), F("max_wait_ms", "int32"), F("min_bytes", "int32"), F("max_bytes", "int32", "3+"),
    F("isolation_level", "int8", "4+"), F("session_id", "int32", "7+"), F("session_epoch", "int32", "7+"),
    F("topics", [F("topic", "string"), F("partitions", [
        F("partition", "int32"), F("current_leader_epoch", "int32", "9+"), F("fetch_offset", "int64"),
        F("log_start_offset", "int64", "5+"), F("partition_max_bytes", "int32")])]),
    F("forgotten_topics_data", [F("topic", "string"), F("partitions", ["int32"])], "7+"),
    F("rack_id", "string", "11+"),
], [
    F("throttle_time_ms", "int32", "1+"), F("error_code", "int16", "7+"), F("session_id", "int32", "7+"),
    F("responses", [F("topic", "string"), F("partitions", [
        F("partition_index", "int32"), F("error_code", "int16"), F("high_watermark", "int64", default=-1),
        F("last_stable_offset", "int64", "4+", default=-1), F("log_start_offset", "int64", "5+", default=-1),
        F("aborted_transactions", [F("producer_id", "int64"), F("first_offset", "int64")], "4+", nullable="4+"),
        F("preferred_read_replica", "int32", "11+", default=-1), F("records", "nbytes")])]),
])

_LIST_OFFSETS = generate(2, "ListOffsets", (0, 5), NEVER, [
    F("replica_id", "int32"), F("isolation_level", "int8", "2+"),
    F("topics", [F("name", "string"), F("partitions", [
        F("partition_index", "int32"), F("current_leader_epoch", "int32", "4+", default=-1),
        F("timestamp", "int64"), F("max_num_offsets", "int32", "0", default=1)])]),
], [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", [F("name", "string"), F("partitions", [
        F("partition_index", "int32"), F("error_code", "int16"), F("old_style_offsets", ["int64"], "0"),
        F("timestamp", "int64", "1+", default=-1), F("offset", "int64", "1+", default=-1),
        F("leader_epoch", "int32", "4+", default=-1)])]),
])

_METADATA = generate(3, "Metadata", (0, 8), NEVER, [
    F("topics", [F("name", "string")], nullable="1+"),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
    F("include_cluster_authorized_operations", "bool", "8+"),
    F("include_topic_authorized_operations", "bool", "8+"),
], [
    F("throttle_time_ms", "int32", "3+"),
    F("brokers", [F("node_id", "int32"), F("host", "string"), F("port", "int32"), F("rack", "nstring", "1+")]),
    F("cluster_id", "nstring", "2+"), F("controller_id", "int32", "1+", default=-1),
    F("topics", [F("error_code", "int16"), F("name", "string"), F("is_internal", "bool", "1+"),
                 F("partitions", [F("error_code", "int16"), F("partition_index", "int32"), F("leader_id", "int32"),
                                  F("leader_epoch", "int32", "7+", default=-1), F("replica_nodes", ["int32"]),
                                  F("isr_nodes", ["int32"]), F("offline_replicas", ["int32"], "5+")]),
                 F("topic_authorized_operations", "int32", "8+", default=-2147483648)]),
    F("cluster_authorized_operations", "int32", "8+", default=-2147483648),
])

_OFFSET_COMMIT = generate(8, "OffsetCommit", (0, 7), NEVER, [
    F("group_id", "string"), F("generation_id", "int32", "1+", default=-1), F("member_id", "string", "1+"),
    F("group_instance_id", "nstring", "7+"), F("retention_time_ms", "int64", "2-4", default=-1),
    F("topics", [F("name", "string"), F("partitions", [
        F("partition_index", "int32"), F("committed_offset", "int64"),
        F("committed_leader_epoch", "int32", "6+", default=-1), F("commit_timestamp", "int64", "1", default=-1),
        F("committed_metadata", "nstring")])]),
], [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", [F("name", "string"), F("partitions", [F("partition_index", "int32"), F("error_code", "int16")])]),
])

_OFFSET_FETCH = generate(9, "OffsetFetch", (0, 5), NEVER, [
    F("group_id", "string"),
    F("topics", [F("name", "string"), F("partition_indexes", ["int32"])], nullable="2+"),
], [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", [F("name", "string"), F("partitions", [
        F("partition_index", "int32"), F("committed_offset", "int64", default=-1),
        F("committed_leader_epoch", "int32", "5+", default=-1), F("metadata", "nstring", default=""),
        F("error_code", "int16")])]),
    F("error_code", "int16", "2+"),
])

_FIND_COORDINATOR = generate(10, "FindCoordinator", (0, 2), NEVER, [
    F("key", "string"), F("key_type", "int8", "1+"),
], [
    F("throttle_time_ms", "int32", "1+"), F("error_code", "int16"), F("error_message", "nstring", "1+"),
    F("node_id", "int32"), F("host", "string"), F("port", "int32"),
])

_JOIN_GROUP = generate(11, "JoinGroup", (0, 5), NEVER, [
    F("group_id", "string"), F("session_timeout_ms", "int32"), F("rebalance_timeout_ms", "int32", "1+", default=-1),
    F("member_id", "string"), F("group_instance_id", "nstring", "5+"), F("protocol_type", "string"),
    F("protocols", [F("name", "string"), F("metadata", "bytes")]),
], [
    F("throttle_time_ms", "int32", "2+"), F("error_code", "int16"), F("generation_id", "int32", default=-1),
    F("protocol_name", "string"), F("leader", "string"), F("member_id", "string"),
    F("members", [F("member_id", "string"), F("group_instance_id", "nstring", "5+"), F("metadata", "bytes")]),
])

_HEARTBEAT = generate(12, "Heartbeat", (0, 3), NEVER, [
    F("group_id", "string"), F("generation_id", "int32"), F("member_id", "string"),
    F("group_instance_id", "nstring", "3+"),
], [F("throttle_time_ms", "int32", "1+"), F("error_code", "int16")])

_LEAVE_GROUP = generate(13, "LeaveGroup", (0, 2), NEVER, [
    F("group_id", "string"), F("member_id", "string"),
], [F("throttle_time_ms", "int32", "1+"), F("error_code", "int16")])

_SYNC_GROUP = generate(14, "SyncGroup", (0, 3), NEVER, [
    F("group_id", "string"), F("generation_id", "int32"), F("member_id", "string"),
    F("group_instance_id", "nstring", "3+"),
    F("assignments", [F("member_id", "string"), F("assignment", "bytes")]),
], [F("throttle_time_ms", "int32", "1+"), F("error_code", "int16"), F("assignment", "bytes")])

_DESCRIBE_GROUPS = generate(15, "DescribeGroups", (0, 4), NEVER, [
    F("groups", ["string"]), F("include_authorized_operations", "bool", "3+"),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("groups", [F("error_code", "int16"), F("group_id", "string"), F("group_state", "string"),
                 F("protocol_type", "string"), F("protocol_data", "string"),
                 F("members", [F("member_id", "string"), F("group_instance_id", "nstring", "4+"),
                               F("client_id", "string"), F("client_host", "string"),
                               F("member_metadata", "bytes"), F("member_assignment", "bytes")]),
                 F("authorized_operations", "int32", "3+", default=-2147483648)]),
])

_LIST_GROUPS = generate(16, "ListGroups", (0, 2), NEVER, [], [
    F("throttle_time_ms", "int32", "1+"), F("error_code", "int16"),
    F("groups", [F("group_id", "string"), F("protocol_type", "string")]),
])

_SASL_HANDSHAKE = generate(17, "SaslHandshake", (0, 1), NEVER, [F("mechanism", "string")], [
    F("error_code", "int16"), F("mechanisms", ["string"]),
])

_API_VERSIONS = generate(18, "ApiVersions", (0, 3), 3, [
    F("client_software_name", "string", "3+"), F("client_software_version", "string", "3+"),
], [
    F("error_code", "int16"),
    F("api_keys", [F("api_key", "int16"), F("min_version", "int16"), F("max_version", "int16")]),
    F("throttle_time_ms", "int32", "1+"),
])

_SASL_AUTHENTICATE = generate(36, "SaslAuthenticate", (0, 1), NEVER, [F("auth_bytes", "bytes")], [
    F("error_code", "int16"), F("error_message", "nstring"), F("auth_bytes", "bytes"),
    F("session_lifetime_ms", "int64", "1+"),
])

APIS: dict[int, Api] = {api.key: api for api in (
    _PRODUCE, _FETCH, _LIST_OFFSETS, _METADATA, _OFFSET_COMMIT, _OFFSET_FETCH, _FIND_COORDINATOR, _JOIN_GROUP,
    _HEARTBEAT, _LEAVE_GROUP, _SYNC_GROUP, _DESCRIBE_GROUPS, _LIST_GROUPS, _SASL_HANDSHAKE, _API_VERSIONS,
    _SASL_AUTHENTICATE)}

API_VERSIONS = APIS[18]


def request_header_flexible(api_key: int, version: int) -> bool:
    """Whether a request uses header v2 (tagged fields after client_id)."""
    api = APIS.get(api_key)
    return api is not None and version >= api.flexible_from


def response_header_flexible(api_key: int, version: int) -> bool:
    """Response header v1 for flexible versions, except ApiVersions, which always answers with header v0."""
    return api_key != 18 and request_header_flexible(api_key, version)
