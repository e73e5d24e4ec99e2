"""Throughput of the Spark sources and of the replication job, measured side by side on local[2] (run by hand).

    .venv/bin/python bench/bench_spark.py --rows 50000

1. rows/s of ``logtide`` (over CQL, and from the data directory) and of ``logtide-cdc`` (batch), each
   against a trivial Python data source that yields the same number of rows of the same shape as
   Arrow batches (the ceiling a Python source can reach; goal >= 0.5x); each the best of two reads,
   so that every source is measured with warm Python workers;
2. the replication job (``replicate(..., until_caught_up=True)``) against ``logtide replay`` on the
   same CDC log.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import logtide  # noqa: E402

SCHEMA = "pk int, ck int, v text, n bigint, s set<int>"


def make_ceiling_source(rows: int, parts: int):
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class CeilingReader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(parts)]

        def read(self, partition):
            import pyarrow as pa

            lo, hi = rows * partition.value // parts, rows * (partition.value + 1) // parts
            schema = pa.schema([("pk", pa.int32()), ("ck", pa.int32()), ("v", pa.string()), ("n", pa.int64()),
                                ("s", pa.list_(pa.int32()))])
            for start in range(lo, hi, 10_000):
                cols: list[list] = [[], [], [], [], []]
                for i in range(start, min(hi, start + 10_000)):  # Python values, as a real source has them
                    for c, v in zip(cols, (i % 1000, i, f"value-{i}", i * 7, [i, i + 1])):
                        c.append(v)
                yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema)],
                                                 schema=schema)

    class CeilingSource(DataSource):
        @classmethod
        def name(cls):
            return "bench-ceiling"

        def schema(self):
            return "pk int, ck int, v string, n bigint, s array<int>"

        def reader(self, schema):
            return CeilingReader()

    return CeilingSource


def timed(df, runs: int = 2) -> float:
    """The best of ``runs`` full reads (the first one also warms the Python workers: imports, connections)."""
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--skip-job", action="store_true", help="measure the sources only")
    args = ap.parse_args()
    n = args.rows
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    data = work / "data"
    db = logtide.open(data, synchronous="OFF")
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute(f"CREATE TABLE ks.t ({SCHEMA}, PRIMARY KEY (pk, ck)) WITH cdc = {{'enabled': true}}")
    ins = s.prepare("INSERT INTO ks.t (pk, ck, v, n, s) VALUES (?, ?, ?, ?, ?)")
    t0 = time.perf_counter()
    for i in range(n):
        s.execute(ins, [i % 1000, i, f"value-{i}", i * 7, {i, i + 1}])
    print(f"loaded {n} rows in {time.perf_counter() - t0:.1f}s")
    db.close()

    srv = subprocess.Popen([sys.executable, "-m", "logtide", "serve", "--port", "0", "--data-dir", str(data),
                            "--synchronous", "OFF"], stderr=subprocess.PIPE, text=True)
    port = None
    for line in srv.stderr:
        m = re.search(r"listening on \S+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    from pyspark.sql import SparkSession

    from logtide.spark import register
    from logtide.spark.replicate import replicate

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    spark.dataSource.register(make_ceiling_source(n, 4))
    try:
        cql = {"host": "127.0.0.1", "port": str(port), "table": "ks.t"}
        ceiling = timed(spark.read.format("bench-ceiling").load())
        table_cql = timed(spark.read.format("logtide").options(**cql, splits="4").load())
        table_path = timed(spark.read.format("logtide").options(path=str(data), table="ks.t", splits="4").load())
        cdc = timed(spark.read.format("logtide-cdc").options(**cql, confidenceWindow="0s", splits="4").load())
        log_rows = spark.read.format("logtide-cdc").options(**cql, confidenceWindow="0s").load().count()
        print(f"ceiling (trivial Arrow source)   {n / ceiling:10.0f} rows/s")
        print(f"logtide, CQL (4 ranges)          {n / table_cql:10.0f} rows/s  {ceiling / table_cql:.2f}x ceiling")
        print(f"logtide, path (4 ranges)         {n / table_path:10.0f} rows/s  {ceiling / table_path:.2f}x ceiling")
        print(f"logtide-cdc, CQL (4 splits, {log_rows} rows) {log_rows / cdc:10.0f} rows/s  "
              f"{(n / ceiling) and (log_rows / cdc) / (n / ceiling):.2f}x ceiling")

        if args.skip_job:
            return
        t = time.perf_counter()
        q = replicate(spark, f"cql://127.0.0.1:{port}/ks.t", f"cql://127.0.0.1:{port}/ks.copy", work / "ckpt",
                      until_caught_up=True, confidence_window="0s", splits=4)
        q.awaitTermination()
        job = time.perf_counter() - t
        print(f"replicate (snapshot + CDC)       {job:8.1f}s  {log_rows / job:10.0f} log rows/s")
    finally:
        spark.stop()
        srv.terminate()
        srv.wait(60)
    if args.skip_job:
        return
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "logtide", "replay", "ks.t", "--data-dir", str(data),
                          "--target-data-dir", str(work / "replayed")], capture_output=True, text=True)
    rep = time.perf_counter() - t
    print(f"logtide replay                   {rep:8.1f}s  {log_rows / rep:10.0f} log rows/s  ({out.stdout.strip()})")


if __name__ == "__main__":
    main()
