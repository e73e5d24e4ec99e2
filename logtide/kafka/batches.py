"""Encoded record batches of changefeed partitions, kept and read ahead for Fetch (docs/kafka.md "Performance").

A changefeed record never changes once written, so the record batch v2 that
answers a Fetch at (topic, partition, offset) can be answered again as is: a
second consumer group, or a consumer re-reading after a rebalance, costs no
read and no encoding.  After a batch that did not reach the partition's end
is served, the next one (from its next offset, under the same byte limit) is
read and encoded on a background thread while the client receives and
decodes the first, so a consumer catching up finds it ready.

Before a kept batch is served again its last record is read back and
compared (write time, key, value): retention or a changefeed dropped and
re-created under the same path makes the batch stale, and it is read afresh.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from logtide.changefeed.api import TopicReader

from .keys import key_function
from .records import encode_rows

log = logging.getLogger("logtide.kafka")

MAX_RECORDS_PER_BATCH = 5000

Key = tuple[str, int, int]  # (topic path, partition, first offset)


@dataclass(frozen=True)
class Batch:
    """One encoded record batch and what is needed to check and continue it."""

    data: bytes
    next_offset: int  # the offset after its last record
    last: tuple[int, bytes | None, bytes | None]  # the last record's (write time ms, key, value)
    max_bytes: int  # the limit it was read under: it answers a Fetch allowing at least as much


class BatchCache:
    """Encoded batches by (path, partition, offset), least recently used dropped past ``capacity_bytes``."""

    def __init__(self, reader: TopicReader, capacity_bytes: int = 64 << 20) -> None:
        self.reader = reader
        self.capacity_bytes = capacity_bytes
        self._lock = threading.Lock()
        self._batches: OrderedDict[Key, Batch] = OrderedDict()
        self._size = 0
        self._ahead: dict[Key, concurrent.futures.Future] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="logtide-kafka-ahead")
        self.hits = 0
        self.misses = 0

    def read(self, path: str, partition: int, offset: int, max_bytes: int, end_offset: int,
             format: str | None = None) -> bytes:
        """The batch from ``offset`` (at least one record, then up to ``max_bytes``; b"" if none); reads the
        next one ahead when this one stops before ``end_offset``.  ``format`` is the changefeed's FORMAT, which
        decides each message's Kafka key (``keys.key_function``; None: the keys as stored)."""
        key = (path, partition, offset)
        with self._lock:
            pending = self._ahead.get(key)
        if pending is not None:
            concurrent.futures.wait([pending])  # being read ahead right now: its result is the answer
        with self._lock:
            batch = self._batches.get(key)
            if batch is not None:
                self._batches.move_to_end(key)
        if batch is None or batch.max_bytes > max_bytes or batch.next_offset > end_offset \
                or not self._still_valid(path, partition, batch):
            self.misses += 1
            batch = self._load(key, max_bytes, format)
            if batch is None:
                return b""
        else:
            self.hits += 1
        if batch.next_offset < end_offset:
            self._read_ahead((path, partition, batch.next_offset), max_bytes, format)
        return batch.data

    def close(self) -> None:
        """Stop reading ahead (reads in flight finish); kept batches are dropped."""
        self._pool.shutdown(True, cancel_futures=True)
        with self._lock:
            self._batches.clear()
            self._size = 0

    def _still_valid(self, path: str, partition: int, batch: Batch) -> bool:
        rows = self.reader.read_rows(path, partition, batch.next_offset - 1, 1)
        if not rows or rows[0][0] != batch.next_offset - 1:
            return False
        return tuple(rows[0][1:]) == batch.last

    def _load(self, key: Key, max_bytes: int, format: str | None) -> Batch | None:
        path, partition, offset = key
        rows = self.reader.read_rows(path, partition, offset, MAX_RECORDS_PER_BATCH, max_bytes)
        if not rows:
            return None
        last_offset, write_time_ms, k, value = rows[-1]  # as stored: what _still_valid compares
        batch = Batch(encode_rows(rows, key_function(format)), last_offset + 1, (write_time_ms, k, value), max_bytes)
        if rows[0][0] == offset:  # an offset below the partition's start is answered from the start
            self._keep(key, batch)
        return batch

    def _keep(self, key: Key, batch: Batch) -> None:
        with self._lock:
            old = self._batches.pop(key, None)
            if old is not None:
                self._size -= len(old.data)
            self._batches[key] = batch
            self._size += len(batch.data)
            while self._size > self.capacity_bytes and self._batches:
                _, dropped = self._batches.popitem(last=False)
                self._size -= len(dropped.data)

    def _read_ahead(self, key: Key, max_bytes: int, format: str | None) -> None:
        with self._lock:
            if key in self._batches or key in self._ahead:
                return
            try:
                self._ahead[key] = self._pool.submit(self._load_ahead, key, max_bytes, format)
            except RuntimeError:  # closing: no more reading ahead
                pass

    def _load_ahead(self, key: Key, max_bytes: int, format: str | None) -> Any:
        try:
            self._load(key, max_bytes, format)
        except Exception as e:  # the Fetch that wants it reads it itself and answers the error
            log.debug("reading ahead %s failed: %s", key, e)
        finally:
            with self._lock:
                self._ahead.pop(key, None)
