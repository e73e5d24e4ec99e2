"""Kafka's admin reads: DescribeConfigs of changefeed topics and DescribeCluster (KIP-700).

A topic's configs are what a Kafka tool expects of a topic (``cleanup.policy``,
``retention.ms``, ...) and, under ``logtide.*``, what a reader needs to
understand its records without a CQL connection: the changefeed's mode,
format and partitions, and ``logtide.table.schema``, the table's CREATE TABLE
text (after the CREATE TYPE statements of the user types it uses), as
``DESCRIBE TABLE`` prints it.  Every entry is read-only: configs change only
through CQL (``ALTER TABLE ... ALTER CHANGEFEED``).  docs/kafka.md lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from logtide.changefeed.api import TopicDescription
from logtide.schema.changefeed_options import DEFAULT_RETENTION_SECONDS
from logtide.errors import InvalidRequest
from logtide.schema import types as T
from logtide.schema.describe import describe_table, describe_type
from logtide.schema.model import Table, UserTypeDef

from . import errors as E

KafkaConnection = Any  # the connection.KafkaConnection a request came on (it imports handlers, which import this)

CLUSTER_ID = "logtide"
NODE_ID = 0
UNKNOWN_OPERATIONS = -2147483648  # Kafka's "not asked for" authorized operations
# Kafka AclOperation bits: what a role that may read a changefeed topic may do with it (READ 3, DESCRIBE 8,
# DESCRIBE_CONFIGS 10), and with the cluster (DESCRIBE 8)
TOPIC_OPERATIONS = (1 << 3) | (1 << 8) | (1 << 10)
CLUSTER_OPERATIONS = 1 << 8

# DescribeConfigs resource types (Kafka's ConfigResource.Type), config sources and config types
TOPIC, BROKER = 2, 4
SOURCE_TOPIC, SOURCE_DEFAULT = 1, 5
BOOLEAN, STRING, INT, LONG = 1, 2, 3, 5


@dataclass(frozen=True)
class ConfigEntry:
    """One config of a topic as DescribeConfigs gives it."""

    name: str
    value: str
    source: int
    type: int
    documentation: str

    def answer(self, version: int, synonyms: bool, documentation: bool) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "read_only": True, "is_default": self.source == SOURCE_DEFAULT,
                "config_source": self.source, "is_sensitive": False, "config_type": self.type,
                "synonyms": [{"name": self.name, "value": self.value, "source": self.source}] if synonyms else [],
                "documentation": self.documentation if documentation else None}


def topic_configs(desc: TopicDescription, table: Table | None) -> list[ConfigEntry]:
    """Every config of a changefeed topic; ``table`` gives ``logtide.table.schema`` (left out without one)."""
    retention_source = SOURCE_DEFAULT if desc.retention_seconds == DEFAULT_RETENTION_SECONDS else SOURCE_TOPIC
    out = [
        ConfigEntry("cleanup.policy", "delete", SOURCE_DEFAULT, STRING,
                    "Records older than retention.ms are deleted; topics are never compacted."),
        ConfigEntry("compression.type", "uncompressed", SOURCE_DEFAULT, STRING,
                    "Record batches are served uncompressed."),
        ConfigEntry("message.timestamp.type", "CreateTime", SOURCE_DEFAULT, STRING,
                    "A record's timestamp is when its table write committed."),
        ConfigEntry("retention.bytes", "-1", SOURCE_DEFAULT, LONG, "No size limit: retention is by time only."),
        ConfigEntry("retention.ms", str(desc.retention_seconds * 1000), retention_source, LONG,
                    "The changefeed's RETENTION_PERIOD in milliseconds."),
        ConfigEntry("logtide.changefeed.path", desc.path, SOURCE_TOPIC, STRING,
                    "The changefeed as YDB names it: keyspace/table/changefeed."),
        ConfigEntry("logtide.changefeed.mode", desc.mode, SOURCE_TOPIC, STRING, "The changefeed's MODE."),
        ConfigEntry("logtide.changefeed.format", desc.format, SOURCE_TOPIC, STRING, "The changefeed's FORMAT."),
        ConfigEntry("logtide.changefeed.partitions", str(desc.partitions), SOURCE_TOPIC, INT,
                    "The number of partitions (TOPIC_MIN_ACTIVE_PARTITIONS)."),
        ConfigEntry("logtide.changefeed.state", desc.state, SOURCE_TOPIC, STRING,
                    "ENABLED, INITIAL_SCAN or DISABLED."),
        ConfigEntry("logtide.table", f"{desc.keyspace}.{desc.table}", SOURCE_TOPIC, STRING,
                    "The table whose writes the changefeed carries."),
    ]
    if table is not None:
        out.append(ConfigEntry("logtide.table.schema", table_schema(table), SOURCE_TOPIC, STRING,
                               "The table's CREATE TABLE statement (after the CREATE TYPE statements of the user "
                               "types it uses), as DESCRIBE TABLE prints it."))
    return out


def table_schema(table: Table) -> str:
    """The CREATE TYPE statements of the user types the table uses (each after those it uses), then its
    CREATE TABLE statement and changefeeds, as DESCRIBE prints them."""
    types: dict[tuple[str, str], T.UserType] = {}
    for column in table.columns:
        for udt in _user_types(column.type):
            types.setdefault((udt.keyspace, udt.name), udt)
    statements = [describe_type(UserTypeDef(u.keyspace, u.name, u.field_names, u.field_types))
                  for u in types.values()]
    return "\n\n".join(statements + [describe_table(table)])


def _user_types(t: Any) -> Iterator[T.UserType]:
    """The user types within a type, each after the user types its fields use."""
    if isinstance(t, T.UserType):
        for ft in t.field_types:
            yield from _user_types(ft)
        yield t
    elif isinstance(t, (T.ListType, T.SetType)):
        yield from _user_types(t.element)
    elif isinstance(t, T.MapType):
        yield from _user_types(t.key)
        yield from _user_types(t.value)
    elif isinstance(t, T.TupleType):
        for it in t.items:
            yield from _user_types(it)


async def describe_configs(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """Configs of topics (the role must be able to read the topic) and of broker 0 (none are exposed)."""
    synonyms, documentation = req["include_synonyms"], req["include_documentation"]

    def one(resource: dict) -> dict:
        rtype, name, keys = resource["resource_type"], resource["resource_name"], resource["configuration_keys"]
        answer = {"error_code": E.NONE, "error_message": None, "resource_type": rtype, "resource_name": name,
                  "configs": []}
        if rtype == BROKER:
            if name not in ("", str(NODE_ID)):
                answer.update(error_code=E.INVALID_REQUEST,
                              error_message=f"Unexpected broker id, expected {NODE_ID} or empty string, but "
                                            f"received {name}")
            return answer
        if rtype != TOPIC:
            answer.update(error_code=E.INVALID_REQUEST,
                          error_message=f"logtide describes the configs of topics and of broker {NODE_ID} only "
                                        f"(resource type {rtype})")
            return answer
        desc, err = conn.topics.resolve(name, conn.role)
        if desc is None:
            answer.update(error_code=err, error_message=f"Topic '{name}' does not exist"
                          if err == E.UNKNOWN_TOPIC_OR_PARTITION else f"Not authorized to read topic '{name}'")
            return answer
        try:
            table, _feed = conn.topics.reader.feed(desc.path)
        except InvalidRequest:  # dropped meanwhile
            table = None
        wanted = None if keys is None else set(keys)
        answer["configs"] = [c.answer(version, synonyms, documentation) for c in topic_configs(desc, table)
                             if wanted is None or c.name in wanted]
        return answer

    def look() -> list[dict]:
        return [one(r) for r in req["resources"]]

    return {"results": await conn.blocking(look)}


def describe_cluster(conn: "KafkaConnection", req: dict, version: int) -> dict:
    """The one-broker cluster (KIP-700): node 0 at the advertised address; only the broker endpoint exists."""
    if req["endpoint_type"] != 1:  # 2: the controller endpoint (KIP-919)
        return {"error_code": E.MISMATCHED_ENDPOINT_TYPE, "endpoint_type": 1, "cluster_id": CLUSTER_ID,
                "error_message": "logtide's Kafka endpoint is a broker endpoint; it has no controller endpoint"}
    host, port = conn.broker.advertised
    return {"error_code": E.NONE, "error_message": None, "endpoint_type": 1, "cluster_id": CLUSTER_ID,
            "controller_id": NODE_ID, "brokers": [{"broker_id": NODE_ID, "host": host, "port": port, "rack": None}],
            "cluster_authorized_operations": CLUSTER_OPERATIONS if req["include_cluster_authorized_operations"]
            else UNKNOWN_OPERATIONS}
