"""The server's prepared-statement cache, shared by every connection.

Entries are keyed by the statement id (md5 of keyspace and query, computed by
the engine) and evicted least-recently-used first; an EXECUTE of an evicted or
unknown id gets an Unprepared error and the driver prepares again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from logtide.errors import Unprepared

from .datatypes import value_decoder

DEFAULT_CAPACITY = 20_000


@dataclass
class PreparedEntry:
    """A prepared statement, what the server told the client about it, and what each EXECUTE of it
    needs that does not depend on the values (one decoder per bind marker)."""

    statement: Any  # logtide.session.PreparedStatement
    catalog_version: Any  # the catalog version it was prepared against
    result_metadata_id: bytes
    decoders: tuple[Callable[[Any], Any], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.decoders = tuple(value_decoder(spec) for spec in self.statement.bind_specs)

    @property
    def id(self) -> bytes:
        return self.statement.id


class PreparedCache:
    """A thread-safe LRU map from statement id to PreparedEntry."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[bytes, PreparedEntry] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, entry: PreparedEntry) -> None:
        with self._lock:
            self._entries[entry.id] = entry
            self._entries.move_to_end(entry.id)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def get(self, statement_id: bytes) -> PreparedEntry:
        """The entry for ``statement_id``; Unprepared (0x2500) if there is none."""
        with self._lock:
            entry = self._entries.get(statement_id)
            if entry is not None:
                self._entries.move_to_end(statement_id)
                return entry
        raise Unprepared(f"Prepared query with ID {statement_id.hex()} not found (either the query was not "
                         "prepared on this host (maybe the host has been restarted?) or you have prepared too "
                         "many queries and it has been evicted from the internal cache)", statement_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
