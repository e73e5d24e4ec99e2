"""Where a Kafka client's read of a changefeed spends CPU: the ``logtide serve`` process vs the client's.

    python bench/kafka_cpu_split.py DATA_DIR [--count N] [--partitions 4]

Serves DATA_DIR (filled as ``bench/bench_kafka.py`` fills it) from a ``logtide serve`` process and reads the
topic whole with each client in this process, from a fresh server (nothing kept: the broker reads and
encodes every batch) and again (batches kept), reporting records/s and the CPU seconds each process spent
(the server's from /proc, this process's from getrusage, client library threads included; the wall time
includes connecting), and first the embedded reader's records/s and CPU a record.  CPU a record does not
depend on the machine's load as records/s does: a client whose own CPU a record exceeds twice the embedded
reader's cannot reach 0.5x of it on the same machine, whatever the server does.
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_kafka import with_confluent, with_kafka_python  # noqa: E402

KAFKA_LINE = re.compile(r"Kafka endpoint on (\S+):(\d+)")


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, clock ticks of 10 ms


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    from tests.ops.serving import ServeProcess
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir")
    ap.add_argument("--count", type=int, default=60000)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args()
    import logtide
    from bench.bench_kafka import embedded
    db = logtide.open(args.data_dir, synchronous="OFF")
    c0, w0 = time.process_time(), time.perf_counter()
    n = embedded(db.changefeeds, args.partitions)
    c1, w1 = time.process_time(), time.perf_counter()
    db.close()
    print(f"embedded reader {'':13} {n / (w1 - w0):9,.0f} records/s; CPU {(c1 - c0) / n * 1e6:5.2f} us a record")
    for name, fn in (("confluent-kafka", with_confluent), ("kafka-python", with_kafka_python)):
        with tempfile.TemporaryDirectory(prefix="cpu-split-") as tmp:
            data = shutil.copytree(args.data_dir, Path(tmp) / "d")
            with ServeProcess([sys.executable, "-m", "logtide", "serve", "--data-dir", str(data), "--port", "0",
                               "--metrics-port", "0", "--kafka-port", "auto", "--synchronous", "OFF"]) as srv:
                srv.wait_listening()
                deadline = time.monotonic() + 60
                while not any(KAFKA_LINE.search(line) for line in srv.lines) and time.monotonic() < deadline:
                    time.sleep(0.05)
                port = next(KAFKA_LINE.search(line) for line in srv.lines if KAFKA_LINE.search(line)).group(2)
                for run in ("fresh server", "batches kept"):
                    s0, c0, w0 = proc_cpu(srv.proc.pid), self_cpu(), time.perf_counter()
                    n, _whole, connected = fn(f"127.0.0.1:{port}", args.count, args.partitions)
                    s1, c1, w1 = proc_cpu(srv.proc.pid), self_cpu(), time.perf_counter()
                    print(f"{name:15} {run:13} {n / connected:9,.0f} records/s; wall {w1 - w0:5.2f} s, server CPU "
                          f"{s1 - s0:5.2f} s ({(s1 - s0) / n * 1e6:5.2f} us a record), client CPU {c1 - c0:5.2f} s "
                          f"({(c1 - c0) / n * 1e6:5.2f} us a record)", flush=True)
                srv.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
