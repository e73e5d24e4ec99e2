"""``logtide serve`` runs the Kafka endpoint beside the CQL listener (docs/kafka.md "Running it")."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.server.test_cli import Serve

from .conftest import wait_for

KAFKA = re.compile(r"Kafka endpoint on (\S+):(\d+)")
NO_READER = "no changefeed topic reader"


def kafka_line(srv: Serve) -> str | None:
    """The log line saying where the Kafka endpoint listens, or that it could not start."""
    return next((line for line in srv.lines if KAFKA.search(line) or NO_READER in line), None)


def test_kafka_port_must_be_a_port_or_auto(tmp_path):
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path / "d"),
                           "--kafka-port", "ninety"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "'ninety' is not a port number or 'auto'" in done.stderr


def test_kafka_port_zero_serves_cql_only(tmp_path):
    with Serve("--data-dir", str(tmp_path / "d"), "--kafka-port", "0") as srv:
        srv.wait_listening()
        assert srv.stop() == 0
    assert kafka_line(srv) is None


def test_serve_answers_kafka_clients_on_an_automatic_port(tmp_path):
    with Serve("--data-dir", str(tmp_path / "d"), "--kafka-port", "auto") as srv:  # the last --kafka-port wins
        srv.wait_listening()
        wait_for(lambda: kafka_line(srv) is not None, what="the Kafka endpoint's log line")
        m = KAFKA.search(kafka_line(srv) or "")
        if m is None:
            pytest.skip("this build has no changefeed reader (db.changefeeds) for the Kafka endpoint to serve")
        from kafka import KafkaConsumer
        c = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{m.group(2)}")
        assert isinstance(c.topics(), set)
        c.close()
        assert srv.stop() == 0
