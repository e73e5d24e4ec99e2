"""A changefeed topic read over the Kafka protocol with confluent-kafka (librdkafka), in the driver and executors.

Reading needs no group membership: each partition's range is read by ``assign`` at its start
offset (no OffsetFetch, so no consumer is created).  Ends and starts come from ListOffsets
(``get_watermark_offsets``), a start time from ListOffsets by timestamp (``offsets_for_times``), and a
consumer's commit is an OffsetCommit with the consumer's name as group id: logtide maps Kafka groups
to changefeed consumers (docs/kafka.md "Consumer groups and offsets"), and so does YDB.

confluent-kafka was chosen over kafka-python by a measurement on this machine: 20,000 records of
one partition read from ``logtide serve`` in 0.51-1.18 s against 1.25-1.30 s (docs/spark.md).

One idea split for size with ``changefeed_topic.py``: reading a changefeed topic (over the Kafka protocol
here).
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Iterator, Mapping

from .changefeed_topic import KafkaSettings, Message
from .errors import login_refused, untrusted_certificate
from .options import OptionError


def client_config(settings: KafkaSettings, group: str, on_error: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """librdkafka settings for a reader (or committer) with group id ``group``; ``on_error`` gets librdkafka's
    background errors (a refused login, a failed TLS handshake) when the client is polled."""
    conf: dict[str, Any] = {
        "bootstrap.servers": settings.bootstrap, "group.id": group, "enable.auto.commit": False,
        "enable.auto.offset.store": False, "auto.offset.reset": "earliest", "fetch.max.bytes": 52428800,
        "fetch.wait.max.ms": 50,
        "socket.timeout.ms": int(settings.timeout * 1000), "logger": _QuietLogger(),
    }
    if on_error is not None:
        conf["error_cb"] = on_error
    if settings.username is not None:
        conf.update({"security.protocol": "SASL_SSL" if settings.ssl else "SASL_PLAINTEXT",
                     "sasl.mechanism": "PLAIN", "sasl.username": settings.username,
                     "sasl.password": settings.password})
    elif settings.ssl:
        conf["security.protocol"] = "SSL"
    if settings.ssl_ca_file:
        conf["ssl.ca.location"] = settings.ssl_ca_file
    conf.update(settings.extra)
    return conf


def new_consumer(settings: KafkaSettings, group: str, on_error: Callable[[Any], None] | None = None) -> Any:
    """A confluent-kafka Consumer; a setting librdkafka refuses (from a ``kafka.`` option) names the option."""
    from confluent_kafka import Consumer, KafkaException

    try:
        return Consumer(client_config(settings, group, on_error))
    except (KafkaException, ValueError, TypeError) as e:
        why = e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)
        raise OptionError(f"the Kafka client refused the kafka. options ({why}); known settings: librdkafka's "
                          f"CONFIGURATION.md") from None


def topic_names(settings: KafkaSettings) -> list[str]:
    """Every topic's name at the bootstrap servers (for ``subscribePattern``)."""
    c = new_consumer(settings, "logtide-spark-reader")
    try:
        return sorted(c.list_topics(timeout=settings.timeout).topics)
    except Exception as e:  # noqa: BLE001 (librdkafka's KafkaException)
        raise ConnectionError(f"cannot reach the Kafka bootstrap servers {settings.bootstrap}: {e}") from None
    finally:
        c.close()


class _QuietLogger:
    """librdkafka's log lines go nowhere (errors surface as exceptions with a message)."""

    def log(self, *args: Any, **kwargs: Any) -> None:
        pass

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 (logging.Logger's name)
        return False


def refusal(name: str, text: str) -> str | None:
    """A librdkafka error that means the broker refused the client, in words naming the option to look at."""
    if name == "_AUTHENTICATION":
        said = re.search(r"SASL authentication error: (.*?)(?: \(after \d+ms in state \w+\))?$", text)
        return login_refused(said.group(1) if said else text)
    if name in ("_SSL", "_TRANSPORT") and "certificate verify failed" in text:
        return untrusted_certificate("certificate verify failed")
    return None


class KafkaAccess:
    """One topic over Kafka (``changefeed_topic.TopicAccess``)."""

    def __init__(self, settings: KafkaSettings, topic: str) -> None:
        self.settings = settings
        self.topic = topic
        self.refusal: str | None = None  # why the broker refused the client, from librdkafka's error callback
        self.consumer = new_consumer(settings, "logtide-spark-reader", self._background_error)
        self._count: int | None = None

    def _background_error(self, err: Any) -> None:
        self.refusal = refusal(err.name(), err.str()) or self.refusal

    def _tp(self, partition: int, offset: int = -1001) -> Any:
        from confluent_kafka import TopicPartition

        return TopicPartition(self.topic, partition, offset)

    def partition_count(self) -> int:
        from confluent_kafka import KafkaException

        if self._count is None:
            deadline = time.monotonic() + self.settings.timeout
            while True:  # in steps of a second, so that a refused login or TLS handshake fails at once
                try:
                    md = self.consumer.list_topics(self.topic, timeout=max(0.1, min(1.0, deadline - time.monotonic())))
                    break
                except KafkaException as e:
                    self.consumer.poll(0)  # serves the error callback
                    if self.refusal is None and time.monotonic() < deadline:
                        continue
                    raise ConnectionError(f"cannot reach the Kafka bootstrap servers {self.settings.bootstrap}: "
                                          f"{self.refusal or (e.args[0].str() if e.args else e)}") from None
            t = md.topics.get(self.topic)
            if t is None or t.error is not None or not t.partitions:
                why = t.error.str() if t is not None and t.error is not None else "no such topic"
                raise OptionError(f"option topic: {self.topic} cannot be read at {self.settings.bootstrap}: {why}")
            self._count = len(t.partitions)
        return self._count

    def partitions(self) -> list[tuple[int, int]]:
        return [tuple(self.consumer.get_watermark_offsets(self._tp(p), timeout=self.settings.timeout, cached=False))
                for p in range(self.partition_count())]

    def offset_for_time(self, partition: int, time_ms: int) -> int:
        got = self.consumer.offsets_for_times([self._tp(partition, time_ms)], timeout=self.settings.timeout)[0]
        if got.offset < 0:  # no record at or after the time: the end
            return self.partitions()[partition][1]
        return got.offset

    def read(self, partition: int, start: int, end: int) -> Iterator[Message]:
        """Messages of ``[start, end)``; retention may have removed a head (reading resumes at the start)."""
        if end <= start:
            return
        self.consumer.assign([self._tp(partition, start)])
        deadline = time.monotonic() + self.settings.timeout
        try:
            while True:
                # ask for exactly what is left: consume() returns once it has that many (or after 1 s)
                msgs = self.consumer.consume(max(1, min(10000, end - start)), 1.0)
                if not msgs:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"topic {self.topic} partition {partition}: no record at offset "
                                           f"{start} or later within {self.settings.timeout:g}s "
                                           f"(reading up to offset {end})")
                    lo, hi = self.consumer.get_watermark_offsets(self._tp(partition), timeout=self.settings.timeout,
                                                                 cached=False)
                    if lo >= end:  # retention removed the rest of the range
                        return
                    continue
                deadline = time.monotonic() + self.settings.timeout
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        if err.code() == -191:  # _PARTITION_EOF
                            continue
                        raise ConnectionError(f"reading {self.topic} partition {partition}: {err.str()}")
                    off = m.offset()
                    if off >= end:
                        return
                    start = off + 1
                    yield off, m.timestamp()[1], m.key(), m.value()
                    if off + 1 >= end:
                        return
        finally:
            self.consumer.unassign()

    def commit(self, consumer: str, offsets: Mapping[int, int]) -> None:
        from confluent_kafka import KafkaException

        c = new_consumer(self.settings, consumer)
        try:
            c.commit(offsets=[self._tp(p, o) for p, o in sorted(offsets.items())], asynchronous=False)
        except KafkaException as e:
            raise ConnectionError(f"committing consumer {consumer} on {self.topic}: {e}") from None
        finally:
            c.close()

    def close(self) -> None:
        self.consumer.close()
