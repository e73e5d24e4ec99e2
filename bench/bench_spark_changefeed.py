"""The changefeed in Spark: read throughput over Kafka vs the embedded reader, and the lakehouse job's latency (by hand).

    .venv/bin/python bench/bench_spark_changefeed.py --records 20000 --latency-seconds 60

1. records/s of ``logtide-changefeed`` as a batch read of the whole topic (every column typed, written to
   Spark's ``noop`` sink) over the Kafka protocol (``bootstrap``) and through the embedded reader
   (``path``), in one run on the same topic;
2. the lakehouse job (``--format delta``, over Kafka, a 1-second trigger): seconds from a write's commit
   (the CQL INSERT returned) to its row being readable in the Delta table, p50/p99 over one write every
   ``--interval`` seconds for ``--latency-seconds``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import logtide  # noqa: E402

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
TABLE = "CREATE TABLE ks.t (pk int, ck int, v text, n bigint, s set<int>, PRIMARY KEY (pk, ck))"
FEED = ("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
        "TOPIC_MIN_ACTIVE_PARTITIONS = 4)")


def serve(data: Path) -> tuple[subprocess.Popen, int, int]:
    """``logtide serve`` with CQL and Kafka on free ports: (process, CQL port, Kafka port)."""
    srv = subprocess.Popen([sys.executable, "-m", "logtide", "serve", "--port", "0", "--metrics-port", "0",
                            "--kafka-port", "auto", "--data-dir", str(data), "--synchronous", "OFF"],
                           stderr=subprocess.PIPE, text=True)
    cql = kafka = None
    assert srv.stderr is not None
    for line in srv.stderr:
        m = re.search(r"listening on \S+:(\d+)", line)
        cql = int(m.group(1)) if m else cql
        k = re.search(r"Kafka endpoint on \S+:(\d+)", line)
        kafka = int(k.group(1)) if k else kafka
        if cql and kafka:
            break
    threading.Thread(target=lambda: [None for _ in srv.stderr], daemon=True).start()  # keep draining the log
    assert cql and kafka, "logtide serve did not start"
    return srv, cql, kafka


def timed(df) -> float:
    t = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs)) - 1))]


def latency(spark, work: Path, cql_port: int, kafka: int, seconds: float, interval: float) -> list[float]:
    """Seconds from each INSERT's return to its row in the Delta table, the job running with a 1 s trigger."""
    from cassandra.cluster import Cluster
    from deltalake import DeltaTable

    from logtide.spark import lakehouse

    target = work / "delta"
    q = lakehouse(spark, f"kafka://127.0.0.1:{kafka}/ks/t/f", target, "delta", trigger_interval="1 second",
                  options={"cqlPort": str(cql_port), "startingOffsets": "latest"})
    cluster = Cluster(["127.0.0.1"], port=cql_port)
    session = cluster.connect()
    committed: dict[int, float] = {}
    seen: dict[int, float] = {}
    stop = threading.Event()

    def poll() -> None:
        dt, version = None, -1
        while not stop.is_set():
            try:
                dt = dt or DeltaTable(str(target))
                dt.update_incremental()
            except Exception:  # noqa: BLE001 - not created yet
                time.sleep(0.05)
                continue
            if dt.version() != version:
                version = dt.version()
                now = time.monotonic()
                for pk in dt.to_pyarrow_table(columns=["pk"], filters=[("ck", "=", -1)]).column("pk").to_pylist():
                    seen.setdefault(pk, now)
            time.sleep(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        while not q.lastProgress:  # the query has run its first batch: writes from now on are read
            time.sleep(0.2)
        ins = session.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (?, -1, 'latency')")
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end:
            session.execute(ins, [1_000_000 + i])
            committed[1_000_000 + i] = time.monotonic()
            i += 1
            time.sleep(interval)
        deadline = time.monotonic() + 120
        while len(seen.keys() & committed.keys()) < len(committed) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        poller.join(10)
        q.stop()
        cluster.shutdown()
    return [seen[k] - committed[k] for k in committed if k in seen]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000, help="rows written (one record each) before the reads")
    ap.add_argument("--latency-seconds", type=float, default=60)
    ap.add_argument("--interval", type=float, default=0.2, help="seconds between the latency writes")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-spark-cf-"))
    data = work / "data"
    with logtide.open(data, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute(TABLE)
        s.execute(FEED)
        ins = s.prepare("INSERT INTO ks.t (pk, ck, v, n, s) VALUES (?, ?, ?, ?, ?)")
        t0 = time.perf_counter()
        for i in range(args.records):
            s.execute(ins, [i % 1000, i, f"value-{i}", i * 7, {i, i + 1}])
        print(f"loaded {args.records} rows in {time.perf_counter() - t0:.1f}s")
    srv, cql_port, kafka = serve(data)
    from pyspark.sql import SparkSession

    from logtide.spark import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        over_kafka = {"topic": "ks/t/f", "bootstrap": f"127.0.0.1:{kafka}", "cqlPort": str(cql_port)}
        local = {"topic": "ks/t/f", "path": str(data)}
        records = spark.read.format("logtide-changefeed").options(**local).load().count()  # also warms the workers
        t_kafka = timed(spark.read.format("logtide-changefeed").options(**over_kafka).load())
        t_path = timed(spark.read.format("logtide-changefeed").options(**local).load())
        print(f"logtide-changefeed, Kafka protocol     {records / t_kafka:10.0f} records/s  ({records} records, "
              f"4 partitions, {t_kafka:.1f}s)")
        print(f"logtide-changefeed, embedded reader    {records / t_path:10.0f} records/s  ({t_path:.1f}s; "
              f"Kafka = {t_path / t_kafka:.2f}x of it)")
        lat = latency(spark, work, cql_port, kafka, args.latency_seconds, args.interval)
        if lat:
            print(f"lakehouse delta, 1 s trigger, Kafka: commit -> row in Delta over {len(lat)} writes: "
                  f"p50 {statistics.median(lat):.2f}s  p99 {percentile(lat, 99):.2f}s  max {max(lat):.2f}s")
        else:
            print("lakehouse delta: no write reached the Delta table")
    finally:
        spark.stop()
        srv.terminate()
        srv.wait(60)


if __name__ == "__main__":
    main()
