"""Changefeed topics read over the Kafka protocol vs read through the embedded reader.

    python bench/bench_kafka.py [--count 100000] [--partitions 4] [--samples 200] [--json]

Fills one topic with COUNT change records (~150-byte JSON values) and reads it
whole, once by iterating the reader directly and once each with
confluent-kafka and kafka-python consuming over the Kafka endpoint (manual
assignment from the beginning), reporting records/s and the ratio to the
embedded reader (goal >= 0.5).  Then measures commit-to-consumer latency: a
record is appended every 20 ms while a group consumer of each client long-polls
the topic; the latency is from the append returning to the client handing the
message over (p50/p99; goal p99 <= 20 ms).

Until the changefeed reader is merged, the topic is the tests' in-memory
stand-in (tests/kafka/memory_topics.py), so the embedded figure is an upper
bound that costs nothing per record; run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logtide.kafka import BackgroundKafka, KafkaConfig  # noqa: E402
from tests.kafka.memory_topics import MemoryTopics  # noqa: E402

PATH = "bench/t/feed"
TOPIC = "bench.t.feed"


def fill(reader: MemoryTopics, count: int, partitions: int) -> None:
    reader.create(PATH, partitions, "JSON")
    for i in range(count):
        value = json.dumps({"update": {"v": f"value {i:08d}", "n": i}, "key": [i], "ts": [i, 0],
                            "newImage": {"v": f"value {i:08d}", "n": i}}).encode()
        reader.append(PATH, i % partitions, value)


def embedded(reader: MemoryTopics, partitions: int) -> int:
    n = 0
    for p in range(partitions):
        offset = 0
        while True:
            recs = reader.read(PATH, p, offset, 5000)
            if not recs:
                break
            n += len(recs)
            offset = recs[-1].offset + 1
    return n


def with_confluent(bootstrap: str, count: int, partitions: int) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-ck", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
    n = 0
    while n < count:
        n += sum(1 for m in c.consume(10000, 1.0) if not m.error())
    c.close()
    return n


def with_kafka_python(bootstrap: str, count: int, partitions: int) -> int:
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, max_poll_records=10000)
    tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    n = 0
    while n < count:
        n += sum(len(v) for v in c.poll(1000).values())
    c.close()
    return n


def timed(fn, *args) -> tuple[int, float]:
    t0 = time.perf_counter()
    n = fn(*args)
    return n, time.perf_counter() - t0


def latency(client: str, bootstrap: str, reader: MemoryTopics, samples: int) -> list[float]:
    """Milliseconds from an append returning to the consumer receiving that record."""
    path = f"lat/{client.replace('-', '_')}/feed"
    reader.create(path, 1, "JSON")
    topic = path.replace("/", ".")
    sent: dict[int, float] = {}
    got: list[float] = []
    ready = threading.Event()

    def consume() -> None:
        if client == "confluent-kafka":
            from confluent_kafka import Consumer
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lat", "auto.offset.reset": "earliest",
                          "fetch.wait.max.ms": 500, "fetch.error.backoff.ms": 0})
            c.subscribe([topic], on_assign=lambda *_: ready.set())
            while len(got) < samples:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.append((time.perf_counter() - sent[json.loads(m.value())["i"]]) * 1000)
            c.close()
        else:
            from kafka import KafkaConsumer
            c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="lat", auto_offset_reset="earliest",
                              fetch_max_wait_ms=500)
            while len(got) < samples:
                for msgs in c.poll(500).values():
                    for m in msgs:
                        got.append((time.perf_counter() - sent[json.loads(m.value)["i"]]) * 1000)
                if c.assignment():
                    ready.set()
            c.close()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    ready.wait(60)
    time.sleep(1.0)  # the first fetch is in flight: measure the long poll, not the start
    for i in range(samples):
        sent[i] = time.perf_counter()
        reader.append(path, 0, json.dumps({"i": i}).encode())
        time.sleep(0.02)
    t.join(120)
    return got


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    reader = MemoryTopics()
    fill(reader, args.count, args.partitions)
    out: dict[str, object] = {"count": args.count, "reader": "in-memory stand-in"}
    n, secs = timed(embedded, reader, args.partitions)
    out["embedded_records_per_s"] = round(n / secs)
    with BackgroundKafka(reader, KafkaConfig(port=0)) as broker:
        for name, fn in (("confluent_kafka", with_confluent), ("kafka_python", with_kafka_python)):
            n, secs = timed(fn, broker.bootstrap, args.count, args.partitions)
            out[f"{name}_records_per_s"] = round(n / secs)
            out[f"{name}_ratio"] = round(n / secs / out["embedded_records_per_s"], 3)  # type: ignore[operator]
        for client in ("confluent-kafka", "kafka-python"):
            lat = latency(client, broker.bootstrap, reader, args.samples)
            out[f"{client}_latency_ms"] = {"p50": round(pct(lat, 0.5), 2), "p99": round(pct(lat, 0.99), 2),
                                           "samples": len(lat)}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:32} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
