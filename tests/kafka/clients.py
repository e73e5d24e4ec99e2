"""Group consumers of each real client, run on a thread each, recording what they are delivered.

kafka-python, confluent-kafka and aiokafka run in this process; KafkaJS runs
``kafkajs_consumer.js`` in node (``kafkajs.py`` installs it outside the
repository, or the test skips saying why).

Every consumer commits synchronously what it processed after each poll and
notes in the shared ``Ledger`` which deliveries a successful commit covered:
a record delivered again after that is a duplicate.  (A commit refused
during a rebalance leaves its records uncommitted; those may come again.)
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field

FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300}


@dataclass(frozen=True)
class Delivered:
    partition: int
    offset: int
    key: bytes | None
    value: bytes


class Ledger:
    """Deliveries and successful commits of every consumer of a test, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.committed: set[tuple[int, int]] = set()
        self.duplicates: list[tuple[int, int]] = []

    def delivered(self, recs: list["Delivered"]) -> None:
        with self._lock:
            self.duplicates += [(r.partition, r.offset) for r in recs if (r.partition, r.offset) in self.committed]

    def commit_succeeded(self, recs: list["Delivered"]) -> None:
        with self._lock:
            self.committed.update((r.partition, r.offset) for r in recs)


@dataclass
class GroupConsumer:
    """One client's consumer in a group, polling on its own thread until ``stop``."""

    client: str
    bootstrap: str
    topic: str
    group: str
    ledger: Ledger = field(default_factory=Ledger)
    strategy: str | None = None  # the assignor to offer, by Kafka name; None: the client's default
    records: list[Delivered] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"{self.client}-{self.group}")

    def start(self) -> "GroupConsumer":
        self._thread.start()
        return self

    def stop(self, timeout: float = 60) -> None:
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.client} consumer did not stop"
        if self.errors:
            raise self.errors[0]

    def _got(self, recs: list[Delivered]) -> None:
        self.ledger.delivered(recs)
        self.records.extend(recs)

    def _run(self) -> None:
        try:
            getattr(self, f"_run_{self.client.replace('-', '_')}")()
        except BaseException as e:  # reported by stop()
            self.errors.append(e)

    def _run_kafka_python(self) -> None:
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
        assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                     "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}
        extra = {"partition_assignment_strategy": [assignors[self.strategy]]} if self.strategy else {}
        c = KafkaConsumer(self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                          auto_offset_reset="earliest", enable_auto_commit=False, **FAST_GROUP, **extra)
        try:
            from kafka.errors import CommitFailedError
            while not self._stop.is_set():
                batch = c.poll(timeout_ms=200)
                got = [Delivered(m.partition, m.offset, m.key, m.value) for msgs in batch.values() for m in msgs]
                self._got(got)
                if got:
                    try:
                        c.commit()
                        self.ledger.commit_succeeded(got)
                    except CommitFailedError:
                        pass
        finally:
            c.close(autocommit=False)

    def _run_confluent_kafka(self) -> None:
        from confluent_kafka import Consumer
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                      **({"partition.assignment.strategy": self.strategy} if self.strategy else {})})
        c.subscribe([self.topic])
        try:
            while not self._stop.is_set():
                from confluent_kafka import KafkaException
                msgs = c.consume(100, 0.2)
                got = [Delivered(m.partition(), m.offset(), m.key(), m.value()) for m in msgs if not m.error()]
                self._got(got)
                if got:
                    try:
                        c.commit(asynchronous=False)
                        self.ledger.commit_succeeded(got)
                    except KafkaException:
                        pass
        finally:
            c.close()

    def _run_aiokafka(self) -> None:
        asyncio.run(self._aiokafka())

    async def _aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer
        c = AIOKafkaConsumer(self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                             auto_offset_reset="earliest", enable_auto_commit=False, **FAST_GROUP)
        from aiokafka.errors import CommitFailedError
        await c.start()
        try:
            while not self._stop.is_set():
                batch = await c.getmany(timeout_ms=200)
                got = [Delivered(m.partition, m.offset, m.key, m.value) for msgs in batch.values() for m in msgs]
                self._got(got)
                if got:
                    try:
                        await c.commit()
                        self.ledger.commit_succeeded(got)
                    except CommitFailedError:
                        pass
        finally:
            await c.stop()


    def _run_kafkajs(self) -> None:
        """tests/kafka/kafkajs_consumer.js in node: one JSON line a message and one a successful commit."""
        from .kafkajs import SCRIPT, require_kafkajs
        env = dict(os.environ, NODE_PATH=str(require_kafkajs()))
        proc = subprocess.Popen(["node", str(SCRIPT), self.bootstrap, self.topic, self.group], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=lambda: self._stop.wait() and proc.send_signal(signal.SIGTERM), daemon=True).start()
        uncommitted: list[Delivered] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            if "message" in event:
                p, o, k, v = event["message"]
                got = Delivered(p, o, None if k is None else base64.b64decode(k), base64.b64decode(v))
                self._got([got])
                uncommitted.append(got)
            elif "committed" in event:
                p, next_offset = event["committed"]
                self.ledger.commit_succeeded([r for r in uncommitted if r.partition == p and r.offset < next_offset])
                uncommitted = [r for r in uncommitted if r.partition != p or r.offset >= next_offset]
        code = proc.wait(60)
        if code != 0 or not self._stop.is_set():
            raise AssertionError(f"the KafkaJS consumer exited with status {code}: {proc.stderr.read()}")


CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka", "kafkajs")
