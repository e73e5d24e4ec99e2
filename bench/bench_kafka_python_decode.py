"""kafka-python's own record decoding, with no broker and no network: its ceiling on changefeed topics.

    python bench/bench_kafka_python_decode.py [--records 5000] [--rounds 5]

Builds one record batch v2 of changefeed-sized records (~150-byte JSON values, null keys) with the broker's
own encoder (logtide/kafka/records.py) and hands it, in a loop, to the code kafka-python runs for every
partition of a Fetch response (``Fetcher.PartitionRecords``: CRC-32C check, record decoding, one
ConsumerRecord each).  Records/s here bound what a kafka-python consumer can reach whatever the broker does
(docs/kafka.md "Performance").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logtide.kafka.records import Record, encode_batch  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from kafka import TopicPartition
    from kafka.consumer.fetcher import Fetcher
    from kafka.record import MemoryRecords
    now = int(time.time() * 1000)
    value = b'{"update":{"n":1,"v":"value 00000001value 00000001value 00000001value 00000001"},"key":[1],' \
            b'"ts":[1732420000000,0],"oldImage":{"n":1,"v":"value 00000001value 00000001"}}'
    batch = encode_batch([Record(i, now + i // 100, None, value) for i in range(args.records)])
    tp = TopicPartition("ks.t.feed", 0)
    best = 0.0
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        part = Fetcher.PartitionRecords(0, tp, MemoryRecords(batch))
        n = len(part.take())
        best = max(best, n / (time.perf_counter() - t0))
    raw = 0.0
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        mr, n = MemoryRecords(batch), 0
        while (b := mr.next_batch()) is not None:
            for _r in b:
                n += 1
        raw = max(raw, n / (time.perf_counter() - t0))
    print(f"kafka-python PartitionRecords (CRC + decode + ConsumerRecord): {best:,.0f} records/s (best of "
          f"{args.rounds})")
    print(f"kafka-python MemoryRecords iteration alone:                    {raw:,.0f} records/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
