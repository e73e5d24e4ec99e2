"""The result of a SELECT of plain columns, kept as the stored bytes of its values.

An embedded caller reads ``rows`` (Python values, deserialized on first access); the server writes
``wire_rows()`` into its Rows response: the stored bytes of each value, with no round trip through
Python values (``docs/performance.md``, "Reading base tables").  Both come from the same bytes, so
they hold the same values.

One idea split for size with ``select.py``, ``projection.py``, ``read.py`` and ``cell_meta.py``: the
SELECT pipeline (its result here).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from ..result import ColumnSpec, ResultSet, Row
from ..schema.model import Column
from .projection import raw_decoder, raw_encoder

CHUNK = 5000  # rows decoded at a time by value_lists
RawRow = list  # the stored bytes of a row's values, None for null (``projection.raw_values_of``)


class SelectResult(ResultSet):
    """A ``rows`` result whose values are deserialized when asked for; ``cols`` are the selected
    columns, whose decoder (``projection.raw_decoder``) or encoder (``projection.raw_encoder``) is
    planned only when one is asked for (a small read costs less than planning both)."""

    def __init__(self, columns: tuple[ColumnSpec, ...], raw: list[RawRow], cols: list[Column]) -> None:
        super().__init__("rows", columns)
        self._rows: list[Row] | None = None
        self._raw: list[RawRow] | None = raw
        self._cols = cols

    def _decode(self, raw: list[RawRow]) -> list[tuple]:
        return raw_decoder(self._cols)(raw)

    def _get_rows(self) -> list[Row]:
        rows = self._rows
        if rows is None:
            names = tuple(c.name for c in self.columns)
            rows = self._rows = [Row(names, v) for v in self._decode(self._raw)]  # type: ignore[arg-type]
        return rows

    def _set_rows(self, rows: list[Row]) -> None:
        self._rows = rows
        self._raw = None  # the rows given are the result now

    rows = property(_get_rows, _set_rows)  # type: ignore[assignment]

    def __len__(self) -> int:
        return len(self._raw) if self._rows is None else len(self._rows)  # type: ignore[arg-type]

    def value_lists(self) -> Iterator[Sequence[Any]]:
        """Each row's values as a plain sequence (``rows`` without the ``Row`` objects), decoded
        ``CHUNK`` rows at a time."""
        if self._raw is None or self._rows is not None:
            yield from (list(r) for r in self.rows)
            return
        raw, decode = self._raw, raw_decoder(self._cols)
        for at in range(0, len(raw), CHUNK):
            yield from decode(raw[at:at + CHUNK])

    def wire_rows(self) -> tuple[int, bytes] | None:
        """The number of rows and their values as a Rows result's ``<rows_content>`` (protocol v3 to
        v5), or None when a caller replaced ``rows`` (then encode those)."""
        if self._raw is None:
            return None
        return len(self._raw), raw_encoder(self._cols)(self._raw)
