"""Stored record encoding: logtide 0.1's pickles against the checksummed MessagePack records, side by side.

    python bench/bench_records.py [--n 200000] [--rounds 5]

Encodes and decodes the records a write touches (a row with cells and a
collection, a CDC log row, a partition record) with both formats in
interleaved rounds, and prints the median time per record and the size.
The pickle codec is logtide 0.1's, transcribed here as the baseline.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import time

from logtide.mutation.cells import Cell, ComplexColumn, Deletion, Liveness, PartitionData, RowData
from logtide.storage import records

TS = 1_700_000_000_000_000
ROW = RowData((b"\x00\x00\x00\x07",), Liveness(TS), None,
              {"v": Cell(TS, b"\x00\x00\x00\x05"), "w": Cell(TS, b"hello world")},
              {"m": ComplexColumn(Deletion(TS - 1, 1_700_000_000),
                                  {b"\x00\x00\x00\x01": Cell(TS, b"\x00\x00\x00\x02"),
                                   b"\x00\x00\x00\x03": Cell(TS, b"\x00\x00\x00\x04")})})
LOG_VALUES = {"cdc$batch_seq_no": b"\x00\x00\x00\x00", "cdc$operation": b"\x01", "cdc$ttl": None,
              "pk": b"\x00\x00\x00\x07", "ck": b"\x00\x00\x00\x01", "v": b"\x00\x00\x00\x05", "w": b"hello world"}
PART = PartitionData((b"\x00\x00\x00\x07",))
PK, CK, SID, LCK = b"\x00\x00\x00\x07", b"\x80\x00\x00\x01", b"\x12" * 16, b"\x10" * 16 + b"\x80\x00\x00\x00"


# -- logtide 0.1 (pickle protocol 5 of plain tuples) --------------------------------------------------------
def _d(d):
    return None if d is None else (d.timestamp, d.ldt)


def _row_tuple(row):
    return (row.clustering, None if row.marker is None else tuple(row.marker), _d(row.deletion),
            {n: tuple(c) for n, c in row.cells.items()},
            {n: (_d(col.deletion), {k: tuple(c) for k, c in col.cells.items()}) for n, col in row.complex.items()})


def _row_from(t):
    clustering, marker, deletion, cells, complex_ = t
    return RowData(clustering, None if marker is None else Liveness(*marker), None if deletion is None else Deletion(*deletion),
                   {n: Cell(*c) for n, c in cells.items()},
                   {n: ComplexColumn(None if d is None else Deletion(*d), {k: Cell(*c) for k, c in cs.items()})
                    for n, (d, cs) in complex_.items()})


def pickle_cases():
    row = pickle.dumps(_row_tuple(ROW), protocol=5)
    log = pickle.dumps(((b"t" * 16, b"\x00\x00\x00\x00"), (TS, 0, 0x7FFFFFFF), LOG_VALUES), protocol=5)
    part = pickle.dumps((PART.key, None, [], None), protocol=5)

    def dec_log(data):
        clustering, (ts, ttl, ldt), values = pickle.loads(data)
        return RowData(clustering, Liveness(ts, ttl, ldt), None, {n: Cell(ts, v, ttl, ldt) for n, v in values.items()}, {})

    def dec_part(data):
        key, deletion, rts, static = pickle.loads(data)
        return PartitionData(tuple(key), None, [], None)
    return {
        "row: encode": lambda: pickle.dumps(_row_tuple(ROW), protocol=5),
        "row: decode": lambda: _row_from(pickle.loads(row)),
        "log row: encode": lambda: pickle.dumps(((b"t" * 16, b"\x00\x00\x00\x00"), (TS, 0, 0x7FFFFFFF), LOG_VALUES),
                                                protocol=5),
        "log row: decode": lambda: dec_log(log),
        "partition: encode": lambda: pickle.dumps((PART.key, None, [], None), protocol=5),
        "partition: decode": lambda: dec_part(part),
    }, {"row": len(row), "log row": len(log), "partition": len(part)}


def current_cases():
    row = records.encode_row(ROW, 5, PK, CK)
    log = records.encode_uniform_row((b"t" * 16, b"\x00\x00\x00\x00"), TS, 0, 0x7FFFFFFF, LOG_VALUES, 6, SID, LCK)
    part = records.encode_partition(PART, 5, PK)
    return {
        "row: encode": lambda: records.encode_row(ROW, 5, PK, CK),
        "row: decode": lambda: records.decode_row(row, 5, PK, CK),
        "log row: encode": lambda: records.encode_uniform_row((b"t" * 16, b"\x00\x00\x00\x00"), TS, 0, 0x7FFFFFFF,
                                                              LOG_VALUES, 6, SID, LCK),
        "log row: decode": lambda: records.decode_row(log, 6, SID, LCK),
        "partition: encode": lambda: records.encode_partition(PART, 5, PK),
        "partition: decode": lambda: records.decode_partition(part, 5, PK),
    }, {"row": len(row), "log row": len(log), "partition": len(part)}


def timed(fn, n: int) -> float:
    """CPU µs per call (process time: steadier than wall-clock time on a shared machine)."""
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    formats = {"pickle (0.1)": pickle_cases(), "msgpack+crc32": current_cases()}
    samples = {(f, case): [] for f in formats for case in formats[f][0]}
    for _ in range(args.rounds):
        for case in formats["pickle (0.1)"][0]:
            for f, (cases, _) in formats.items():
                samples[(f, case)].append(timed(cases[case], args.n))
    print(f"median CPU µs per record over {args.rounds} interleaved rounds of {args.n}")
    print(f"  {'':20s} {'pickle (0.1)':>14s} {'msgpack+crc32':>14s} {'ratio':>7s}")
    for case in formats["pickle (0.1)"][0]:
        old = statistics.median(samples[("pickle (0.1)", case)])
        new = statistics.median(samples[("msgpack+crc32", case)])
        print(f"  {case:20s} {old:14.2f} {new:14.2f} {new / old:7.2f}")
    print("bytes per record (the new ones include 6 bytes of version, kind and CRC)")
    for kind in ("row", "log row", "partition"):
        old, new = formats["pickle (0.1)"][1][kind], formats["msgpack+crc32"][1][kind]
        print(f"  {kind:20s} {old:14d} {new:14d} {new / old:7.2f}")


if __name__ == "__main__":
    main()
