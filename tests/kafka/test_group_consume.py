"""Each real client consumes a changefeed with a group of two while writes go on (docs/kafka.md "Consumer groups")."""

from __future__ import annotations

import threading
import time

import pytest

from .clients import CLIENTS, GroupConsumer, Ledger
from .conftest import wait_for
from .kafkajs import require_kafkajs


@pytest.mark.parametrize("fmt", ["JSON", "DEBEZIUM_JSON"])
@pytest.mark.parametrize("client", CLIENTS)
def test_group_of_two_gets_every_record_once_across_rebalances_and_restarts(client, fmt, changefeeds, broker):
    if client == "kafkajs":
        require_kafkajs()  # npm installs it outside the repository the first time (skips if it cannot)
    feed = changefeeds.make(fmt, partitions=2)
    written: list[int] = []
    for i in range(20):
        feed.write(i)
        written.append(i)
    stop_writing = threading.Event()

    def writer() -> None:
        i = 20
        while not stop_writing.is_set() and i < 400:
            feed.write(i)
            written.append(i)
            i += 1
            time.sleep(0.02)

    w = threading.Thread(target=writer, daemon=True)
    w.start()
    group = f"g-{client}-{fmt}"
    ledger = Ledger()
    a = GroupConsumer(client, broker.bootstrap, feed.topic, group, ledger).start()
    b = GroupConsumer(client, broker.bootstrap, feed.topic, group, ledger).start()
    runs = [a, b]

    def seen() -> set[int]:
        return {feed.row_id(r.key, r.value) for c in runs for r in c.records}

    try:
        wait_for(lambda: a.records and b.records, what="both consumers to get partitions")
        a.stop()  # leaves the group: b takes both partitions
        stop_writing.set()
        w.join()
        wait_for(lambda: seen() >= set(written), what="the remaining consumer to catch up")
        b.stop()
        for i in range(len(written), len(written) + 20):
            feed.write(i)
            written.append(i)
        a2 = GroupConsumer(client, broker.bootstrap, feed.topic, group, ledger).start()
        b2 = GroupConsumer(client, broker.bootstrap, feed.topic, group, ledger).start()
        runs += [a2, b2]
        wait_for(lambda: seen() >= set(written), what="the restarted group to read the new records")
        a2.stop()
        b2.stop()
    finally:
        stop_writing.set()
        for c in runs:
            c._stop.set()
    assert seen() == set(written)
    assert ledger.duplicates == []
    # the group's committed offsets are the changefeed consumer of the same name
    committed = changefeeds.reader.committed(feed.path, group)
    ends = {p.partition: p.end_offset for p in changefeeds.reader.partitions(feed.path)}
    assert committed == {p: n for p, n in ends.items() if n}


@pytest.mark.parametrize("client,strategy", [
    ("confluent-kafka", "cooperative-sticky"), ("confluent-kafka", "roundrobin"),
    ("kafka-python", "roundrobin"), ("kafka-python", "cooperative-sticky")])
def test_each_assignor_the_clients_offer_splits_the_partitions(client, strategy, changefeeds, broker):
    feed = changefeeds.make("JSON", partitions=4)
    for i in range(40):
        feed.write(i)
    group = f"g-{strategy}"
    a = GroupConsumer(client, broker.bootstrap, feed.topic, group, strategy=strategy).start()
    b = GroupConsumer(client, broker.bootstrap, feed.topic, group, strategy=strategy).start()
    wait_for(lambda: {feed.row_id(r.key, r.value) for c in (a, b) for r in c.records} == set(range(40)),
             what="every record")
    a.stop()
    b.stop()
    ends = {p.partition: p.end_offset for p in changefeeds.reader.partitions(feed.path)}
    assert {r.partition for c in (a, b) for r in c.records} == {p for p, n in ends.items() if n}
    assert changefeeds.reader.committed(feed.path, group) == {p: n for p, n in ends.items() if n}
