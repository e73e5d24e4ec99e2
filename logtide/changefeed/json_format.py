"""JSON-format changefeed records, compiled once per table and changefeed (spec ``004``, "Record structure").

The JSON format of ``docs/changefeeds.md`` ("Record shapes"): ``key``, then
``update`` or ``erase``, then ``newImage``, ``oldImage`` and ``ts``, compact,
columns in name order.  :class:`JsonRecords` builds the text directly from a
:class:`~logtide.changefeed.render.RowChange` with one encoder per column,
chosen once from its CQL type: text is escaped by the C JSON string encoder,
integers and booleans are written as they are, and every other type goes
through :func:`~logtide.changefeed.values.to_json_value` and
:func:`~logtide.changefeed.values.dumps`.  The bytes are those ``dumps`` of the
record's object would give; the write path keeps one instance per changefeed
so that nothing is looked up per record.  Pure: no I/O.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any, Callable, Mapping

from ..schema.types import EMPTY
from ..schema.types_codec import split_collection
from ..schema.changefeed_options import ChangefeedOptions
from .values import _INTEGERS, _TEXT, dumps, to_json_value

Encoder = Callable[[Any], str]


def _text(value: Any) -> str:
    return "null" if value is None or value is EMPTY else encode_basestring(value)


def _integer(value: Any) -> str:
    return "null" if value is None or value is EMPTY else int.__repr__(value)


def _boolean(value: Any) -> str:
    return "null" if value is None or value is EMPTY else ("true" if value else "false")


def value_encoder(ctype: Any) -> Encoder:
    """The compact JSON text of a value of ``ctype`` (``null`` for null), as ``dumps(to_json_value(...))``."""
    if ctype.kind == "native":
        if ctype.name in _TEXT:
            return _text
        if ctype.name in _INTEGERS:
            return _integer
        if ctype.name == "boolean":
            return _boolean

    def other(value: Any) -> str:
        return "null" if value is None or value is EMPTY else dumps(to_json_value(ctype, value))
    return other


def _integer_bytes(data: bytes | None) -> str:
    # an integer's value is its big-endian two's complement; no bytes is the empty value (null)
    return "null" if not data else int.__repr__(int.from_bytes(data, "big", signed=True))


def _text_bytes(data: bytes | None) -> str:
    return "null" if data is None else encode_basestring(data.decode("utf-8"))


def _native_bytes_encoder(ctype: Any) -> Callable[[bytes | None], str] | None:
    """The encoder of integers or text straight from their bytes (None for any other type)."""
    if ctype.kind == "native" and ctype.name in _INTEGERS:
        return _integer_bytes
    if ctype.kind == "native" and ctype.name in _TEXT:
        return _text_bytes
    return None


def bytes_encoder(ctype: Any) -> Callable[[bytes | None], str]:
    """The compact JSON text of a serialized value of ``ctype`` (``null`` for None): :func:`value_encoder` of
    the deserialized value (integers and text, and lists of them, straight from their bytes)."""
    direct = _native_bytes_encoder(ctype)
    if direct is not None:
        return direct
    enc = value_encoder(ctype)
    des = ctype.deserialize

    def encode(data: bytes | None) -> str:
        return "null" if data is None else enc(des(data))
    element = _native_bytes_encoder(ctype.element) if ctype.kind == "list" else None
    if element is None:
        return encode

    def encode_list(data: bytes | None) -> str:
        # a list is its elements in order; an empty or null element (never written by CQL) takes the general path
        if not data:
            return "null" if data is None else encode(data)
        items = split_collection(data)
        if not all(items):
            return encode(data)
        return "[" + ",".join([element(b) for b in items]) + "]"
    return encode_list


class JsonRecords:
    """The JSON records of one changefeed of one table (the table as it is; a schema change makes a new one)."""

    def __init__(self, table: Any, opts: ChangefeedOptions) -> None:
        self.table = table
        self.opts = opts
        self._key = tuple(value_encoder(c.type) for c in table.primary_key)
        self._columns = tuple((c.name, encode_basestring(c.name) + ":", value_encoder(c.type))
                              for c in table.value_columns)
        # a clustered row's image columns (the regular ones, in name order) with their serialized-value encoders
        self.row_columns = table.regular_by_name
        self._row_names = tuple(encode_basestring(c.name) + ":" for c in self.row_columns)
        self._row_encoders = tuple(bytes_encoder(c.type) for c in self.row_columns)
        self._templates: dict[tuple[bool, bool, bool], str] = {}  # by (erase, new image, old image)
        self._key_bytes = tuple(bytes_encoder(c.type) for c in table.primary_key)
        mode = opts.mode
        self._updates = mode == "UPDATES"
        self._new = mode in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")
        self._old = mode in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES")

    def key_json(self, key: tuple) -> str:
        """The compact JSON ``key`` array (the text the partition's MD5 is taken over)."""
        return "[" + ",".join([enc(v) for enc, v in zip(self._key, key)]) + "]"

    def columns(self, values: Mapping[str, object]) -> str:
        """A JSON object of the non-key columns present in ``values``, in name order."""
        return "{" + ",".join([name_json + enc(values[name]) for name, name_json, enc in self._columns
                               if name in values]) + "}"

    def record(self, change: Any, key_json: str, step: int, tx_id: int) -> str:
        """The record's text (``key_json`` from :meth:`key_json`)."""
        if change.kind == "erase":
            out = '{"key":' + key_json + ',"erase":{}'
        elif self._updates:
            out = '{"key":' + key_json + ',"update":' + self.columns(change.updated)
        else:
            out = '{"key":' + key_json + ',"update":{}'
        if self._new and change.new is not None:
            out += ',"newImage":' + self.columns(change.new)
        if self._old and change.old is not None:
            out += ',"oldImage":' + self.columns(change.old)
        if self.opts.virtual_timestamps:
            out += ',"ts":[%d,%d]' % (step, tx_id)
        return out + "}"

    def row_key_json(self, key: tuple[bytes, ...]) -> str:
        """:meth:`key_json` of a primary key's serialized values."""
        return "[" + ",".join([enc(v) for enc, v in zip(self._key_bytes, key)]) + "]"

    def row_text(self, key_json: str, erase: bool, old: list[bytes | None] | None, new: list[bytes | None] | None,
                 step: int, tx_id: int) -> str:
        """The record text of :meth:`row_record` (``key_json`` from :meth:`row_key_json`): one ``%`` of the
        record's template, with each value encoded once (a value the write left as it was is shared)."""
        encoders = self._row_encoders
        old_text = None if old is None or not self._old else [enc(b) for enc, b in zip(encoders, old)]
        new_text = None
        if self._new and new is not None:
            if old_text is None:
                new_text = [enc(b) for enc, b in zip(encoders, new)]
            else:
                new_text = [t if a == b else enc(a) for enc, a, b, t in zip(encoders, new, old, old_text)]
        shape = (erase, new_text is not None, old_text is not None)
        template = self._templates.get(shape)
        if template is None:
            template = self._templates[shape] = self._template(*shape)
        args = [key_json]
        if new_text is not None:
            args += new_text
        if old_text is not None:
            args += old_text
        if self.opts.virtual_timestamps:
            args += (step, tx_id)
        return template % tuple(args)

    def _template(self, erase: bool, new: bool, old: bool) -> str:
        """The ``%`` template of a row record of this shape (a ``%s`` per value, ``%d`` for the timestamp)."""
        image = "{" + ",".join([name.replace("%", "%%") + "%s" for name in self._row_names]) + "}"
        out = '{"key":%s' + (',"erase":{}' if erase else ',"update":{}')
        if new:
            out += ',"newImage":' + image
        if old:
            out += ',"oldImage":' + image
        if self.opts.virtual_timestamps:
            out += ',"ts":[%d,%d]'
        return out + "}"

    def row_record(self, erase: bool, key: tuple[bytes, ...], old: list[bytes | None] | None,
                   new: list[bytes | None] | None, step: int, tx_id: int) -> tuple[str, str]:
        """(``key_json``, record text) of a clustered row's change straight from serialized values: ``key`` the
        primary key's, ``old``/``new`` those of :attr:`row_columns` before/after the write (None: no row; ``new``
        None for an erase).  The text :meth:`record` gives for the same change in every mode but UPDATES (whose
        ``update`` lists the written columns)."""
        key_json = self.row_key_json(key)
        return key_json, self.row_text(key_json, erase, old, new, step, tx_id)
