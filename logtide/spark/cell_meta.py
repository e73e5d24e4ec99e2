"""The table source's write-time, TTL, list-key and row-marker columns (docs/spark.md, "Source 1").

Options ``writetime`` (``false``/``true``/``elements``), ``ttl`` (``false``/``true``/``elements``/
``original``), ``listKeys`` and ``rowMarker`` choose extra columns, each one CQL selector:

* ``_writetime_<c>`` ``WRITETIME(c)``: bigint for an atomic column; with ``elements`` also an
  array<bigint> for each non-frozen collection/UDT, one per element or field: from logtide its
  ``LOGTIDE_ELEMENT_WRITETIMES(c)`` (logtide's ``WRITETIME(c)`` refuses a whole collection, as
  ScyllaDB's), from Cassandra 5.0 ``WRITETIME(c)``;
* ``_ttl_<c>`` ``TTL(c)`` (remaining seconds) likewise (``LOGTIDE_ELEMENT_TTLS(c)``), or with ``original``
  ``LOGTIDE_ORIGINAL_TTL(c)``, the TTL each cell was written with, for every regular column;
* ``_listkeys_<c>`` ``LOGTIDE_LIST_KEYS(l)``: each non-frozen list element's timeuuid key;
* ``_marker_writetime``/``_marker_ttl``: the row marker's write time and original TTL.

:func:`server_support` finds out at run time what the source server answers: per-element write
times need Cassandra 5.0 or logtide, the ``LOGTIDE_*`` selectors need logtide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..schema import types as T
from .options import OptionError, parse_bool, quote
from .table_info import TableInfo

WRITETIME_PREFIX = "_writetime_"
TTL_PREFIX = "_ttl_"
LIST_KEYS_PREFIX = "_listkeys_"
MARKER_WRITETIME = "_marker_writetime"
MARKER_TTL = "_marker_ttl"
OPTION_KEYS = {"writetime", "ttl", "listkeys", "rowmarker"}
_CHOICES = {"writetime": ("false", "true", "elements"), "ttl": ("false", "true", "elements", "original")}


@dataclass(frozen=True)
class MetaColumn:
    """One extra column: its Spark name, its CQL selector and the CQL type of what it selects."""

    name: str
    selector: str
    type: Any


@dataclass(frozen=True)
class Support:
    """What the source server can answer: per-element write times/TTLs, and logtide's own selectors."""

    elements: bool
    logtide: bool


def _choice(opts: Mapping[str, str], name: str) -> str:
    v = opts.get(name, "false").strip().lower()
    v = {"1": "true", "yes": "true", "0": "false", "no": "false"}.get(v, v)
    if v not in _CHOICES[name]:
        raise OptionError(f"option {name}: expected {', '.join(_CHOICES[name][:-1])} or {_CHOICES[name][-1]}, "
                          f"got {opts[name]!r}")
    return v


@dataclass(frozen=True)
class MetaOptions:
    """The options that add metadata columns, parsed."""

    writetime: str = "false"
    ttl: str = "false"
    list_keys: bool = False
    row_marker: bool = False

    @classmethod
    def parse(cls, opts: Mapping[str, str]) -> "MetaOptions":
        """From lower-cased source options."""
        return cls(_choice(opts, "writetime"), _choice(opts, "ttl"), parse_bool(opts, "listKeys", False),
                   parse_bool(opts, "rowMarker", False))

    def needs(self) -> Support:
        """What these options need from the server."""
        return Support(elements="elements" in (self.writetime, self.ttl),
                       logtide=self.ttl == "original" or self.list_keys or self.row_marker)

    def check(self, support: Support, server: str) -> None:
        """Refuse options the server cannot answer, naming the option."""
        if self.needs().elements and not support.elements:
            opt = "writetime" if self.writetime == "elements" else "ttl"
            raise OptionError(f"option {opt}=elements: {server} does not give write times or TTLs of collection "
                              f"elements (WRITETIME on a non-frozen collection needs Cassandra 5.0 or logtide)")
        if self.needs().logtide and not support.logtide:
            opt = "ttl=original" if self.ttl == "original" else "listKeys" if self.list_keys else "rowMarker"
            raise OptionError(f"option {opt}: {server} is not logtide (it needs the LOGTIDE_* selectors)")

    def columns(self, info: TableInfo, logtide: bool = True) -> list[MetaColumn]:
        """The extra columns, in schema order: write times, TTLs, list keys, then the row marker
        (``logtide``: the server is logtide, whose per-element selectors are its own ``LOGTIDE_ELEMENT_*``)."""
        out: list[MetaColumn] = []
        ttl_fn = "LOGTIDE_ORIGINAL_TTL" if self.ttl == "original" else "TTL"
        elements_fn = {"WRITETIME": "LOGTIDE_ELEMENT_WRITETIMES" if logtide else "WRITETIME",
                       "TTL": "LOGTIDE_ELEMENT_TTLS" if logtide else "TTL"}
        for prefix, mode, fn, scalar in ((WRITETIME_PREFIX, self.writetime, "WRITETIME", T.BIGINT),
                                         (TTL_PREFIX, self.ttl, ttl_fn, T.INT)):
            if mode == "false":
                continue
            for c in info.regular:
                if not c.type.is_multicell:
                    out.append(MetaColumn(prefix + c.name, f"{fn}({quote(c.name)})", None))
                elif mode != "true":
                    out.append(MetaColumn(prefix + c.name, f"{elements_fn.get(fn, fn)}({quote(c.name)})",
                                          T.ListType(scalar)))
        if self.list_keys:
            out.extend(MetaColumn(LIST_KEYS_PREFIX + c.name, f"LOGTIDE_LIST_KEYS({quote(c.name)})",
                                  T.ListType(T.TIMEUUID)) for c in info.regular
                       if isinstance(c.type, T.ListType) and c.type.is_multicell)
        if self.row_marker:
            out += [MetaColumn(MARKER_WRITETIME, "LOGTIDE_MARKER_WRITETIME()", T.BIGINT),
                    MetaColumn(MARKER_TTL, "LOGTIDE_MARKER_TTL()", T.INT)]
        return out


def legacy_columns(info: TableInfo) -> dict[str, MetaColumn]:
    """``_writetime_<c>``/``_ttl_<c>`` of every atomic regular column: what a given schema may always name."""
    return {m.name: m for m in MetaOptions("true", "true").columns(info)}


def server_support(client: Any, info: TableInfo) -> Support:
    """Ask the server (one ``LIMIT 1`` query each) whether it answers per-element and logtide selectors."""
    table = f"{quote(info.keyspace)}.{quote(info.name)}"
    multicell = next((c for c in info.regular if c.type.is_multicell), None)

    refused = _refusals()

    def answers(selector: str) -> bool:
        try:
            list(client.rows(f"SELECT {selector} FROM {table} LIMIT 1"))
            return True
        except refused:  # unknown function, refused selection; anything else (a lost connection) propagates
            return False
    logtide = answers("LOGTIDE_MARKER_WRITETIME()")
    elements = logtide or multicell is None or answers(f"WRITETIME({quote(multicell.name)})")
    return Support(elements, logtide)


def _refusals() -> tuple[type[BaseException], ...]:
    """The errors with which a server (cassandra-driver) or the embedded engine refuses a query."""
    import cassandra
    import cassandra.protocol

    from .. import errors

    return (errors.InvalidRequest, errors.SyntaxException, cassandra.RequestValidationException,
            cassandra.protocol.RequestValidationException)
