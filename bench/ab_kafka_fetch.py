"""A/B of the Kafka endpoint's Fetch path on one filled topic: the broker's batches built from TopicRecords
(before ``read_rows``/``encode_rows``) vs straight from stored rows, alternating in one process.

    python bench/ab_kafka_fetch.py DATA_DIR [--count N] [--rounds 3]
    python bench/ab_kafka_fetch.py --latency [--samples 200] [--rounds 3]

With ``--latency``: commit-to-consumer latency (``bench_kafka.latency``, a fresh database each run) with the
long-poll wait and the fetch after it on one thread (after) vs handed back through the event loop (before).

DATA_DIR holds the topics ``bench/bench_kafka.py`` fills (``bench/t/feed`` with N records in 4 partitions
and the warm-up topic), e.g. made once with ``bench.bench_kafka.fill``.  Each round measures the embedded
reader, then a fresh broker (empty batch cache) read by confluent-kafka and then kafka-python, as the bench
does.  On a shared machine the figures move with its load; alternating the versions is what makes them
comparable (docs/kafka.md "Performance").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import logtide  # noqa: E402
from bench.bench_kafka import Changefeeds, embedded, latency, pct, with_confluent, with_kafka_python  # noqa: E402
from logtide.kafka import BackgroundKafka, KafkaConfig  # noqa: E402
from logtide.kafka import batches as B  # noqa: E402
from logtide.kafka import handlers as H  # noqa: E402
from logtide.kafka import records as R  # noqa: E402


def _load_from_topic_records(self, key, max_bytes, format=None):
    """The batch cache's load before read_rows: TopicRecord objects, re-tupled, then encoded (the encoder
    itself is today's; the figures in docs/kafka.md were taken with the one before, which also took headers)."""
    path, partition, offset = key
    recs = self.reader.read(path, partition, offset, B.MAX_RECORDS_PER_BATCH, max_bytes)
    if not recs:
        return None
    last = recs[-1]
    batch = B.Batch(R.encode_topic_records(recs), last.offset + 1,
                    (last.write_time_ms, last.key, last.value), max_bytes)
    if recs[0].offset == offset:
        self._keep(key, batch)
    return batch


async def _wait_then_hop(conn, req, version, waits, timeout):
    """The long poll before: wait on a wait thread, back to the event loop, then fetch on the read pool."""
    import asyncio
    loop = asyncio.get_running_loop()
    futures = [loop.run_in_executor(conn.broker.wait_pool, conn.topics.reader.wait, path, positions, timeout)
               for path, positions in waits.items()]
    _done, pending = await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    for f in pending:
        f.cancel()
    return await conn.blocking(H._fetch_once, conn, req, version)


def latencies(rounds: int, samples: int) -> None:
    import tempfile
    versions = {"before": _wait_then_hop, "after": H._wait_any}
    for _ in range(rounds):
        for name, wait in versions.items():
            H._wait_any = wait
            with tempfile.TemporaryDirectory(prefix="ab-kafka-") as d:
                db = logtide.open(d, synchronous="OFF")
                try:
                    with BackgroundKafka(db.changefeeds, KafkaConfig(port=0)) as broker:
                        out = []
                        for client in ("confluent-kafka", "kafka-python"):
                            lat = latency(client, broker.bootstrap, Changefeeds(db.session()), samples)
                            out.append(f"{client} p50 {pct(lat, 0.5):6.2f} p99 {pct(lat, 0.99):7.2f} ms")
                    print(f"{name:6} " + "   ".join(out), flush=True)
                finally:
                    db.close()
    H._wait_any = versions["after"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir", nargs="?")
    ap.add_argument("--count", type=int, default=60000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency", action="store_true")
    ap.add_argument("--samples", type=int, default=200)
    args = ap.parse_args()
    if args.latency:
        latencies(args.rounds, args.samples)
        return 0
    versions = {"before": _load_from_topic_records, "after": B.BatchCache._load}
    figures: dict[str, dict[str, list[float]]] = {v: {"embedded": [], "confluent": [], "kafka-python": []}
                                                  for v in versions}
    db = logtide.open(args.data_dir, synchronous="OFF")
    try:
        for _ in range(args.rounds):
            for name, load in versions.items():
                B.BatchCache._load = load
                t0 = time.perf_counter()
                n = embedded(db.changefeeds, 4)
                emb = n / (time.perf_counter() - t0)
                with BackgroundKafka(db.changefeeds, KafkaConfig(port=0)) as broker:
                    n1, _, s1 = with_confluent(broker.bootstrap, args.count, 4)
                    n2, _, s2 = with_kafka_python(broker.bootstrap, args.count, 4)
                f = figures[name]
                f["embedded"].append(emb)
                f["confluent"].append(n1 / s1)
                f["kafka-python"].append(n2 / s2)
                print(f"{name:6} embedded {emb:9,.0f}  confluent {n1 / s1:9,.0f} ({n1 / s1 / emb:.2f}x)  "
                      f"kafka-python {n2 / s2:9,.0f} ({n2 / s2 / emb:.2f}x)", flush=True)
    finally:
        B.BatchCache._load = versions["after"]
        db.close()
    for name, f in figures.items():
        e, c, k = (statistics.mean(f[x]) for x in ("embedded", "confluent", "kafka-python"))
        print(f"mean {name:6} embedded {e:9,.0f}  confluent {c:9,.0f} ({c / e:.2f}x)  "
              f"kafka-python {k:9,.0f} ({k / e:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
