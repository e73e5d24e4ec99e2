"""Replays of ScyllaDB's public CDC consumers, query for query, with cassandra-driver.

Each class sends the statements its library sends (read from the libraries' sources:
scylla-cdc-java ``Driver3MasterCQL``/``Driver3WorkerCQL``/``TaskState``, scylla-cdc-go
``topology.go``/``change.go``/``stream_batch.go``/``progress.go``, scylla-cdc-rust
``stream_generations.rs``/``stream_reader.rs``/``checkpoints.rs``, and the
scylla-cdc-source-connector, which is scylla-cdc-java behind Kafka Connect offsets), with the
same windows, confidence window, checkpoints and generation switch, only with short windows so
that a test runs in seconds.  A consumer is driven by ``poll(session)``: it reads every window
that the confidence window lets it read now, and returns.  Its checkpoints live in ``state``
(the library's state store: memory for java and the connector, a CQL table for go and rust),
so a new consumer made from the same state after a crash or a server restart resumes there.

What a consumer delivers is a *change*: the rows of one ``(cdc$stream_id, cdc$time)``, ending
with the ``cdc$end_of_batch`` row.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

GEN_TIMESTAMPS = "system_distributed.cdc_generation_timestamps"
GEN_STREAMS = "system_distributed.cdc_streams_descriptions_v2"
_UUID_EPOCH = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01
_MIN_LSB = 0x8080808080808080  # the smallest clock-seq-and-node as Cassandra orders timeuuids
_MAX_LSB = 0x7F7F7F7F7F7F7F7F


class Crash(Exception):
    """Raised by a consumer told to crash after some changes (its in-memory position is lost)."""


def timeuuid_of_ms(ms: int, lsb: int = _MIN_LSB) -> uuid.UUID:
    """The smallest (``lsb=_MIN_LSB``) or largest timeuuid of a millisecond: Java's ``TimeUUID.startOf/endOf``,
    gocql's ``MinTimeUUID``."""
    t = ms * 10_000 + _UUID_EPOCH if lsb == _MIN_LSB else ms * 10_000 + 9_999 + _UUID_EPOCH
    msb = ((t & 0xFFFFFFFF) << 32) | (((t >> 32) & 0xFFFF) << 16) | 0x1000 | ((t >> 48) & 0x0FFF)
    return uuid.UUID(int=(msb << 64) | lsb)


def micros_of(tu: uuid.UUID) -> int:
    return (tu.time - _UUID_EPOCH) // 10


def ms_of(d: Any) -> int:
    """Milliseconds of a driver ``timestamp`` value (a naive UTC datetime)."""
    import calendar
    return calendar.timegm(d.timetuple()) * 1000 + d.microsecond // 1000


def now_ms() -> int:
    return int(time.time() * 1000)


def vnode_of(stream: bytes) -> int:
    """The vnode index a stream id carries in bits 4-25 of its second half (how every library groups streams)."""
    return (int.from_bytes(stream[8:], "big") >> 4) & ((1 << 22) - 1)


def by_vnode(streams: list[bytes]) -> list[list[bytes]]:
    groups: dict[int, list[bytes]] = {}
    for s in sorted(streams):
        groups.setdefault(vnode_of(s), []).append(s)
    return [groups[k] for k in sorted(groups)]


@dataclass
class Change:
    """One delivered change: its stream, cdc$time and rows (preimage, deltas, postimage) in log order."""

    stream: bytes
    time: uuid.UUID
    rows: list[Any]

    @property
    def key(self) -> tuple[bytes, uuid.UUID]:
        return (self.stream, self.time)


@dataclass
class Config:
    """Windows in milliseconds (the libraries' defaults are 30 000 / 30 000; tests shrink them)."""

    keyspace: str
    table: str
    window_ms: int = 400
    confidence_ms: int = 300
    start_ms: int = 0  # where to start without a checkpoint (connector's initial lookback, go/rust start time)
    crash_after: int | None = None  # deliver this many changes, then raise Crash


class Consumer:
    """What the four replays share: delivery into ``delivered``, crashing on request, the log table's name."""

    name = "consumer"

    def __init__(self, cfg: Config, state: dict) -> None:
        self.cfg = cfg
        self.state = state
        self.delivered: list[Change] = state.setdefault("delivered", [])
        self._budget = cfg.crash_after
        self.log = f'{cfg.keyspace}."{cfg.table}_scylla_cdc_log"'

    def deliver(self, change: Change) -> None:
        if self._budget is not None:
            if self._budget == 0:
                raise Crash(self.name)
            self._budget -= 1
        self.delivered.append(change)

    @staticmethod
    def changes(rows: list[Any]) -> list[Change]:
        """Rows grouped into changes, each closed by its ``cdc$end_of_batch`` row (in (time, stream) order)."""
        out: list[Change] = []
        current: dict[tuple[bytes, uuid.UUID], Change] = {}
        for r in rows:
            k = (r.cdc_stream_id, r.cdc_time)
            ch = current.setdefault(k, Change(k[0], k[1], []))
            ch.rows.append(r)
            if r.cdc_end_of_batch:
                out.append(current.pop(k))
        assert not current, f"{len(current)} changes without a cdc$end_of_batch row"
        return sorted(out, key=lambda c: (c.time.time, c.stream))

    def poll(self, session: Any) -> None:
        raise NotImplementedError


# -- scylla-cdc-java (and the connector) ---------------------------------------------


class JavaConsumer(Consumer):
    """scylla-cdc-java: the master finds generations with ``min(time) ... time > ?``; one task per vnode with
    ``(windowStart, windowEnd, lastConsumedChangeId)``; a window ``[s, e)`` is read once ``now >= e + confidence``,
    one query per stream with bounds ``startOf(s)`` (exclusive) and ``endOf(e - 1)``; the task state moves on
    each ``cdc$end_of_batch`` change and to the next window; the generation is done when it has an end and every
    task's window reached it."""

    name = "scylla-cdc-java"
    NEXT_GEN = f"SELECT min(time) FROM {GEN_TIMESTAMPS} WHERE key = 'timestamps' AND time > ?"
    STREAMS = f"SELECT streams FROM {GEN_STREAMS} WHERE time = ?"

    def worker_query(self) -> str:
        return f'SELECT * FROM {self.log} WHERE "cdc$stream_id" = ? AND "cdc$time" > ? AND "cdc$time" <= ?'

    def poll(self, session: Any) -> None:
        st = self.state
        next_gen = session.prepare(self.NEXT_GEN)
        streams_q = session.prepare(self.STREAMS)
        worker = session.prepare(self.worker_query())
        if "generation" not in st:
            first = session.execute(next_gen, [0]).one()[0]  # fetchFirstGenerationId: after new Date(0)
            assert first is not None, "no CDC generation found"
            st["generation"] = ms_of(first)
            st["tasks"] = {}
        while True:
            gen = st["generation"]
            end_row = session.execute(next_gen, [gen]).one()[0]
            gen_end = None if end_row is None else ms_of(end_row)
            streams = [s for r in session.execute(streams_q, [gen]) for s in r.streams]
            tasks = st["tasks"]
            for group in by_vnode(streams):
                vnode = vnode_of(group[0])
                # initial state [generationStart, +window), trimmed forward to the configured start
                start = max(gen, self.cfg.start_ms)
                tasks.setdefault((gen, vnode), {"streams": group, "window": (start, start + self.cfg.window_ms),
                                                "last": None})
            done = True
            for (g, _), task in sorted(tasks.items()):
                if g != gen:
                    continue
                self._run_task(session, worker, task, gen_end)
                if gen_end is None or task["window"][0] < gen_end:
                    done = False
            if not done or gen_end is None:
                return
            st["generation"] = gen_end  # every task consumed the generation: switch

    def _run_task(self, session: Any, worker: Any, task: dict, gen_end: int | None) -> None:
        while True:
            s, e = task["window"]
            if gen_end is not None and s >= gen_end:
                return
            if now_ms() < e + self.cfg.confidence_ms:  # ReadNewWindowTaskAction.waitForWindow
                return
            rows = []
            for stream in task["streams"]:
                rows += list(session.execute(worker, [stream, timeuuid_of_ms(s), timeuuid_of_ms(e - 1, _MAX_LSB)]))
            last = task["last"]
            for ch in self.changes(rows):
                if last is not None and (ch.time.time, ch.stream) <= last:
                    continue  # consumed before a restart: the state's lastConsumedChangeId
                self.deliver(ch)
                task["last"] = (ch.time.time, ch.stream)
                self.on_progress(task)
            task["window"] = (e, e + self.cfg.window_ms)  # moveToNextWindow
            task["last"] = None
            self.on_progress(task)

    def on_progress(self, task: dict) -> None:
        """Java's ``transport.updateState``: the in-memory state store already holds ``task``."""


class ConnectorConsumer(JavaConsumer):
    """The scylla-cdc-source-connector: scylla-cdc-java per vnode task, its position kept as Kafka Connect
    offsets ``{window_start, window_end, change_id_stream_id, change_id_time}`` (TimeUUID strings, hex stream id)
    per source partition ``{keyspace_name, table_name, vnode_id, generation_start}``; a restart resumes from them."""

    name = "scylla-cdc-source-connector"

    def __init__(self, cfg: Config, state: dict) -> None:
        super().__init__(cfg, state)
        offsets = state.setdefault("offsets", {})
        for task in state.get("tasks", {}).values():  # a restarted task reads its state back from the offsets
            off = offsets.get(self._partition(task))
            if off is not None:
                ws, we = uuid.UUID(off["window_start"]), uuid.UUID(off["window_end"])
                task["window"] = (micros_of(ws) // 1000, micros_of(we) // 1000 + 1)
                tu = off.get("change_id_time")
                task["last"] = None if tu is None else (uuid.UUID(tu).time, bytes.fromhex(off["change_id_stream_id"]))

    def _partition(self, task: dict) -> tuple:
        return (self.cfg.keyspace, self.cfg.table, vnode_of(task["streams"][0]), self.state["generation"])

    def on_progress(self, task: dict) -> None:
        s, e = task["window"]
        off = {"window_start": str(timeuuid_of_ms(s)), "window_end": str(timeuuid_of_ms(e - 1, _MAX_LSB))}
        if task["last"] is not None:
            t, stream = task["last"]
            off["change_id_stream_id"] = stream.hex()
            off["change_id_time"] = str(next(c.time for c in reversed(self.delivered) if c.time.time == t))
        self.state["offsets"][self._partition(task)] = off


# -- scylla-cdc-go ----------------------------------------------------------------------


class GoConsumer(Consumer):
    """scylla-cdc-go: checks tablets (``system_schema.scylla_keyspaces``), the cluster size
    (``COUNT(*) FROM system.peers``) and the log TTL (the ``cdc`` schema extension); lists generations with
    ``SELECT time ... WHERE key = 'timestamps'``; one reader per vnode, windows
    ``(min progress, min(start + window, now - confidence)]`` with ``MinTimeUUID`` bounds, ``IN (?, ...)`` on the
    vnode's streams and ``BYPASS CACHE``; per-stream progress saved in a ``TableBackedProgressManager`` table."""

    name = "scylla-cdc-go"
    PROGRESS = "cdc_go_progress"

    def poll(self, session: Any) -> None:
        ks, table = self.cfg.keyspace, self.cfg.table
        session.execute("SELECT * FROM system_schema.scylla_keyspaces WHERE keyspace_name = %s", [ks]).all()
        assert session.execute("SELECT COUNT(*) FROM system.peers").one()[0] == 0
        ext = session.execute("SELECT extensions FROM system_schema.tables WHERE keyspace_name = %s "
                              "AND table_name = %s", [ks, table]).one()[0]
        self.ttl = parse_cdc_extension(ext["cdc"])["ttl"]
        session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.{self.PROGRESS} (generation timestamp, "
                        "application_name text, table_name text, stream_id blob, last_timestamp timeuuid, "
                        "current_generation timestamp, PRIMARY KEY ((generation, application_name, table_name, "
                        "stream_id))) WITH default_time_to_live = 604800")
        get_cur = session.prepare(f"SELECT current_generation FROM {ks}.{self.PROGRESS} WHERE generation = ? "
                                  "AND application_name = ? AND table_name = ? AND stream_id = ?")
        save_cur = session.prepare(f"INSERT INTO {ks}.{self.PROGRESS} (generation, application_name, table_name, "
                                   "stream_id, current_generation) VALUES (?, ?, ?, ?, ?) USING TTL 604800")
        times = sorted(ms_of(r.time) for r in session.execute(f"SELECT time FROM {GEN_TIMESTAMPS} WHERE key = 'timestamps'"))
        row = session.execute(get_cur, [0, "app", table, b""]).one()
        current = ms_of(row[0]) if row is not None and row[0] is not None else None
        if current is None:  # no saved generation: the one in force at the start time
            current = max(t for t in times if t <= max(self.cfg.start_ms, times[0]))
            session.execute(save_cur, [0, "app", table, b"", current])
        while True:
            later = [t for t in times if t > current]
            gen_end = later[0] if later else None
            streams = [s for r in session.execute(f"SELECT streams FROM {GEN_STREAMS} WHERE time = %s", [current])
                       for s in r.streams]
            finished = all([self._read_vnode(session, current, group, gen_end) for group in by_vnode(streams)])
            if gen_end is None or not finished:
                return
            current = gen_end
            session.execute(save_cur, [0, "app", table, b"", current])

    def _read_vnode(self, session: Any, gen: int, streams: list[bytes], gen_end: int | None) -> bool:
        ks, table = self.cfg.keyspace, self.cfg.table
        get_p = session.prepare(f"SELECT last_timestamp FROM {ks}.{self.PROGRESS} WHERE generation = ? "
                                "AND application_name = ? AND table_name = ? AND stream_id = ?")
        save_p = session.prepare(f"UPDATE {ks}.{self.PROGRESS} USING TTL 604800 SET last_timestamp = ? "
                                 "WHERE generation = ? AND application_name = ? AND table_name = ? AND stream_id = ?")
        cond = '"cdc$stream_id" = ?' if len(streams) == 1 else '"cdc$stream_id" IN (' + ", ".join("?" * len(streams)) + ")"
        q = session.prepare(f'SELECT * FROM {self.log} WHERE {cond} AND "cdc$time" > ? AND "cdc$time" <= ? BYPASS CACHE')
        start = timeuuid_of_ms(max(gen, self.cfg.start_ms))
        progress = {}
        for s in streams:
            r = session.execute(get_p, [gen, "app", table, s]).one()
            progress[s] = r[0] if r is not None and r[0] is not None else start
        while True:
            begin = min(progress.values(), key=lambda u: u.time)
            confidence = now_ms() - self.cfg.confidence_ms
            right = min(micros_of(begin) // 1000 + self.cfg.window_ms, confidence)
            end = timeuuid_of_ms(right)
            if end.time <= begin.time:
                return False
            for ch in self.changes(list(session.execute(q, [*streams, begin, end]))):
                if ch.time.time <= progress[ch.stream].time:
                    continue  # already processed (per-stream progress)
                self.deliver(ch)
                progress[ch.stream] = ch.time
                session.execute(save_p, [ch.time, gen, "app", table, ch.stream])  # MarkProgress
            for s in streams:  # advanceAllStreamsTo(window end)
                if progress[s].time < end.time:
                    progress[s] = end
                    session.execute(save_p, [end, gen, "app", table, s])
            if gen_end is not None and gen_end <= right:  # reachedEndOfTheGeneration
                return True
            if right >= confidence:  # touchesConfidenceWindow: wait for the next poll
                return False


def parse_cdc_extension(blob: bytes) -> dict[str, str]:
    """scylla-cdc-go's ``extensionParser.parseStringMap``: little-endian int32 count, then length-prefixed strings."""
    def take(n: int) -> bytes:
        nonlocal blob
        out, blob = blob[:n], blob[n:]
        assert len(out) == n, "truncated cdc extension"
        return out

    def i32() -> int:
        return int.from_bytes(take(4), "little", signed=True)

    count = i32()
    return {take(i32()).decode(): take(i32()).decode() for _ in range(count)}


# -- scylla-cdc-rust --------------------------------------------------------------------


class RustConsumer(Consumer):
    """scylla-cdc-rust: the generation in force at the start (``time <= ? ORDER BY time DESC LIMIT 1``), the next
    one (``time > ? ORDER BY time ASC LIMIT 1``), its streams; per vnode a reader over
    ``"cdc$stream_id" in ?`` with ``>= minTimeuuid(?) AND < minTimeuuid(?)  BYPASS CACHE``, windows ending at
    ``min(begin + window, now - safety interval, next generation)``; a ``TableBackedCheckpointSaver`` table
    ``(stream_id blob PRIMARY KEY, generation timestamp, time timestamp)`` holds each stream's window end, and
    the current generation under stream id ``0x00`` (its checkpoints are at window ends: a crash re-delivers
    the window, so the harness does not crash it)."""

    name = "scylla-cdc-rust"
    CHECKPOINTS = "cdc_rust_checkpoints"
    GENERATION_PK = b"\x00"

    def poll(self, session: Any) -> None:
        ks, cp = self.cfg.keyspace, f"{self.cfg.keyspace}.{self.CHECKPOINTS}"
        session.execute("SELECT initial_tablets FROM system_schema.scylla_keyspaces WHERE keyspace_name = %s", [ks])
        session.execute("SELECT COUNT(*) FROM system.peers")
        session.execute(f"CREATE TABLE IF NOT EXISTS {cp} (\n            stream_id blob PRIMARY KEY,\n"
                        "            generation timestamp,\n            time timestamp)")
        self.save = session.prepare(f"UPDATE {cp} USING TTL 604800\n                SET generation = ?, time = ?\n"
                                    "                WHERE stream_id = ?")
        by_time = session.prepare(f"\n        SELECT time\n        FROM {GEN_TIMESTAMPS}\n        WHERE key = 'timestamps'"
                                  "\n        AND time <= ?\n        ORDER BY time DESC\n        LIMIT 1;")
        next_q = session.prepare(f"\n        SELECT time\n        FROM {GEN_TIMESTAMPS}\n        WHERE key = 'timestamps'"
                                 "\n        AND time > ?\n        ORDER BY time ASC\n        LIMIT 1;")
        streams_q = session.prepare(f"\n        SELECT streams\n        FROM {GEN_STREAMS}\n        WHERE time = ?;")
        saved = session.execute(session.prepare(f"SELECT generation FROM {cp}\n                    WHERE stream_id = ?"),
                                [self.GENERATION_PK]).one()
        if saved is not None:
            gen = ms_of(saved[0])
        else:
            gen = ms_of(session.execute(by_time, [max(self.cfg.start_ms, 1)]).one()[0])
            session.execute(self.save, [gen, (1 << 63) - 1, self.GENERATION_PK])  # save_new_generation
        while True:
            nxt = session.execute(next_q, [gen]).one()
            gen_end = None if nxt is None else ms_of(nxt[0])
            streams = [s for r in session.execute(streams_q, [gen]) for s in r.streams]
            finished = all([self._read(session, gen, group, gen_end) for group in by_vnode(streams)])
            if gen_end is None or not finished:
                return
            gen = gen_end
            session.execute(self.save, [gen, (1 << 63) - 1, self.GENERATION_PK])

    def _read(self, session: Any, gen: int, streams: list[bytes], gen_end: int | None) -> bool:
        cp = f"{self.cfg.keyspace}.{self.CHECKPOINTS}"
        q = session.prepare(f'SELECT * FROM {self.log} WHERE "cdc$stream_id" in ? AND "cdc$time" >= minTimeuuid(?) '
                            'AND "cdc$time" < minTimeuuid(?)  BYPASS CACHE')
        load = session.prepare(f"SELECT time FROM {cp}\n                    WHERE stream_id = ?\n                    LIMIT 1")
        begin = max(gen, self.cfg.start_ms)
        loaded = [session.execute(load, [s]).one() for s in streams]
        if all(r is not None for r in loaded):  # the smallest checkpoint of the group, never before the start
            begin = max(begin, min(ms_of(r[0]) for r in loaded))
        while True:
            safe = now_ms() - self.cfg.confidence_ms
            end = min(begin + self.cfg.window_ms, safe, *(() if gen_end is None else (gen_end,)))
            if end <= begin:
                return gen_end is not None and begin >= gen_end
            for ch in self.changes(list(session.execute(q, [streams, begin, end]))):
                self.deliver(ch)
            for s in streams:
                session.execute(self.save, [gen, end, s])
            begin = end
            if end == safe:  # caught up with the safety interval: sleep_interval before the next window
                return False


CONSUMERS: dict[str, Callable[[Config, dict], Consumer]] = {
    c.name: c for c in (JavaConsumer, GoConsumer, RustConsumer, ConnectorConsumer)
}


@dataclass
class Run:
    """One consumer's run over several polls, restarts and crashes: its durable state and what it delivered."""

    name: str
    cfg: Config
    state: dict = field(default_factory=dict)
    crashes: int = 0

    def poll(self, session: Any) -> None:
        try:
            CONSUMERS[self.name](self.cfg, self.state).poll(session)
        except Crash:
            self.crashes += 1
            self.cfg.crash_after = None
            CONSUMERS[self.name](self.cfg, self.state).poll(session)

    @property
    def delivered(self) -> list[Change]:
        return self.state.get("delivered", [])
