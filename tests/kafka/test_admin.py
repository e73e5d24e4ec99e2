"""DescribeConfigs of changefeed topics and DescribeCluster, with real admin clients (docs/kafka.md "Topic configs")."""

from __future__ import annotations

import pytest

import logtide
from logtide.cql.tokens import split_statements
from logtide.kafka import errors as E
from logtide.schema.describe import describe_table

from .rawclient import RawClient
from .test_auth import secured  # noqa: F401  (the fixture)

TABLE = ("CREATE TABLE ks.orders (id int, line int, item frozen<item>, note text, PRIMARY KEY (id, line)) "
         "WITH CLUSTERING ORDER BY (line DESC)")


def make_orders(changefeeds) -> str:
    s = changefeeds.session()
    s.execute("CREATE TYPE IF NOT EXISTS ks.money (units bigint, currency text)")
    s.execute("CREATE TYPE IF NOT EXISTS ks.item (name text, price frozen<money>)")
    s.execute(TABLE)
    s.execute("ALTER TABLE ks.orders ADD CHANGEFEED feed WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
              "TOPIC_MIN_ACTIVE_PARTITIONS = 3, RETENTION_PERIOD = Interval('PT1H'))")
    return "ks.orders.feed"


def test_confluent_kafkas_admin_describes_a_topics_configs_and_the_schema_recreates_its_table(broker, changefeeds,
                                                                                             tmp_path):
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
    topic = make_orders(changefeeds)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    configs = future.result(60)
    values = {name: entry.value for name, entry in configs.items()}
    assert {k: values[k] for k in ("cleanup.policy", "retention.ms", "retention.bytes", "logtide.changefeed.mode",
                                   "logtide.changefeed.format", "logtide.changefeed.partitions", "logtide.table",
                                   "logtide.changefeed.path")} == {
        "cleanup.policy": "delete", "retention.ms": "3600000", "retention.bytes": "-1",
        "logtide.changefeed.mode": "NEW_IMAGE", "logtide.changefeed.format": "JSON",
        "logtide.changefeed.partitions": "3", "logtide.table": "ks.orders", "logtide.changefeed.path": "ks/orders/feed"}
    assert all(entry.is_read_only for entry in configs.values())
    assert configs["retention.ms"].source == 1 and configs["cleanup.policy"].is_default  # TOPIC_CONFIG, DEFAULT
    schema = values["logtide.table.schema"]
    assert schema.index("CREATE TYPE ks.money") < schema.index("CREATE TYPE ks.item") < schema.index("CREATE TABLE")

    # the schema alone recreates the table (and its changefeed): a reader needs only the Kafka URL
    db = logtide.open(tmp_path / "other", synchronous="OFF")
    try:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        for statement in split_statements(schema):
            s.execute(statement.text)
        original = changefeeds.reader.feed("ks/orders/feed")[0]
        assert describe_table(db.changefeeds.feed("ks/orders/feed")[0]) == describe_table(original)
    finally:
        db.close()


def test_kafka_pythons_admin_describes_configs_and_the_cluster(broker, changefeeds):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    topic = make_orders(changefeeds)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        configs = described["topic"][topic]
        assert configs["logtide.changefeed.partitions"]["value"] == "3"
        assert configs["logtide.table.schema"]["value"].startswith("CREATE TYPE ks.money")
        cluster = admin.describe_cluster()
        host, port = broker.broker.advertised
        assert cluster["cluster_id"] == "logtide" and cluster["controller_id"] == 0
        assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == [(0, host, port)]
    finally:
        admin.close()


def test_confluent_kafkas_admin_describes_the_cluster(broker):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    cluster = admin.describe_cluster(request_timeout=60).result(60)
    host, port = broker.broker.advertised
    assert cluster.cluster_id == "logtide" and cluster.controller.id == 0
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, host, port)]


def test_config_keys_unknown_topics_other_resources_and_the_controller_endpoint_are_answered(broker, changefeeds):
    topic = make_orders(changefeeds)
    c = RawClient(*broker.broker.advertised)
    _, r = c.call(32, 4, {"resources": [
        {"resource_type": 2, "resource_name": topic, "configuration_keys": ["retention.ms", "no.such.key"]},
        {"resource_type": 2, "resource_name": "ks.nope.feed", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "0", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "7", "configuration_keys": None},
        {"resource_type": 8, "resource_name": "0", "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": True})
    results = c.decode(32, 4, r)["results"]
    assert [(x["error_code"], [k["name"] for k in x["configs"]]) for x in results] == [
        (E.NONE, ["retention.ms"]), (E.UNKNOWN_TOPIC_OR_PARTITION, []), (E.NONE, []), (E.INVALID_REQUEST, []),
        (E.INVALID_REQUEST, [])]
    retention = results[0]["configs"][0]
    assert retention["synonyms"] == [{"name": "retention.ms", "value": "3600000", "source": 1}]
    assert "RETENTION_PERIOD" in retention["documentation"] and retention["config_type"] == 5  # LONG
    assert "Unexpected broker id" in results[3]["error_message"]
    _, r = c.call(60, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 2})
    answer = c.decode(60, 1, r)
    assert answer["error_code"] == E.MISMATCHED_ENDPOINT_TYPE and "no controller endpoint" in answer["error_message"]
    c.close()


@pytest.mark.parametrize("role, password, expected", [("reader", "r pw", E.NONE),
                                                      ("other", "o pw", E.TOPIC_AUTHORIZATION_FAILED)])
def test_describing_a_topics_configs_needs_select_on_its_table(secured, changefeeds, role, password,  # noqa: F811
                                                                expected):
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
    from confluent_kafka import KafkaException
    feed = changefeeds.make("JSON", partitions=1)  # ks.t0: reader may SELECT it, other may not
    admin = AdminClient({"bootstrap.servers": secured.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": role, "sasl.password": password})
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, feed.topic)]).values()
    if expected == E.NONE:
        assert future.result(60)["logtide.table"].value == "ks.t0"
    else:
        with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED|[Aa]uthoriz"):
            future.result(60)
