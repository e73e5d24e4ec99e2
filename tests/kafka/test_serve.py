"""``logtide serve`` runs the Kafka endpoint over ``db.changefeeds`` beside the CQL listener (docs/kafka.md "Running it")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading

from tests.server.conftest import KEYSPACE_DDL, cluster
from tests.server.serveproc import Serve

from .conftest import wait_for
from .rawclient import RawClient
from .test_changefeed_topics import consumer_rows

KAFKA = re.compile(r"Kafka endpoint on (\S+):(\d+)")


def kafka_line(srv: Serve) -> str | None:
    """The log line saying where the Kafka endpoint listens."""
    return next((line for line in srv.lines if KAFKA.search(line)), None)


def test_kafka_port_must_be_a_port_auto_or_off(tmp_path):
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path / "d"),
                           "--kafka-port", "ninety"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "'ninety' is not a port: give 0 to 65535 (0 or auto: a free port) or off" in done.stderr


def test_kafka_endpoint_defaults_to_loopback_9092():
    from logtide.server.cli import DEFAULTS
    assert (DEFAULTS["kafka_host"], DEFAULTS["kafka_port"]) == ("127.0.0.1", 9092)  # tests never bind it


def test_kafka_port_off_serves_cql_only(tmp_path):
    with Serve("--data-dir", str(tmp_path / "d"), "--kafka-port", "off") as srv:
        srv.wait_listening()
        assert srv.stop() == 0
    assert kafka_line(srv) is None


def test_serve_streams_cql_writes_to_a_kafka_group_and_the_cli_sees_its_offsets(tmp_path):
    from kafka import KafkaConsumer
    data = str(tmp_path / "d")
    with Serve("--data-dir", data, "--kafka-port", "auto") as srv:  # the last --kafka-port wins
        port = srv.wait_listening()
        wait_for(lambda: kafka_line(srv) is not None, what="the Kafka endpoint's log line")
        m = KAFKA.search(kafka_line(srv) or "")
        assert m is not None and m.group(1) == "127.0.0.1"
        cl = cluster(port)
        s = cl.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (id int PRIMARY KEY, v text)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'DEBEZIUM_JSON', "
                  "TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
        insert = s.prepare("INSERT INTO ks.t (id, v) VALUES (?, ?)")
        c = KafkaConsumer("ks.t.f", bootstrap_servers=f"127.0.0.1:{m.group(2)}", group_id="served",
                          auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6000,
                          heartbeat_interval_ms=300)
        writer = threading.Thread(target=lambda: [s.execute(insert, (i, f"row {i}")) for i in range(50)])
        writer.start()
        ids: list[int] = []

        def more() -> bool:
            for msgs in c.poll(200).values():
                ids.extend(json.loads(x.key)["payload"]["id"] for x in msgs)
            return len(ids) >= 50
        wait_for(more, what="every row written while the group consumed")
        writer.join()
        c.commit()
        c.close()
        assert sorted(ids) == list(range(50))
        rows = consumer_rows("ks/t/f", data)  # read from the directory the server owns
        assert sum(committed for (name, _), (committed, end) in rows.items() if name == "served") == 50
        assert all(committed == end for (name, _), (committed, end) in rows.items() if name == "served")
        cl.shutdown()
        assert srv.stop() == 0


def test_after_a_restart_a_group_rejoins_and_resumes_from_its_committed_offsets(tmp_path):
    """Group membership lives in memory (as in a Kafka coordinator after failover); committed offsets are the
    changefeed consumer's, durable: a consumer that stays up across ``logtide serve`` restarting rejoins the
    group and reads on from what it committed, nothing twice."""
    from confluent_kafka import Consumer

    from tests.ops.serving import free_port
    data, kafka_port = str(tmp_path / "d"), free_port()  # the same Kafka port on both runs: the client reconnects
    got: list[int] = []

    def serve_and_write(first: int, ddl: bool) -> Serve:
        srv = Serve("--data-dir", data, "--kafka-port", str(kafka_port))
        port = srv.wait_listening()
        wait_for(lambda: kafka_line(srv) is not None, what="the Kafka endpoint's log line")
        cl = cluster(port)
        s = cl.connect()
        if ddl:
            s.execute(KEYSPACE_DDL.format("ks"))
            s.execute("CREATE TABLE ks.t (id int PRIMARY KEY, v text)")
            s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
                      "TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
        insert = s.prepare("INSERT INTO ks.t (id, v) VALUES (?, ?)")
        for i in range(first, first + 20):
            s.execute(insert, (i, f"row {i}"))
        cl.shutdown()
        return srv

    def read_until(n: int) -> bool:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(json.loads(m.value())["key"][0])
        return len(got) >= n

    srv = serve_and_write(0, ddl=True)
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{kafka_port}", "group.id": "g", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                  "reconnect.backoff.max.ms": 500})
    c.subscribe(["ks.t.f"])
    try:
        wait_for(lambda: read_until(20), what="the first 20 rows")
        c.commit(asynchronous=False)
        assert srv.stop() == 0
        srv = serve_and_write(20, ddl=False)  # members are forgotten; offsets are on disk
        wait_for(lambda: read_until(40), timeout=120, what="the rows written after the restart")
        c.commit(asynchronous=False)
        raw = RawClient("127.0.0.1", kafka_port)  # the new process knows the group only because it rejoined
        _, r = raw.call(15, 0, {"groups": ["g"]})
        group = raw.decode(15, 0, r)["groups"][0]
        raw.close()
        assert (group["group_state"], len(group["members"])) == ("Stable", 1)
        for _ in range(10):  # nothing more arrives: nothing is delivered twice
            read_until(41)
    finally:
        c.close()
    assert sorted(got) == list(range(40))
    rows = consumer_rows("ks/t/f", data)
    assert all(committed == end for (name, _), (committed, end) in rows.items() if name == "g")
    assert sum(committed for (name, _), (committed, _end) in rows.items() if name == "g") == 40
    assert srv.stop() == 0


def test_kafka_advertised_host_is_what_clients_are_told_and_they_connect_by_it(tmp_path):
    """A server reached by another name (a container, a NAT): Metadata, FindCoordinator and DescribeCluster name
    --kafka-advertised-host (here the config file's kafka_advertised_host), and a group reads through it."""
    from confluent_kafka import Consumer
    config = tmp_path / "logtide.toml"
    config.write_text('kafka_advertised_host = "localhost"\n')
    with Serve("--data-dir", str(tmp_path / "d"), "--kafka-port", "auto", "--config", str(config)) as srv:
        port = srv.wait_listening()
        wait_for(lambda: kafka_line(srv) is not None, what="the Kafka endpoint's log line")
        line = kafka_line(srv) or ""
        m = KAFKA.search(line)
        assert m is not None and m.group(1) == "127.0.0.1" and "advertised as localhost" in line
        kport = int(m.group(2))
        cl = cluster(port)
        s = cl.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (id int PRIMARY KEY, v text)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
        for i in range(3):
            s.execute("INSERT INTO ks.t (id, v) VALUES (%s, 'x')", (i,))
        raw = RawClient("127.0.0.1", kport)
        _, r = raw.call(3, 12, {"topics": None})
        assert [(b["host"], b["port"]) for b in raw.decode(3, 12, r)["brokers"]] == [("localhost", kport)]
        _, r = raw.call(10, 4, {"key_type": 0, "coordinator_keys": ["g"]})
        assert [(c["host"], c["port"]) for c in raw.decode(10, 4, r)["coordinators"]] == [("localhost", kport)]
        _, r = raw.call(60, 1, {"endpoint_type": 1})
        assert [(b["host"], b["port"]) for b in raw.decode(60, 1, r)["brokers"]] == [("localhost", kport)]
        raw.close()
        c = Consumer({"bootstrap.servers": f"127.0.0.1:{kport}", "group.id": "g", "auto.offset.reset": "earliest"})
        c.subscribe(["ks.t.f"])
        got: list[int] = []

        def read() -> bool:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got.append(json.loads(msg.value())["key"][0])
            return len(got) >= 3
        wait_for(read, what="the rows, read through the advertised name")
        c.close()
        assert sorted(got) == [0, 1, 2]
        cl.shutdown()
        assert srv.stop() == 0


def test_a_kafka_advertised_host_that_is_no_host_name_is_refused(tmp_path):
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path / "d"),
                           "--kafka-advertised-host", "kafka:9092"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "kafka_advertised_host must be a host name or an IP address, not 'kafka:9092'" in done.stderr
    assert "Traceback" not in done.stderr
