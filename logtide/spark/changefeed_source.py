"""``spark.read.format("logtide-changefeed")`` / ``spark.readStream.format("logtide-changefeed")``: a changefeed topic.

Read over the Kafka protocol (``bootstrap``; confluent-kafka inside the executors) or from a local
data directory (``path``; logtide's DirectoryTopicReader).  One input partition per topic partition
and offset range; an offset is ``{"0": 12, "1": 0}`` (partition -> next offset, keys in partition
order, so that equal offsets are equal JSON).  Records become typed rows of Delta's change data feed
(:mod:`.changefeed_rows`); with ``consistent=true`` every micro-batch ends at a global barrier
(:mod:`.changefeed_consistent`).  Options, schema and guarantees: docs/spark.md "Source 3".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .changefeed_consistent import capped_cut, consistent_cut
from .changefeed_feed import FeedInfo, load_feed
from .changefeed_options import ChangefeedSettings
from .changefeed_rows import RowParser, arrow_types, output_ddl, output_names
from .changefeed_topic import TopicAccess
from .compat import STREAM_BASES, check_stream_limit
from .errors import user_errors
from .options import OptionError
from . import types as ST

Offsets = dict[int, int]


def to_json(offsets: Mapping[int, int]) -> dict:
    """A Spark offset: partition ids as strings in partition order."""
    return {str(p): int(offsets[p]) for p in sorted(offsets)}


def from_json(offset: Any) -> Offsets:
    d = json.loads(offset) if isinstance(offset, str) else offset
    return {int(p): int(o) for p, o in d.items()}


def resolve(spec: Any, bounds: list[tuple[int, int]], name: str) -> Offsets:
    """``earliest`` / ``latest`` / a partition -> offset dict (-2 earliest, -1 latest) as offsets per partition."""
    out = {}
    for p, (lo, hi) in enumerate(bounds):
        if spec == "earliest":
            out[p] = lo
        elif spec == "latest":
            out[p] = hi
        else:
            o = spec.get(p, -2)
            out[p] = lo if o == -2 else hi if o == -1 else o
    if isinstance(spec, dict) and any(p >= len(bounds) for p in spec):
        raise OptionError(f"option {name}: the topic has {len(bounds)} partitions, got partition "
                          f"{max(spec)}")
    return out


def starting(settings: ChangefeedSettings, access: TopicAccess, default: str) -> Offsets:
    bounds = access.partitions()
    if settings.starting_time_ms is not None:
        return {p: max(lo, access.offset_for_time(p, settings.starting_time_ms)) for p, (lo, _) in enumerate(bounds)}
    return resolve(settings.starting or default, bounds, "startingOffsets")


def cap(begin: Offsets, target: Offsets, max_records: int) -> Offsets:
    """``target`` cut so that at most ``max_records`` messages lie between ``begin`` and it, shared
    among the partitions in proportion to what each has waiting (at least one message in all)."""
    avail = {p: max(0, target[p] - begin[p]) for p in begin}
    total = sum(avail.values())
    if total <= max_records:
        return dict(target)
    share = {p: avail[p] * max_records // total for p in avail}
    left = max_records - sum(share.values())
    for p in sorted(avail, key=lambda p: -avail[p]):
        if left <= 0:
            break
        if share[p] < avail[p]:
            share[p] += 1
            left -= 1
    return {p: begin[p] + share[p] for p in begin}


@dataclass(frozen=True)
class TopicRange(InputPartition):
    """Messages ``start <= offset < end`` of one topic partition."""

    partition: int
    start: int
    end: int


class Reading:
    """Shared by the batch and stream readers; pickled to executors, where ``read`` runs."""

    def __init__(self, settings: ChangefeedSettings, info: FeedInfo, names: list[str]) -> None:
        self.settings = settings
        self.info = info
        full = output_names(info.shape, settings.raw)
        unknown = [n for n in names if n not in full]
        if unknown:
            raise OptionError(f"column {unknown[0]!r} of the given schema is not a column of the changefeed source "
                              f"(columns: {', '.join(full)})")
        self.names = names
        self.index = [full.index(n) for n in names]
        types = arrow_types(info.shape, settings.raw)
        self.types = [types[i] for i in self.index]

    def ranges(self, begin: Offsets, end: Offsets) -> list[TopicRange]:
        return [TopicRange(p, begin[p], end[p]) for p in sorted(begin) if end.get(p, begin[p]) > begin[p]]

    def read(self, part: TopicRange) -> Iterator[Any]:
        parser = RowParser(self.info.shape, self.settings.raw)
        batcher = ST.ArrowBatcher(self.names, self.types, 10_000)
        index = self.index
        access = self.settings.address.open()
        try:
            for off, ms, key, value in access.read(part.partition, part.start, part.end):
                for row in parser.parse(part.partition, off, ms, key, value):
                    batch = batcher.add([row[i] for i in index])
                    if batch is not None:
                        yield batch
        finally:
            access.close()
        batch = batcher.flush()
        if batch is not None:
            yield batch


def check_consistent(settings: ChangefeedSettings, info: FeedInfo) -> None:
    """``consistent=true`` needs a JSON changefeed with barriers and virtual timestamps."""
    if not settings.consistent:
        return
    if info.shape.format != "JSON":
        raise OptionError(f"option consistent: needs FORMAT = 'JSON' (barriers exist only there), "
                          f"the changefeed has {info.shape.format}")
    if info.barriers is False:
        raise OptionError("option consistent: the changefeed has no barriers (add it WITH BARRIERS_INTERVAL = "
                          "Interval('PT1S') or RESOLVED_TIMESTAMPS)")
    if info.virtual_timestamps is False:
        raise OptionError("option consistent: the changefeed has no virtual timestamps (add it WITH "
                          "VIRTUAL_TIMESTAMPS = TRUE)")


class LogtideChangefeedDataSource(DataSource):
    """The ``logtide-changefeed`` source (batch and streaming)."""

    @classmethod
    def name(cls) -> str:
        return "logtide-changefeed"

    def _setup(self) -> tuple[ChangefeedSettings, FeedInfo]:
        cached = getattr(self, "_cached", None)
        if cached is None:
            settings = ChangefeedSettings.parse(self.options)
            info = load_feed(settings)
            check_consistent(settings, info)
            cached = self._cached = (settings, info)
        return cached

    @user_errors
    def schema(self) -> str:
        settings, info = self._setup()
        return output_ddl(info.shape, settings.raw)

    @user_errors
    def reader(self, schema: Any) -> "ChangefeedBatchReader":
        settings, info = self._setup()
        return ChangefeedBatchReader(Reading(settings, info, [f.name for f in schema.fields]))

    @user_errors
    def streamReader(self, schema: Any) -> "ChangefeedStreamReader":
        settings, info = self._setup()
        check_stream_limit("maxRecordsPerTrigger", settings.max_records)
        return ChangefeedStreamReader(Reading(settings, info, [f.name for f in schema.fields]))


class ChangefeedBatchReader(DataSourceReader):
    """A batch read from startingOffsets (default earliest) to endingOffsets (default latest, when planned)."""

    def __init__(self, reading: Reading) -> None:
        self.reading = reading
        s = reading.settings
        access = s.address.open()
        try:
            self.begin = starting(s, access, "earliest")
            end = resolve(s.ending or "latest", access.partitions(), "endingOffsets")
            if s.consistent:
                end = consistent_cut(access, self.begin, end) or dict(self.begin)
        finally:
            access.close()
        self.end = end

    def partitions(self) -> list:
        return self.reading.ranges(self.begin, self.end) or [TopicRange(0, 0, 0)]

    @user_errors
    def read(self, partition: TopicRange) -> Iterator[Any]:
        return self.reading.read(partition)


class ChangefeedStreamReader(*STREAM_BASES):  # type: ignore[misc]
    """Micro-batches between offsets; admission control and Trigger.AvailableNow on Spark 4.2+."""

    def __init__(self, reading: Reading) -> None:
        self.reading = reading
        self.settings = reading.settings
        self._access: TopicAccess | None = None
        self.available_now: Offsets | None = None
        self.last: Offsets | None = None
        self.ends: Offsets | None = None  # every partition's end at the last latestOffset (the lag's end)

    def __getstate__(self) -> dict:  # executors get a copy without the driver's connection
        state = dict(self.__dict__)
        state["_access"] = None
        return state

    # -- driver side ---------------------------------------------------------
    def access(self) -> TopicAccess:
        if self._access is None:
            self._access = self.settings.address.open()
        return self._access

    @user_errors
    def initialOffset(self) -> dict:
        s = self.settings
        begin = starting(s, self.access(), "latest")
        if s.consistent and s.starting in (None, "latest") and s.starting_time_ms is None:
            # start at the latest global barrier, so the first batch begins at a consistent cut too
            bounds = self.access().partitions()
            begin = consistent_cut(self.access(), {p: lo for p, (lo, _) in enumerate(bounds)}, begin) or begin
        self.last = begin
        return to_json(begin)

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        m = self.settings.max_records
        return ReadMaxRows(m) if m else ReadAllAvailable()

    @user_errors
    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = {p: hi for p, (_, hi) in enumerate(self.access().partitions())}

    @user_errors
    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """The end of the next micro-batch: every partition's end (or the AvailableNow target), cut at the
        global barrier in consistent mode, capped by the read limit.  Spark 4.0/4.1 call it without
        arguments (and maxRecordsPerTrigger is refused there: see :func:`~.compat.check_stream_limit`):
        the start is then the last offset handed out."""
        if start is not None:
            begin = from_json(start)
        else:
            begin = self.last if self.last is not None else from_json(self.initialOffset())
        target = self.ends = {p: hi for p, (_, hi) in enumerate(self.access().partitions())}
        if self.available_now is not None:
            target = {p: min(hi, self.available_now.get(p, hi)) for p, hi in target.items()}
        target = {p: max(begin.get(p, 0), hi) for p, hi in target.items()}
        begin = {p: begin.get(p, 0) for p in target}
        max_rows = getattr(limit, "max_rows", None)  # ReadMaxRows (from the option) or ReadAllAvailable
        if self.settings.consistent:
            target = consistent_cut(self.access(), begin, target) or begin
            if max_rows:
                target = capped_cut(self.access(), begin, target, max_rows)
        elif max_rows:
            target = cap(begin, target, max_rows)
        if start is None:
            self.last = target
        return to_json(target)

    def reportLatestOffset(self) -> dict | None:
        """Every partition's end when the last micro-batch was planned, for the query's progress
        (``sources[0].latestOffset``: the lag is its sum minus the batch's end offset's).  Spark 4.2+
        calls it after ``latestOffset(start, limit)``; 4.0/4.1 never do, and show no lag."""
        return None if self.ends is None else to_json(self.ends)

    @user_errors
    def partitions(self, start: dict, end: dict) -> list:
        return self.reading.ranges(from_json(start), from_json(end))

    @user_errors
    def commit(self, end: dict) -> None:
        if self.settings.consumer:
            self.access().commit(self.settings.consumer, from_json(end))

    def stop(self) -> None:
        if self._access is not None:
            self._access.close()
            self._access = None

    # -- executor side -------------------------------------------------------
    @user_errors
    def read(self, partition: TopicRange) -> Iterator[Any]:
        return self.reading.read(partition)
