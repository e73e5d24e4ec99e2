"""Changefeed topics read over the Kafka protocol vs read through the embedded reader.

    python bench/bench_kafka.py [--count 100000] [--partitions 4] [--samples 200] [--broker thread|process] [--json]

Fills one topic with COUNT change records (~150-byte JSON values) and reads it
whole, once by iterating the reader directly and once each with
confluent-kafka and kafka-python consuming over the Kafka endpoint (manual
assignment from the beginning).  Each client first reads the one record of a
warm-up topic and asks for the timed topic's metadata, so the timed read
starts connected (a client spends ~0.5 s connecting and learning the cluster
before its first Fetch, and librdkafka learns a newly assigned topic only on
its once-a-second topic scan; the figure with connecting included is printed
too: librdkafka fetches ahead, so timing from the first record of the topic
itself would flatter it), reporting records/s and the ratio to the embedded reader (goal >= 0.5).  Then measures commit-to-consumer latency: a
row is written every 20 ms while a group consumer of each client long-polls
the topic; the latency is from the table write starting (so it includes the
write's commit) to the client handing the message over (p50/p99; goal p99 <= 20 ms).

The topics are real changefeeds in a fresh data directory, filled with CQL
INSERTs through an embedded session; the embedded figure iterates
``db.changefeeds``, which ``BackgroundKafka`` then serves in this process
(``--broker thread``, the default).  The broker keeps encoded batches
(logtide/kafka/batches.py), so kafka-python, reading second, is served
batches confluent-kafka's read left behind: its figure is its own decoding.  With ``--broker process`` the database
is closed and a ``logtide serve --kafka-port auto`` process serves it instead
(the latency rows are then written with cassandra-driver INSERTs to that
server, so their figure includes a CQL round trip).  Run
from the repository root.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import tempfile
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logtide.kafka import BackgroundKafka, KafkaConfig  # noqa: E402

PATH = "bench/t/feed"
TOPIC = "bench.t.feed"


class Changefeeds:
    """Real changefeeds made and written with CQL through ``session`` (embedded, or the driver's on a server)."""

    def __init__(self, session) -> None:
        self.session = session
        self._inserts: dict[str, object] = {}

    def create(self, path: str, partitions: int) -> None:
        ks, table, feed = path.split("/")
        self.session.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                             "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        self.session.execute(f"CREATE TABLE {ks}.{table} (id int PRIMARY KEY, n int, v text)")
        self.session.execute(f"ALTER TABLE {ks}.{table} ADD CHANGEFEED {feed} WITH (MODE = 'NEW_AND_OLD_IMAGES', "
                             f"FORMAT = 'JSON', TOPIC_MIN_ACTIVE_PARTITIONS = {partitions})")
        self._inserts[path] = self.session.prepare(f"INSERT INTO {ks}.{table} (id, n, v) VALUES (?, ?, ?)")

    def write(self, path: str, i: int, partitions: int) -> None:
        self.session.execute(self._inserts[path], [i, i, f"value {i:08d}" * 4])


KAFKA_LINE = re.compile(r"Kafka endpoint on (\S+):(\d+)")


@contextlib.contextmanager
def served(data_dir: str):
    """``logtide serve`` on ``data_dir`` (free ports): (Kafka bootstrap, a driver session on its CQL port)."""
    from tests.ops.serving import ServeProcess
    from tests.server.conftest import cluster
    with ServeProcess([sys.executable, "-m", "logtide", "serve", "--data-dir", data_dir, "--port", "0",
                       "--metrics-port", "0", "--kafka-port", "auto", "--synchronous", "OFF"]) as srv:
        port = srv.wait_listening()
        deadline = time.monotonic() + 60
        while not any(KAFKA_LINE.search(line) for line in srv.lines):
            if time.monotonic() > deadline:
                raise SystemExit("no Kafka endpoint:\n" + srv.output())
            time.sleep(0.05)
        m = next(KAFKA_LINE.search(line) for line in srv.lines if KAFKA_LINE.search(line))
        cl = cluster(port)
        try:
            yield f"127.0.0.1:{m.group(2)}", cl.connect()
        finally:
            cl.shutdown()
            srv.stop()


WARM_PATH = "bench/w/feed"  # one record: each client reads it first, so the timed read starts connected
WARM_TOPIC = "bench.w.feed"


def fill(source, count: int, partitions: int) -> None:
    source.create(WARM_PATH, 1)
    source.write(WARM_PATH, 0, 1)
    source.create(PATH, partitions)
    for i in range(count):
        source.write(PATH, i, partitions)


def embedded(reader, partitions: int) -> int:
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


def with_confluent(bootstrap: str, count: int, partitions: int) -> tuple[int, float, float]:
    """(records, seconds including connecting, seconds once connected)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    t0 = time.perf_counter()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-ck", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(WARM_TOPIC, 0, OFFSET_BEGINNING)])
    while not [m for m in c.consume(1, 1.0) if not m.error()]:
        pass
    c.list_topics(TOPIC, timeout=30)  # learnt before assign: else librdkafka's 1 s topic scan is timed
    t1 = time.perf_counter()
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
    n = 0
    while n < count:  # never ask for more than is left: consume() would wait out its timeout
        n += sum(1 for m in c.consume(min(10000, count - n), 1.0) if not m.error())
    t2 = time.perf_counter()
    c.close()
    return n, t2 - t0, t2 - t1


def with_kafka_python(bootstrap: str, count: int, partitions: int) -> tuple[int, float, float]:
    """(records, seconds including connecting, seconds once connected)."""
    from kafka import KafkaConsumer, TopicPartition
    t0 = time.perf_counter()
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, max_poll_records=10000)
    warm = TopicPartition(WARM_TOPIC, 0)
    c.assign([warm])
    c.seek_to_beginning(warm)
    while not c.poll(1000):
        pass
    c.partitions_for_topic(TOPIC)  # the topic's metadata is learnt before the timed read, as for confluent-kafka
    t1 = time.perf_counter()
    tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    n = 0
    while n < count:
        n += sum(len(v) for v in c.poll(1000).values())
    t2 = time.perf_counter()
    c.close()
    return n, t2 - t0, t2 - t1


def timed(fn, *args) -> tuple[int, float]:
    t0 = time.perf_counter()
    n = fn(*args)
    return n, time.perf_counter() - t0


def latency(client: str, bootstrap: str, source, samples: int) -> list[float]:
    """Milliseconds from a table write returning to the consumer receiving its record."""
    path = f"lat/{client.replace('-', '_')}/feed"
    source.create(path, 1)
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
                    got.append((time.perf_counter() - sent[json.loads(m.value())["key"][0]]) * 1000)
            c.close()
        else:
            from kafka import KafkaConsumer
            c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="lat", auto_offset_reset="earliest",
                              fetch_max_wait_ms=500)
            while len(got) < samples:
                for msgs in c.poll(500).values():
                    for m in msgs:
                        got.append((time.perf_counter() - sent[json.loads(m.value)["key"][0]]) * 1000)
                if c.assignment():
                    ready.set()
            c.close()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    ready.wait(60)
    time.sleep(1.0)  # the first fetch is in flight: measure the long poll, not the start
    for i in range(samples):
        sent[i] = time.perf_counter()  # before the write: the figure includes the write's own commit
        source.write(path, i, 1)
        time.sleep(0.02)
    t.join(120)
    return got


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def clients(bootstrap: str, source: Changefeeds, args, out: dict) -> None:
    for name, fn in (("confluent_kafka", with_confluent), ("kafka_python", with_kafka_python)):
        n, whole, connected = fn(bootstrap, args.count, args.partitions)
        out[f"{name}_records_per_s"] = round(n / connected)
        out[f"{name}_ratio"] = round(n / connected / out["embedded_records_per_s"], 3)
        out[f"{name}_with_connecting_records_per_s"] = round(n / whole)
    for client in ("confluent-kafka", "kafka-python"):
        lat = latency(client, bootstrap, source, args.samples)
        out[f"{client}_latency_ms"] = {"p50": round(pct(lat, 0.5), 2), "p99": round(pct(lat, 0.99), 2),
                                       "samples": len(lat)}


def main() -> int:
    import logtide
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--broker", choices=("thread", "process"), default="thread",
                    help="thread: BackgroundKafka in this process (default); process: a `logtide serve` process")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as data_dir:
        db = logtide.open(data_dir, synchronous="OFF")
        source = Changefeeds(db.session())
        t0 = time.perf_counter()
        fill(source, args.count, args.partitions)
        out: dict = {"count": args.count, "broker": args.broker, "fill_s": round(time.perf_counter() - t0, 1)}
        n, secs = timed(embedded, db.changefeeds, args.partitions)
        out["embedded_records_per_s"] = round(n / secs)
        if args.broker == "thread":
            with BackgroundKafka(db.changefeeds, KafkaConfig(port=0)) as broker:
                clients(broker.bootstrap, source, args, out)
            db.close()
        else:
            db.close()
            with served(data_dir) as (bootstrap, session):
                clients(bootstrap, Changefeeds(session), args, out)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:32} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
