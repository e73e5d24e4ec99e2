"""ListGroups and DescribeGroups show every changefeed consumer: one made over CQL or with ``logtide topic
consumer add`` is a group in state Empty with its committed offsets, as Kafka shows a group with committed
offsets and no members (before, ``billing`` was missing from ``list_consumer_groups`` and described as Dead).
"""

from __future__ import annotations

from .test_changefeed_topics import topic_cli


def test_a_consumer_made_with_the_cli_is_an_empty_group_with_its_offsets(broker, changefeeds, tmp_path):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    feed = changefeeds.make("JSON", partitions=2)
    for i in range(6):
        feed.write(i)
    data_dir = str(tmp_path / "data")
    assert topic_cli("consumer", "add", feed.path, "--consumer", "billing", "--data-dir", data_dir).returncode == 0
    done = topic_cli("read", feed.path, "--consumer", "billing", "--limit", "2", "--data-dir", data_dir)
    assert done.returncode == 0, done.stderr
    committed = dict(changefeeds.reader.committed(feed.path, "billing"))
    changefeeds.session().execute(f"ALTER TOPIC \"{feed.path}\" ADD CONSUMER audit")  # and one made over CQL

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(30)
    groups = {g.group_id: g for g in listed.valid}
    assert {"billing", "audit"} <= set(groups) and listed.errors == []
    assert groups["billing"].is_simple_consumer_group is False
    described = admin.describe_consumer_groups(["billing", "audit", "nobody"])
    billing = described["billing"].result(30)
    assert billing.state == ConsumerGroupState.EMPTY and billing.members == []
    assert described["audit"].result(30).state == ConsumerGroupState.EMPTY
    assert described["nobody"].result(30).state == ConsumerGroupState.DEAD
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
        "billing", [TopicPartition(feed.topic, p) for p in (0, 1)])])["billing"].result(30)
    assert {tp.partition: tp.offset for tp in offsets.topic_partitions if tp.offset >= 0} == committed
    assert committed and all(o > 0 for o in committed.values())

    from kafka.admin import KafkaAdminClient
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    assert {"billing", "audit"} <= {g["group_id"] for g in kp.list_groups()}
    assert kp.describe_groups(["billing"])["billing"]["group_state"] == "Empty"
    kp.close()


def test_a_group_with_members_lists_once_and_describes_as_it_runs(broker, changefeeds):
    """A running group that also has committed offsets is listed once, with its members."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient
    from .conftest import wait_for
    feed = changefeeds.make("JSON", partitions=1)
    feed.write(1)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "live", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([feed.topic])
    wait_for(lambda: (m := c.poll(0.3)) is not None and not m.error(), what="a record")
    c.commit(asynchronous=False)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    ids = [g.group_id for g in admin.list_consumer_groups().result(30).valid]
    assert ids.count("live") == 1
    live = admin.describe_consumer_groups(["live"])["live"].result(30)
    assert len(live.members) == 1 and live.state.name == "STABLE"
    c.close()
    wait_for(lambda: admin.describe_consumer_groups(["live"])["live"].result(30).state.name == "EMPTY",
             what="the group to be empty once its member left")
