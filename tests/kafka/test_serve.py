"""``logtide serve`` runs the Kafka endpoint beside the CQL listener (docs/kafka.md "Running it")."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time

import pytest

KAFKA = re.compile(r"Kafka endpoint on (\S+):(\d+)")
NO_READER = "no changefeed topic reader"


class ServeWithKafka:
    """``python -m logtide serve --port 0 ARGS``; ``kafka_port`` once the Kafka endpoint listens."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "logtide", "serve", "--port", "0", *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.done = threading.Event()
        self.kafka_port = 0
        self.expect_kafka = "0" not in args[args.index("--kafka-port") + 1:][:1]
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            m = KAFKA.search(line)
            if m:
                self.kafka_port = int(m.group(2))
            cql = re.search(r"listening on \S+:\d+", line)
            if m or NO_READER in line or (cql and not self.expect_kafka):
                self.done.set()

    def wait(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self.done.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("server did not start:\n" + "".join(self.lines))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)

    def __enter__(self) -> "ServeWithKafka":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


def test_kafka_port_must_be_a_port_or_auto(tmp_path):
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--data-dir", str(tmp_path / "d"),
                           "--kafka-port", "ninety"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "'ninety' is not a port number or 'auto'" in done.stderr


def test_kafka_port_zero_serves_cql_only(tmp_path):
    with ServeWithKafka("--data-dir", str(tmp_path / "d"), "--kafka-port", "0") as srv:
        srv.wait()
        assert srv.stop() == 0
    assert not any(KAFKA.search(line) for line in srv.lines)


def test_serve_answers_kafka_clients_on_an_automatic_port(tmp_path):
    with ServeWithKafka("--data-dir", str(tmp_path / "d"), "--kafka-port", "auto") as srv:
        srv.wait()
        if not srv.kafka_port:
            assert any(NO_READER in line for line in srv.lines)
            pytest.skip("this build has no changefeed reader (db.changefeeds) for the Kafka endpoint to serve")
        from kafka import KafkaConsumer
        c = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{srv.kafka_port}")
        assert isinstance(c.topics(), set)
        c.close()
        assert srv.stop() == 0
