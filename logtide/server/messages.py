"""Native-protocol messages: request bodies decoded into dataclasses, responses encoded to bodies.

Decoding raises ``ProtocolError`` for a malformed body.  Bound values stay raw
bytes here (``None`` for null, ``wire.UNSET`` for unset): only the executor
knows their types.  Encoders return ``(opcode, body)``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Sequence

from logtide.errors import (AlreadyExists, CqlError, FunctionFailure, ProtocolError, ReadFailure, ReadTimeout,
                            StorageFailure, Unprepared, WriteTimeout)
from logtide.result import ColumnSpec, SchemaChange

from . import datatypes
from .frame import FLAG_CUSTOM_PAYLOAD, Frame
from .wire import BodyReader, BodyWriter

# opcodes
ERROR, STARTUP, READY, AUTHENTICATE = 0x00, 0x01, 0x02, 0x03
OPTIONS, SUPPORTED, QUERY, RESULT, PREPARE, EXECUTE = 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A
REGISTER, EVENT, BATCH, AUTH_CHALLENGE, AUTH_RESPONSE, AUTH_SUCCESS = 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10
STATEMENT_OPCODES = frozenset((QUERY, PREPARE, EXECUTE, BATCH))  # requests that run a statement

OPCODE_NAMES = {
    ERROR: "ERROR", STARTUP: "STARTUP", READY: "READY", AUTHENTICATE: "AUTHENTICATE", 0x04: "CREDENTIALS",
    OPTIONS: "OPTIONS", SUPPORTED: "SUPPORTED", QUERY: "QUERY", RESULT: "RESULT", PREPARE: "PREPARE",
    EXECUTE: "EXECUTE", REGISTER: "REGISTER", EVENT: "EVENT", BATCH: "BATCH", AUTH_CHALLENGE: "AUTH_CHALLENGE",
    AUTH_RESPONSE: "AUTH_RESPONSE", AUTH_SUCCESS: "AUTH_SUCCESS",
}

# query flags (one byte before v5, an int from v5)
Q_VALUES, Q_SKIP_METADATA, Q_PAGE_SIZE, Q_PAGING_STATE = 0x01, 0x02, 0x04, 0x08
Q_SERIAL_CONSISTENCY, Q_TIMESTAMP, Q_NAMES, Q_KEYSPACE, Q_NOW = 0x10, 0x20, 0x40, 0x80, 0x100
CONSISTENCY_ONE = 0x0001
PREPARE_WITH_KEYSPACE = 0x01

# result kinds and rows/metadata flags
VOID, ROWS, SET_KEYSPACE, PREPARED, SCHEMA_CHANGE = 0x0001, 0x0002, 0x0003, 0x0004, 0x0005
M_GLOBAL_SPEC, M_HAS_MORE_PAGES, M_NO_METADATA, M_METADATA_CHANGED = 0x0001, 0x0002, 0x0004, 0x0008

BATCH_KINDS = {0: "LOGGED", 1: "UNLOGGED", 2: "COUNTER"}
CONSISTENCY_LEVELS = range(0x0000, 0x000B)  # ANY .. LOCAL_ONE
EVENT_TYPES = ("TOPOLOGY_CHANGE", "STATUS_CHANGE", "SCHEMA_CHANGE")


# --------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------


@dataclass
class Startup:
    options: dict[str, str]


@dataclass
class Options:
    pass


@dataclass
class AuthResponse:
    token: bytes | None


@dataclass
class Register:
    events: list[str]


@dataclass
class QueryParams:
    """The ``<query_parameters>`` of QUERY and EXECUTE."""

    consistency: int = 1
    values: list[Any] = field(default_factory=list)  # bytes | None | wire.UNSET
    names: list[str] | None = None
    skip_metadata: bool = False
    page_size: int | None = None
    paging_state: bytes | None = None
    serial_consistency: int | None = None
    timestamp: int | None = None
    keyspace: str | None = None
    now_in_seconds: int | None = None


@dataclass
class Query:
    query: str
    params: QueryParams


@dataclass
class Prepare:
    query: str
    keyspace: str | None = None


@dataclass
class Execute:
    statement_id: bytes
    result_metadata_id: bytes | None
    params: QueryParams


@dataclass
class BatchChild:
    """One statement of a BATCH: query text or prepared id, and its raw values."""

    query: str | None
    statement_id: bytes | None
    values: list[Any]


@dataclass
class Batch:
    kind: str
    children: list[BatchChild]
    consistency: int = 1
    serial_consistency: int | None = None
    timestamp: int | None = None
    keyspace: str | None = None
    now_in_seconds: int | None = None


Request = Startup | Options | AuthResponse | Register | Query | Prepare | Execute | Batch


def decode_request(frame: Frame) -> Request:
    """The request carried by ``frame``; ProtocolError if its opcode is not a request or its body is malformed."""
    r = BodyReader(frame.body)
    if frame.flags & FLAG_CUSTOM_PAYLOAD:
        r.bytes_map()  # custom payloads are accepted and ignored
    decoder = _DECODERS.get(frame.opcode)
    if decoder is None:
        name = OPCODE_NAMES.get(frame.opcode)
        what = f"{name} is not a request" if name else f"Unknown opcode {frame.opcode}"
        raise ProtocolError(f"Invalid message: {what}")
    return decoder(r, frame.version)


def _consistency(r: BodyReader) -> int:
    cl = r.short()
    if cl not in CONSISTENCY_LEVELS:
        raise ProtocolError(f"Unknown code {cl} for a consistency level")
    return cl


def _flags(r: BodyReader, version: int) -> int:
    return r.uint() if version >= 5 else r.byte()


def _query_params(r: BodyReader, version: int) -> QueryParams:
    p = QueryParams(consistency=_consistency(r))
    flags = _flags(r, version)
    if flags & Q_VALUES:
        n = r.short()
        if flags & Q_NAMES:
            p.names = []
            for _ in range(n):
                p.names.append(r.string())
                p.values.append(r.value(version >= 4))
        else:
            p.values = r.values(n, version >= 4)
    p.skip_metadata = bool(flags & Q_SKIP_METADATA)
    if flags & Q_PAGE_SIZE:
        size = r.int()
        if size == 0:
            raise ProtocolError("The page size cannot be 0")
        p.page_size = size if size > 0 else None
    if flags & Q_PAGING_STATE:
        p.paging_state = r.bytes()
    if flags & Q_SERIAL_CONSISTENCY:
        p.serial_consistency = _consistency(r)
    if flags & Q_TIMESTAMP:
        ts = r.long()
        if ts == -(2 ** 63):
            raise ProtocolError(f"Out of bound timestamp, must be in [{-(2 ** 63) + 1}, {2 ** 63 - 1}] (got {ts})")
        p.timestamp = ts
    if version >= 5:
        if flags & Q_KEYSPACE:
            p.keyspace = r.string()
        if flags & Q_NOW:
            p.now_in_seconds = r.int()
    return p


def _startup(r: BodyReader, version: int) -> Startup:
    return Startup(r.string_map())


def _options(r: BodyReader, version: int) -> Options:
    return Options()


def _auth_response(r: BodyReader, version: int) -> AuthResponse:
    return AuthResponse(r.bytes())


def _register(r: BodyReader, version: int) -> Register:
    events = r.string_list()
    for e in events:
        if e not in EVENT_TYPES:
            raise ProtocolError(f"Invalid value '{e}' for Type")
    return Register(events)


def _query(r: BodyReader, version: int) -> Query:
    text = r.long_string()
    return Query(text, _query_params(r, version))


def _prepare(r: BodyReader, version: int) -> Prepare:
    text = r.long_string()
    keyspace = None
    if version >= 5:
        flags = r.uint()
        if flags & PREPARE_WITH_KEYSPACE:
            keyspace = r.string()
    return Prepare(text, keyspace)


def _execute(r: BodyReader, version: int) -> Execute:
    statement_id = r.short_bytes()
    metadata_id = r.short_bytes() if version >= 5 else None
    return Execute(statement_id, metadata_id, _query_params(r, version))


def _batch(r: BodyReader, version: int) -> Batch:
    kind = r.byte()
    if kind not in BATCH_KINDS:
        raise ProtocolError(f"Invalid BATCH message type {kind}")
    children = []
    for _ in range(r.short()):
        child_kind = r.byte()
        if child_kind == 0:
            query, sid = r.long_string(), None
        elif child_kind == 1:
            query, sid = None, r.short_bytes()
        else:
            raise ProtocolError(f"Invalid query kind in BATCH messages. Must be 0 or 1 but got {child_kind}")
        values = r.values(r.short(), version >= 4)
        children.append(BatchChild(query, sid, values))
    b = Batch(BATCH_KINDS[kind], children, consistency=_consistency(r))
    flags = _flags(r, version)
    if flags & Q_NAMES:
        raise ProtocolError("Named values in BATCH are not supported")
    if flags & Q_SERIAL_CONSISTENCY:
        b.serial_consistency = _consistency(r)
    if flags & Q_TIMESTAMP:
        b.timestamp = r.long()
    if version >= 5:
        if flags & Q_KEYSPACE:
            b.keyspace = r.string()
        if flags & Q_NOW:
            b.now_in_seconds = r.int()
    return b


_DECODERS = {
    STARTUP: _startup, OPTIONS: _options, AUTH_RESPONSE: _auth_response, REGISTER: _register,
    QUERY: _query, PREPARE: _prepare, EXECUTE: _execute, BATCH: _batch,
}


# --------------------------------------------------------------------------
# Responses
# --------------------------------------------------------------------------

Response = tuple[int, bytes]


def error(err: CqlError, version: int = 4) -> Response:
    """ERROR with the code and the extra fields the code calls for (protocol spec section 9)."""
    if isinstance(err, StorageFailure) and version < 4:
        return ERROR, BodyWriter().int(0x0000).string(err.message).getvalue()  # v3 has no failure codes
    w = BodyWriter().int(err.code).string(err.message)
    if isinstance(err, AlreadyExists):
        w.string(err.keyspace).string(err.table)
    elif isinstance(err, Unprepared):
        w.short_bytes(err.statement_id)
    elif isinstance(err, FunctionFailure):
        w.string(err.keyspace).string(err.function).string_list(err.arg_types)
    elif isinstance(err, StorageFailure):
        # <cl><received><blockfor> then v4 <numfailures> / v5 <reasonmap>: this one node failed, at ONE
        w.short(CONSISTENCY_ONE).int(0).int(1)
        if version >= 5:
            w.int(1).byte(4).raw(bytes((127, 0, 0, 1))).short(0x0000)  # failure reason UNKNOWN
        else:
            w.int(1)
        if isinstance(err, ReadFailure):
            w.byte(0)  # data_present: false
        else:
            w.string("SIMPLE")  # write type
    elif isinstance(err, ReadTimeout):  # <cl><received><blockfor><data_present>
        w.short(err.consistency).int(err.received).int(err.block_for).byte(int(err.data_present))
    elif isinstance(err, WriteTimeout):  # <cl><received><blockfor><writeType> (never CAS: no <contentions>)
        w.short(err.consistency).int(err.received).int(err.block_for).string(err.write_type)
    return ERROR, w.getvalue()


def ready() -> Response:
    return READY, b""


def authenticate(authenticator: str) -> Response:
    return AUTHENTICATE, BodyWriter().string(authenticator).getvalue()


def auth_success(token: bytes | None = None) -> Response:
    return AUTH_SUCCESS, BodyWriter().bytes(token).getvalue()


def supported(options: dict[str, list[str]]) -> Response:
    return SUPPORTED, BodyWriter().string_multimap(options).getvalue()


_VOID = (RESULT, BodyWriter().int(VOID).getvalue())


def void() -> Response:
    return _VOID


def set_keyspace(keyspace: str) -> Response:
    return RESULT, BodyWriter().int(SET_KEYSPACE).string(keyspace).getvalue()


def _schema_change_body(w: BodyWriter, change: SchemaChange) -> BodyWriter:
    w.string(change.change_type).string(change.target).string(change.keyspace)
    if change.target != "KEYSPACE":
        w.string(change.name or "")
        if change.target in ("FUNCTION", "AGGREGATE"):
            w.string_list(getattr(change, "argument_types", ()) or ())
    return w


def schema_change(change: SchemaChange) -> Response:
    return RESULT, _schema_change_body(BodyWriter().int(SCHEMA_CHANGE), change).getvalue()


def schema_change_event(change: SchemaChange) -> Response:
    return EVENT, _schema_change_body(BodyWriter().string("SCHEMA_CHANGE"), change).getvalue()


def _metadata(w: BodyWriter, columns: Sequence[ColumnSpec], version: int, *, paging_state: bytes | None = None,
              no_metadata: bool = False, new_metadata_id: bytes | None = None) -> None:
    """The ``<metadata>`` of a Rows result or of a Prepared result's result part."""
    global_spec = datatypes.has_global_spec(columns)
    flags = 0
    if paging_state is not None:
        flags |= M_HAS_MORE_PAGES
    if no_metadata:
        flags |= M_NO_METADATA
    else:
        if global_spec:
            flags |= M_GLOBAL_SPEC
        if new_metadata_id is not None and version >= 5:
            flags |= M_METADATA_CHANGED
    w.int(flags).int(len(columns))
    if paging_state is not None:
        w.bytes(paging_state)
    if no_metadata:
        return
    if flags & M_METADATA_CHANGED:
        w.short_bytes(new_metadata_id)  # type: ignore[arg-type]
    datatypes.write_column_specs(w, columns, version, global_spec)


def rows(columns: Sequence[ColumnSpec], values: Sequence[Sequence[Any]], version: int, *,
         paging_state: bytes | None = None, no_metadata: bool = False,
         new_metadata_id: bytes | None = None, encoded: tuple[int, bytes] | None = None) -> Response:
    """A Rows result: metadata (or NO_METADATA), paging state when more pages follow, then the rows:
    ``values`` as Python values, or ``encoded`` as ``(count, rows_content)`` (``SelectResult.wire_rows``)."""
    w = BodyWriter().int(ROWS)
    _metadata(w, columns, version, paging_state=paging_state, no_metadata=no_metadata,
              new_metadata_id=new_metadata_id)
    if encoded is not None:
        w.int(encoded[0]).raw(encoded[1])
        return RESULT, w.getvalue()
    w.int(len(values))
    for row in values:
        datatypes.encode_row(w, row, columns)
    return RESULT, w.getvalue()


def prepared(statement_id: bytes, result_metadata_id: bytes, bind_specs: Sequence[ColumnSpec],
             pk_indexes: Sequence[int], result_columns: Sequence[ColumnSpec] | None, version: int) -> Response:
    """A Prepared result: the id, bind-marker metadata with partition-key indexes, result metadata."""
    w = BodyWriter().int(PREPARED).short_bytes(statement_id)
    if version >= 5:
        w.short_bytes(result_metadata_id)
    global_spec = datatypes.has_global_spec(bind_specs)
    w.int(M_GLOBAL_SPEC if global_spec else 0).int(len(bind_specs))
    if version >= 4:
        w.int(len(pk_indexes))
        for i in pk_indexes:
            w.short(i)
    datatypes.write_column_specs(w, bind_specs, version, global_spec)
    if result_columns:
        _metadata(w, result_columns, version)
    else:
        _metadata(w, (), version, no_metadata=True)
    return RESULT, w.getvalue()


def result_metadata_id(columns: Sequence[ColumnSpec] | None) -> bytes:
    """An id that changes whenever the result columns do (md5 of their v5 description)."""
    w = BodyWriter()
    if columns:
        datatypes.write_column_specs(w, columns, 5, False)
    return hashlib.md5(w.getvalue()).digest()
