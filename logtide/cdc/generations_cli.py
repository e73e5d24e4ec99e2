"""``logtide cdc generations`` and ``logtide cdc streams KEYSPACE.TABLE``: what CDC consumers read.

ScyllaDB's CDC consumers (scylla-cdc-java, -go, -rust) find streams in
``system_distributed.cdc_generation_timestamps`` (one row per generation:
``time``, ``expired``) and ``system_distributed.cdc_streams_descriptions_v2``
(per generation and token range: ``range_end``, ``streams``).  These commands
print the same rows, read from the data directory without writing to it (a
running ``logtide serve`` may hold it), times as cqlsh shows ``timestamp``
values (milliseconds, UTC).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from typing import Any, TextIO

from ..errors import CqlError
from .streams import Generation


def add_cdc(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide cdc`` and its subcommands."""
    p = subparsers.add_parser(
        "cdc",
        description="List what ScyllaDB CDC consumers read from system_distributed: the CDC generations "
                    "(cdc_generation_timestamps) and each generation's streams by token range "
                    "(cdc_streams_descriptions_v2). Reads --data-dir without writing (works while a server runs).")
    sub = p.add_subparsers(dest="cdc_command", metavar="COMMAND", required=True)
    g = sub.add_parser("generations", parents=[parent], help="every CDC generation: start time, expiry, streams",
                       description="Every CDC generation, oldest first: its start time (the time column of "
                                   "system_distributed.cdc_generation_timestamps), when it expired, its token "
                                   "ranges and streams.")
    g.set_defaults(run=run_generations)
    s = sub.add_parser("streams", parents=[parent], help="the CDC streams of a table, by token range",
                       description="The streams of the current CDC generation (--all: of every generation) "
                                   "in which KEYSPACE.TABLE's log is written, one line per stream: generation "
                                   "time, range_end and stream_id, as in "
                                   "system_distributed.cdc_streams_descriptions_v2.")
    s.add_argument("table", metavar="KEYSPACE.TABLE", help="a table with CDC enabled")
    s.add_argument("--all", action="store_true", help="every generation, not only the current one")
    s.set_defaults(run=run_streams)
    return p


def generation_time(micros: int) -> str:
    """A generation timestamp as cqlsh prints the ``timestamp`` column (millisecond precision, UTC)."""
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(
        microseconds=micros - micros % 1000)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}" + "+0000"


def print_generations(out: TextIO, generations: tuple[Generation, ...]) -> None:
    """One line per generation: time, expired, ranges, streams (with a header)."""
    rows = [("time", "expired", "ranges", "streams")]
    for g in generations:
        rows.append((generation_time(g.timestamp), "-" if g.expired is None else generation_time(g.expired),
                     str(len(g.range_ends)), str(len(g.all_streams()))))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        out.write("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n")


def print_streams(out: TextIO, generations: tuple[Generation, ...]) -> None:
    """One line per stream: generation time, range_end, stream_id (0x hex)."""
    out.write("time                           range_end             stream_id\n")
    for g in generations:
        for end, streams in zip(g.range_ends, g.streams):
            for stream in sorted(streams):
                out.write(f"{generation_time(g.timestamp)}  {end:<20d}  0x{stream.hex()}\n")


def _load(ns: argparse.Namespace) -> tuple[Any, tuple[Generation, ...]]:
    from ..observe import open_store, read_catalog

    store = open_store(ns.data_dir)
    try:
        catalog, gens = read_catalog(store)
    finally:
        store.close()
    return catalog, tuple(gens.generations) if gens else ()


def run_generations(ns: argparse.Namespace) -> int:
    try:
        _, gens = _load(ns)
    except CqlError as e:
        print(f"logtide cdc generations: error: {e}", file=sys.stderr)
        return 2
    print_generations(sys.stdout, gens)
    return 0


def run_streams(ns: argparse.Namespace) -> int:
    from ..observe import cdc_tables

    ks, _, table = ns.table.partition(".")
    if not table:
        print(f"logtide cdc streams: error: expected KEYSPACE.TABLE, got {ns.table!r}", file=sys.stderr)
        return 2
    try:
        catalog, gens = _load(ns)
        catalog.table(ks, table)  # "unconfigured table" when missing
    except CqlError as e:
        print(f"logtide cdc streams: error: {e}", file=sys.stderr)
        return 2
    if not any((c.keyspace, c.table) == (ks, table) for c in cdc_tables(catalog)):
        print(f"logtide cdc streams: error: CDC is not enabled on {ks}.{table}", file=sys.stderr)
        return 2
    print_streams(sys.stdout, gens if ns.all else gens[-1:])
    return 0
