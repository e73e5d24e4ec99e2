"""Write workload through cassandra-driver against ``logtide serve``, side by side with the embedded session.

    python bench/bench_server.py [--count 100000] [--in-flight 64] [--batch N] [--synchronous FULL] [--json]

The workload is COUNT single-row writes on one table, generated from a fixed
seed: inserts (with a set and a map), updates of regular columns, collection
updates (set add/remove, map put, list append) and deletes of rows and of
collection columns, all as prepared statements.  The embedded run executes
them one after another on a ``Session``; the server run starts
``logtide serve`` in its own process on a free loopback port and sends them
with ``execute_async`` keeping IN_FLIGHT requests outstanding.  Both use a
fresh data directory with the same SQLite ``synchronous`` setting.  Reports
ops/s, p50/p99 latency per request, the CPU time per statement (of the
benchmark process embedded, of the ``logtide serve`` process served) and the
ratio of the two throughputs; served, also the CPU time per statement of the
server's main thread, which runs its event loop.  With ``--batch N`` the statements go as LOGGED
batches of N (``Session.execute_batch`` embedded, a driver ``BatchStatement``
served), one batch per request.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = [
    "CREATE KEYSPACE bench WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TABLE bench.t (pk int, ck int, v text, n bigint, tags set<text>, attrs map<text, int>, "
    "events list<int>, PRIMARY KEY (pk, ck))",
]
STATEMENTS = {
    "insert": "INSERT INTO bench.t (pk, ck, v, n, tags, attrs) VALUES (?, ?, ?, ?, ?, ?)",
    "update": "UPDATE bench.t SET v = ?, n = ? WHERE pk = ? AND ck = ?",
    "set_add": "UPDATE bench.t SET tags = tags + ? WHERE pk = ? AND ck = ?",
    "set_remove": "UPDATE bench.t SET tags = tags - ? WHERE pk = ? AND ck = ?",
    "map_put": "UPDATE bench.t SET attrs[?] = ? WHERE pk = ? AND ck = ?",
    "list_append": "UPDATE bench.t SET events = events + ? WHERE pk = ? AND ck = ?",
    "delete_row": "DELETE FROM bench.t WHERE pk = ? AND ck = ?",
    "delete_column": "DELETE tags FROM bench.t WHERE pk = ? AND ck = ?",
}
MIX = [("insert", 40), ("update", 20), ("set_add", 8), ("set_remove", 4), ("map_put", 8), ("list_append", 5),
       ("delete_row", 10), ("delete_column", 5)]


def workload(count: int, seed: int = 7) -> list[tuple[str, tuple]]:
    """COUNT (statement name, values) pairs over 1000 partitions of up to 100 rows."""
    rng = random.Random(seed)
    names = [n for n, w in MIX for _ in range(w)]
    ops = []
    for i in range(count):
        name = rng.choice(names)
        pk, ck = rng.randrange(1000), rng.randrange(100)
        if name == "insert":
            values: tuple = (pk, ck, f"value-{i}", i, {f"t{i % 7}", "x"}, {"a": i, "b": -i})
        elif name == "update":
            values = (f"updated-{i}", i * 3, pk, ck)
        elif name in ("set_add", "set_remove"):
            values = ({f"t{i % 11}"}, pk, ck)
        elif name == "map_put":
            values = (f"k{i % 13}", i, pk, ck)
        elif name == "list_append":
            values = ([i], pk, ck)
        else:
            values = (pk, ck)
        ops.append((name, values))
    return ops


def process_cpu(pid: int, thread: int | None = None) -> float:
    """CPU seconds (user + system) used so far by process ``pid``, or by its thread ``thread`` (Linux /proc)."""
    with open(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def batches(ops: list[tuple[str, tuple]], size: int) -> list[list[tuple[str, tuple]]]:
    """The statements in requests: one each, or batches of ``size``."""
    size = max(size, 1)
    return [ops[i:i + size] for i in range(0, len(ops), size)]


@dataclass
class Result:
    name: str
    ops: int
    seconds: float
    latencies: list[float]
    cpu_seconds: float = 0.0  # CPU time of the process doing the work (embedded: this one; served: the server)
    loop_cpu_seconds: float | None = None  # served: CPU time of the server's main thread (its event loop)

    @property
    def ops_per_second(self) -> float:
        return self.ops / self.seconds

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ops": self.ops, "seconds": round(self.seconds, 3),
                "ops_per_second": round(self.ops_per_second, 1), "p50_ms": round(self.percentile(50), 3),
                "p99_ms": round(self.percentile(99), 3), "mean_ms": round(statistics.fmean(self.latencies) * 1000, 3),
                "cpu_ms_per_statement": round(self.cpu_seconds * 1000 / self.ops, 3),
                **({} if self.loop_cpu_seconds is None else
                   {"loop_cpu_ms_per_statement": round(self.loop_cpu_seconds * 1000 / self.ops, 3)})}


def run_embedded(ops: list[tuple[str, tuple]], synchronous: str, batch: int = 1) -> Result:
    import logtide

    with tempfile.TemporaryDirectory(prefix="bench-embedded-") as d, logtide.open(d, synchronous=synchronous) as db:
        session = db.session()
        for stmt in SCHEMA:
            session.execute(stmt)
        prepared = {name: session.prepare(text) for name, text in STATEMENTS.items()}
        latencies = []
        clock = time.perf_counter
        cpu0 = time.process_time()
        started = clock()
        for group in batches(ops, batch):
            t0 = clock()
            if batch > 1:
                session.execute_batch("LOGGED", [(prepared[name], values) for name, values in group])
            else:
                session.execute(prepared[group[0][0]], group[0][1])
            latencies.append(clock() - t0)
        return Result("embedded session", len(ops), clock() - started, latencies, time.process_time() - cpu0)


class ServeProcess:
    """``logtide serve`` on a free loopback port in a fresh data directory."""

    def __init__(self, data_dir: str, synchronous: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "logtide", "serve", "--data-dir", data_dir,
                                      "--port", "0", "--kafka-port", "0", "--synchronous", synchronous],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            m = re.search(r"listening on \S+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        else:
            raise RuntimeError("logtide serve did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def run_server(ops: list[tuple[str, tuple]], synchronous: str, in_flight: int, batch: int = 1) -> Result:
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import RoundRobinPolicy
    from cassandra.query import BatchStatement

    logging.getLogger("cassandra").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="bench-server-") as d:
        server = ServeProcess(d, synchronous)
        try:
            profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=60)
            cluster = Cluster(["127.0.0.1"], port=server.port, execution_profiles={EXEC_PROFILE_DEFAULT: profile})
            session = cluster.connect()
            for stmt in SCHEMA:
                session.execute(stmt)
            prepared = {name: session.prepare(text) for name, text in STATEMENTS.items()}
            requests = batches(ops, batch)
            latencies = [0.0] * len(requests)
            slots = threading.Semaphore(in_flight)
            finished = threading.Event()
            remaining = [len(requests)]
            errors: list[Exception] = []
            lock = threading.Lock()
            clock = time.perf_counter

            def done(_: Any, i: int, t0: float) -> None:
                latencies[i] = clock() - t0
                slots.release()
                with lock:
                    remaining[0] -= 1
                    if remaining[0] == 0:
                        finished.set()

            def failed(exc: Exception, i: int, t0: float) -> None:
                errors.append(exc)
                done(None, i, t0)

            cpu0 = process_cpu(server.proc.pid)
            loop_cpu0 = process_cpu(server.proc.pid, server.proc.pid)
            started = clock()
            for i, group in enumerate(requests):
                slots.acquire()
                t0 = clock()
                if batch > 1:
                    request: Any = BatchStatement()
                    for name, values in group:
                        request.add(prepared[name], values)
                    future = session.execute_async(request)
                else:
                    future = session.execute_async(prepared[group[0][0]], group[0][1])
                future.add_callbacks(done, failed, callback_args=(i, t0), errback_args=(i, t0))
            finished.wait()
            elapsed = clock() - started
            cpu = process_cpu(server.proc.pid) - cpu0
            loop_cpu = process_cpu(server.proc.pid, server.proc.pid) - loop_cpu0
            cluster.shutdown()
            if errors:
                raise RuntimeError(f"{len(errors)} statements failed, first: {errors[0]!r}")
            return Result(f"logtide serve, cassandra-driver, {in_flight} in flight", len(ops), elapsed, latencies,
                          cpu, loop_cpu)
        finally:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="statements per run (default 100000)")
    parser.add_argument("--in-flight", type=int, default=64, help="driver requests outstanding (default 64)")
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL", "OFF"), default="FULL",
                        help="SQLite synchronous setting for both runs (default FULL, as logtide serve runs)")
    parser.add_argument("--batch", type=int, default=1, help="statements per LOGGED batch (default 1: no batches)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    ops = workload(args.count)
    embedded = run_embedded(ops, args.synchronous, args.batch)
    served = run_server(ops, args.synchronous, args.in_flight, args.batch)
    results = [embedded.as_dict(), served.as_dict()]
    ratio = served.ops_per_second / embedded.ops_per_second
    if args.json:
        print(json.dumps({"count": args.count, "synchronous": args.synchronous, "batch": args.batch, "results": results,
                          "server_to_embedded": round(ratio, 3)}, indent=2))
        return 0
    per = f", batches of {args.batch}" if args.batch > 1 else ""
    print(f"{args.count} writes{per}, synchronous={args.synchronous}")
    print(f"{'run':<48} {'ops/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms/stmt':>12}")
    for r in results:
        print(f"{r['name']:<48} {r['ops_per_second']:>9.0f} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} "
              f"{r['cpu_ms_per_statement']:>12.3f}")
    print(f"server / embedded throughput: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
