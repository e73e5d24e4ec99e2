"""``logtide topic ...`` and ``logtide changefeed ...``: YDB's ``ydb topic`` commands on changefeed topics.

They open the data directory with :class:`DirectoryTopicReader`, so they
work while a server owns the directory (read-only snapshots; consumer
changes and commits are short SQLite transactions of their own).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from ..errors import CommandFailure

FORMATS = ("single-message", "newline-delimited", "concatenated")


def add_topic(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide topic read`` and ``logtide topic consumer add|drop|list``."""
    p = subparsers.add_parser("topic",
                              description="Changefeed topics, addressed as KEYSPACE/TABLE/CHANGEFEED.")
    sub = p.add_subparsers(dest="topic_command", metavar="COMMAND", required=True)
    r = sub.add_parser("read", parents=[parent], help="print a topic's records",
                       description="Prints records partition by partition in offset order. Without --consumer every "
                                   "partition is read from its start offset and nothing is committed; with "
                                   "--consumer reading starts at its committed offsets and, with --commit true "
                                   "(the default), what was printed is committed.")
    r.add_argument("path", metavar="KEYSPACE/TABLE/CHANGEFEED")
    r.add_argument("--consumer", "-c", help="read as this consumer (from its committed offsets)")
    r.add_argument("--format", "-f", choices=FORMATS, default="single-message",
                   help="single-message: the first record only (default, as ydb topic read); newline-delimited: "
                        "one record per line; concatenated: records one after another. The output ends with a "
                        "newline; on a terminal, standard error says how many records are left unread")
    r.add_argument("--partition-ids", help="comma-separated partition ids (default: all)")
    r.add_argument("--limit", type=int, default=0, help="at most N records (0: no limit)")
    r.add_argument("--wait", "-w", action="store_true", help="wait for the first record if there is none yet")
    r.add_argument("--timeout", type=float, default=None,
                   help="with --wait: give up after this many seconds (default: wait forever)")
    r.add_argument("--commit", choices=("true", "false"), default="true",
                   help="with --consumer: commit what was printed (default true)")
    r.set_defaults(run=run_read)
    c = sub.add_parser("consumer", help="add, drop or list a topic's consumers")
    csub = c.add_subparsers(dest="consumer_command", metavar="COMMAND", required=True)
    a = csub.add_parser("add", parents=[parent], help="add a consumer")
    a.add_argument("path", metavar="KEYSPACE/TABLE/CHANGEFEED")
    a.add_argument("--consumer", "-c", required=True)
    a.add_argument("--important", action="store_true", help="retention keeps what it has not committed")
    a.add_argument("--starting-message-timestamp", type=int, default=0, metavar="UNIX_SECONDS",
                   help="skip records written before this time")
    a.set_defaults(run=run_consumer_add)
    d = csub.add_parser("drop", parents=[parent], help="drop a consumer and its offsets")
    d.add_argument("path", metavar="KEYSPACE/TABLE/CHANGEFEED")
    d.add_argument("--consumer", "-c", required=True)
    d.set_defaults(run=run_consumer_drop)
    ls = csub.add_parser("list", parents=[parent], help="consumers with committed offsets and lag per partition")
    ls.add_argument("path", metavar="KEYSPACE/TABLE/CHANGEFEED")
    ls.set_defaults(run=run_consumer_list)
    return p


def add_changefeed(subparsers: "argparse._SubParsersAction",
                   parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide changefeed list|describe``."""
    p = subparsers.add_parser("changefeed",
                              description="The changefeeds of the database in --data-dir.")
    sub = p.add_subparsers(dest="changefeed_command", metavar="COMMAND", required=True)
    ls = sub.add_parser("list", parents=[parent], help="every changefeed with its mode, format, state and size")
    ls.set_defaults(run=run_list)
    d = sub.add_parser("describe", parents=[parent], help="a changefeed's options, state, partitions, consumers")
    d.add_argument("path", metavar="KEYSPACE/TABLE/CHANGEFEED")
    d.set_defaults(run=run_describe)
    return p


def _guarded(fn: Any, ns: argparse.Namespace, out: TextIO) -> int:
    """Run ``fn(reader, ns, out)`` on the data directory's topic reader.  Failures (a missing topic, a bad
    option, no database) propagate to ``logtide.cli.main``: one line ``logtide topic read: error: ...``, status 2."""
    from .reader import DirectoryTopicReader

    with DirectoryTopicReader(ns.data_dir) as reader:
        return fn(reader, ns, out)


# -- topic read --------------------------------------------------------------------------------

def run_read(ns: argparse.Namespace, out: TextIO | None = None, hints: TextIO | None = None) -> int:
    """``logtide topic read``; ``hints`` (default: standard error when it is a terminal) is told when records
    are left unread (the default format prints one)."""
    if hints is None and out is None and sys.stderr.isatty():
        hints = sys.stderr

    def read(reader: Any, ns: argparse.Namespace, out: TextIO) -> int:
        return _read(reader, ns, out, hints)

    return _guarded(read, ns, out or sys.stdout)


def unread_hint(printed: int, left: int, ns: argparse.Namespace) -> str:
    """What a person at a terminal is told when records follow the ones printed (YDB's formats kept)."""
    how = ("--format newline-delimited prints them all, one per line" if ns.format == "single-message"
           else "--limit 0 prints them all")
    return (f"logtide topic read: {printed} record{'' if printed == 1 else 's'} printed, {left} more follow "
            f"in {ns.path}: {how} (--limit N: at most N)\n")


def _read(reader: Any, ns: argparse.Namespace, out: TextIO, hints: TextIO | None = None) -> int:
    import time
    parts = reader.partitions(ns.path)
    ids = [p.partition for p in parts]
    if ns.partition_ids:
        try:
            ids = [int(x) for x in ns.partition_ids.split(",") if x.strip()]
        except ValueError:
            raise CommandFailure(f"--partition-ids must be comma-separated integers, got {ns.partition_ids!r}") from None
        for i in ids:
            if not 0 <= i < len(parts):
                raise CommandFailure(f"topic {ns.path} has no partition {i} (it has {len(parts)})")
    limit = 1 if ns.format == "single-message" else ns.limit
    if ns.format == "single-message" and ns.limit:
        limit = min(1, ns.limit)
    if ns.consumer:
        committed = reader.committed(ns.path, ns.consumer)
        start = {p: max(committed.get(p, 0), parts[p].start_offset) for p in ids}
    else:
        start = {p: parts[p].start_offset for p in ids}
    if ns.wait:
        deadline = None if ns.timeout is None else time.monotonic() + ns.timeout
        while not reader.wait(ns.path, start, 1.0):
            if deadline is not None and time.monotonic() >= deadline:
                return 0
    printed = 0
    pos = dict(start)
    for p in ids:
        while not limit or printed < limit:
            recs = reader.read(ns.path, p, pos[p], max_records=1000 if not limit else min(1000, limit - printed))
            if not recs:
                break
            for rec in recs:
                text = rec.value.decode("utf-8", errors="replace")
                out.write(text + ("\n" if ns.format == "newline-delimited" else ""))
                printed += 1
                pos[p] = rec.offset + 1
    if printed and ns.format != "newline-delimited":
        out.write("\n")  # the output ends with a newline, as a terminal's prompt needs
    out.flush()
    if hints is not None:
        ends = {part.partition: part.end_offset for part in reader.partitions(ns.path)}
        left = sum(max(ends[p] - pos[p], 0) for p in ids)
        if left:
            hints.write(unread_hint(printed, left, ns))
    if ns.consumer and ns.commit == "true":
        moved = {p: o for p, o in pos.items() if o != start[p]}
        if moved:
            reader.commit(ns.path, ns.consumer, moved)
    _explain_initial_scan(reader, ns.path)
    return 0


def _explain_initial_scan(reader: Any, path: str) -> None:
    """On stderr: why a changefeed still in its initial scan shows few records or none (stdout is unchanged)."""
    from ..schema.changefeeds import INITIAL_SCAN
    d = reader.describe(path)
    if d.state != INITIAL_SCAN:
        return
    done, total = reader.scan_progress(path) or (0, 0)
    print(f"logtide topic: {path} is still in its initial scan ({done} of {total} partitions of {d.keyspace}."
          f"{d.table} exported): the records of the rows present when it was added appear as the scan goes on. "
          f"The scan runs in the process writing to the data directory (logtide serve), or in the next one "
          f"that opens it for writing (logtide serve, logtide shell)", file=sys.stderr)


# -- consumers ---------------------------------------------------------------------------------

def run_consumer_add(ns: argparse.Namespace, out: TextIO | None = None) -> int:
    def go(reader: Any, ns: argparse.Namespace, out: TextIO) -> int:
        reader.add_consumer(ns.path, ns.consumer, ns.important, ns.starting_message_timestamp * 1000)
        return 0
    return _guarded(go, ns, out or sys.stdout)


def run_consumer_drop(ns: argparse.Namespace, out: TextIO | None = None) -> int:
    def go(reader: Any, ns: argparse.Namespace, out: TextIO) -> int:
        reader.drop_consumer(ns.path, ns.consumer)
        return 0
    return _guarded(go, ns, out or sys.stdout)


def run_consumer_list(ns: argparse.Namespace, out: TextIO | None = None) -> int:
    def go(reader: Any, ns: argparse.Namespace, out: TextIO) -> int:
        parts = reader.partitions(ns.path)
        rows = [("consumer", "important", "partition", "committed", "end", "lag")]
        for c in reader.consumers(ns.path):
            for p in parts:
                done = max(c.committed.get(p.partition, 0), p.start_offset)
                rows.append((c.name, "yes" if c.important else "no", str(p.partition),
                             str(c.committed.get(p.partition, 0)), str(p.end_offset), str(p.end_offset - done)))
        _table(rows, out)
        return 0
    return _guarded(go, ns, out or sys.stdout)


# -- changefeeds -------------------------------------------------------------------------------

def run_list(ns: argparse.Namespace, out: TextIO | None = None) -> int:
    def go(reader: Any, ns: argparse.Namespace, out: TextIO) -> int:
        rows = [("changefeed", "mode", "format", "state", "partitions", "records")]
        for d in reader.topics():
            n = sum(p.end_offset - p.start_offset for p in reader.partitions(d.path))
            rows.append((d.path, d.mode, d.format, d.state, str(d.partitions), str(n)))
        _table(rows, out)
        return 0
    return _guarded(go, ns, out or sys.stdout)


def run_describe(ns: argparse.Namespace, out: TextIO | None = None) -> int:
    def go(reader: Any, ns: argparse.Namespace, out: TextIO) -> int:
        from ..schema.changefeed_options import format_interval
        d = reader.describe(ns.path)
        _, feed = reader.feed(ns.path)
        o = feed.options
        out.write(f"changefeed: {d.path}\nstate: {d.state}\nmode: {o.mode}\nformat: {o.format}\n"
                  f"virtual timestamps: {'true' if o.virtual_timestamps else 'false'}\n"
                  f"barriers interval: "
                  f"{format_interval(o.barriers_interval_ms // 1000) if o.barriers_interval_ms else 'off'}\n"
                  f"retention period: {format_interval(o.retention_seconds)}\n"
                  f"initial scan: {'true' if o.initial_scan else 'false'}\n")
        if o.aws_region:
            out.write(f"aws region: {o.aws_region}\n")
        progress = reader.scan_progress(ns.path)
        if progress is not None:
            done, total = progress
            out.write(f"initial scan progress: {progress_bar(done, total)}\n")
        rows = [("partition", "start", "end")]
        rows += [(str(p.partition), str(p.start_offset), str(p.end_offset)) for p in reader.partitions(ns.path)]
        _table(rows, out)
        cons = reader.consumers(ns.path)
        out.write("consumers: " + (", ".join(c.name + (" (important)" if c.important else "") for c in cons)
                                   if cons else "none") + "\n")
        return 0
    return _guarded(go, ns, out or sys.stdout)


def progress_bar(done: int, total: int, width: int = 30) -> str:
    """``[#########.....] 12/40 partitions (30%)``."""
    frac = 1.0 if total <= 0 else min(1.0, done / total)
    filled = int(round(frac * width))
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} partitions ({int(frac * 100)}%)"


def _table(rows: list[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")
