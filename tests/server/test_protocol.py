"""The wire protocol frame by frame, checked with cassandra-driver's own codecs."""

from __future__ import annotations

import asyncio
import io
import random
import struct

import pytest
from cassandra import ConsistencyLevel, cqltypes
from cassandra.protocol import (AlreadyExistsException, AuthResponseMessage, ErrorMessage, ExecuteMessage,
                                InvalidRequestException, OptionsMessage, PrepareMessage, PreparedQueryNotFound,
                                ProtocolException, QueryMessage, ReadyMessage, RegisterMessage, ResultMessage,
                                SupportedMessage, SyntaxException, EventMessage)
from cassandra.query import UNSET_VALUE

from logtide.server import frame as F

from .conftest import KEYSPACE_DDL
from .rawclient import RawClient

ONE = ConsistencyLevel.ONE
VERSIONS = (3, 4, 5)


def q(text: str, values: list | None = None, **kw) -> QueryMessage:
    """A QUERY message, with positional values as raw bytes."""
    msg = QueryMessage(text, ONE, **kw)
    if values is not None:
        msg.query_params = values
    return msg


@pytest.fixture(scope="module", autouse=True)
def schema(server):
    with RawClient(server.port) as c:
        c.startup()
        for stmt in (KEYSPACE_DDL.format("proto"),
                     "CREATE TYPE proto.addr (street text, num int, zip text)",
                     "CREATE TABLE proto.t (pk int, ck int, v text, a frozen<addr>, PRIMARY KEY (pk, ck))"):
            assert isinstance(c.request(q(stmt)), ResultMessage)


# -- negotiation ---------------------------------------------------------------


@pytest.mark.parametrize("version", [0x42, 0x41, 6, 7, 0x7F])
def test_unsupported_newer_versions_get_a_v4_protocol_error(port, version):
    with RawClient(port, version=version) as c:
        c.send_raw(struct.pack(">BBhBi", version, 0, 0, 0x05, 0))
        raw_version, flags, stream, opcode, body = c.recv_frame()
        assert raw_version == 0x84 and opcode == 0x00
        msg = ErrorMessage.recv_body(io.BytesIO(body), 4, {}, None, None)
        assert isinstance(msg, ProtocolException)
        assert msg.message == (f"Invalid or unsupported protocol version ({version}); "
                               "supported versions are (3/v3, 4/v4, 5/v5)")
        assert "unsupported protocol version" in msg.message
        assert c.is_closed()


@pytest.mark.parametrize("version", [1, 2])
def test_older_versions_get_an_error_in_their_own_header(port, version):
    with RawClient(port, version=version) as c:
        c.sock.sendall(struct.pack(">BBbBi", version, 0, 3, 0x05, 0))
        head = c._read_exact(8)
        raw_version, flags, stream, opcode, length = struct.unpack(">BBbBi", head)
        assert (raw_version, stream, opcode) == (0x80 | version, 3, 0)
        body = c._read_exact(length)
        assert b"Invalid or unsupported protocol version (%d)" % version in body
        assert c.is_closed()


@pytest.mark.parametrize("version", VERSIONS)
def test_options_lists_cql_version_compression_and_the_host_id_but_no_sharding_keys(port, version):
    with RawClient(port, version=version) as c:
        reply = c.request(OptionsMessage())
        assert isinstance(reply, SupportedMessage)
        assert reply.cql_versions == ["3.4.5"]
        assert "COMPRESSION" in reply.options
        assert [k for k in reply.options if k.startswith("SCYLLA")] == ["SCYLLA_HOST_ID"]
        c.startup()
        local = c.request(q("SELECT host_id FROM system.local WHERE key = 'local'"))
        assert reply.options["SCYLLA_HOST_ID"] == [str(local.parsed_rows[0][0])]


@pytest.mark.parametrize("version", VERSIONS)
def test_statements_before_startup_are_protocol_errors(port, version):
    with RawClient(port, version=version) as c:
        reply = c.request(q("SELECT * FROM system.local"))
        assert isinstance(reply, ProtocolException)
        assert reply.message == "Unexpected message QUERY, expecting STARTUP or OPTIONS"
        assert isinstance(c.startup(), ReadyMessage)  # the connection still works


def test_startup_needs_cql_version(port):
    with RawClient(port) as c:
        c.send_raw(struct.pack(">BBhBi", 4, 0, 1, 0x01, 2) + b"\x00\x00")  # STARTUP with an empty map
        reply = c.recv()
        assert isinstance(reply, ProtocolException)
        assert reply.message == "Missing value CQL_VERSION in STARTUP message"


def test_unknown_compression_is_refused(port):
    with RawClient(port) as c:
        reply = c.startup({"COMPRESSION": "zstd-9000"})
        assert isinstance(reply, ProtocolException) and "Unknown compression algorithm" in reply.message


def test_second_startup_is_refused(port):
    with RawClient(port) as c:
        c.startup()
        reply = c.startup()
        assert isinstance(reply, ProtocolException) and "already initialized" in reply.message


# -- statements ----------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_query_prepare_execute_and_streams(port, version):
    with RawClient(port, version=version) as c:
        assert isinstance(c.startup(), ReadyMessage)
        reply = c.request(q("INSERT INTO proto.t (pk, ck, v) VALUES (?, ?, ?)",
                            [cqltypes.Int32Type.serialize(version, 4), cqltypes.Int32Type.serialize(1, 4), b"one"]),
                          stream=7)
        assert reply.kind == 1 and reply.stream_id == 7
        prep = c.request(PrepareMessage("SELECT pk, ck, v FROM proto.t WHERE pk = ?"), stream=300)
        assert prep.kind == 4 and prep.stream_id == 300
        assert [m.name for m in prep.bind_metadata] == ["pk"]
        if version >= 4:
            assert prep.pk_indexes == [0]
        assert [c_[2] for c_ in prep.column_metadata] == ["pk", "ck", "v"]
        execute = ExecuteMessage(prep.query_id, [cqltypes.Int32Type.serialize(version, 4)], ONE, skip_meta=True,
                                 result_metadata_id=prep.result_metadata_id)
        rows = c.request(execute, stream=5, result_metadata=prep.column_metadata)
        assert rows.parsed_rows == [(version, 1, "one")]


def test_error_codes_and_fields(port):
    with RawClient(port) as c:
        c.startup()
        err = c.request(q("SELEC * FROM x"))
        assert isinstance(err, SyntaxException) and err.code == 0x2000
        err = c.request(q("SELECT * FROM proto.nope"))
        assert isinstance(err, InvalidRequestException) and err.code == 0x2200
        err = c.request(q(KEYSPACE_DDL.format("proto")))
        assert isinstance(err, AlreadyExistsException) and err.code == 0x2400
        assert err.info == {"keyspace": "proto", "table": ""}
        err = c.request(q("CREATE TABLE proto.t (a int PRIMARY KEY)"))
        assert err.info == {"keyspace": "proto", "table": "t"}
        err = c.request(ExecuteMessage(b"\x01" * 16, [], ONE))
        assert isinstance(err, PreparedQueryNotFound) and err.code == 0x2500 and err.info == b"\x01" * 16


def test_named_values_unset_and_null(port):
    with RawClient(port) as c:
        c.startup()
        insert = "INSERT INTO proto.t (pk, ck, v) VALUES (:k, :c, :v)"
        # Hand-built <query_parameters> with named values in a scrambled order.
        params = bytearray(struct.pack(">HB", ONE, 0x01 | 0x40) + struct.pack(">H", 3))
        for name, value in (("v", b"named"), ("c", struct.pack(">i", 2)), ("k", struct.pack(">i", 50))):
            params += struct.pack(">H", len(name)) + name.encode()
            params += struct.pack(">i", len(value)) + value
        text = insert.encode()
        frame_body = struct.pack(">i", len(text)) + text + bytes(params)
        c.send_raw(struct.pack(">BBhBi", 4, 0, 1, 0x07, len(frame_body)) + frame_body)
        assert c.recv().kind == 1
        # unset leaves the column alone, null deletes it
        prep = c.request(PrepareMessage("UPDATE proto.t SET v = ? WHERE pk = ? AND ck = ?"))
        ex = ExecuteMessage(prep.query_id, [UNSET_VALUE, struct.pack(">i", 50), struct.pack(">i", 2)], ONE)
        assert c.request(ex).kind == 1
        sel = c.request(q("SELECT v FROM proto.t WHERE pk = 50"))
        assert sel.parsed_rows == [("named",)]
        ex = ExecuteMessage(prep.query_id, [None, struct.pack(">i", 50), struct.pack(">i", 2)], ONE)
        assert c.request(ex).kind == 1
        assert c.request(q("SELECT v FROM proto.t WHERE pk = 50")).parsed_rows == [(None,)]


def test_udt_value_with_fewer_fields(port):
    with RawClient(port) as c:
        c.startup()
        prep = c.request(PrepareMessage("INSERT INTO proto.t (pk, ck, a) VALUES (?, ?, ?)"))
        one_field = struct.pack(">i", 4) + b"main"  # only 'street'
        ex = ExecuteMessage(prep.query_id, [struct.pack(">i", 60), struct.pack(">i", 1), one_field], ONE)
        assert c.request(ex).kind == 1
        rows = c.request(q("SELECT a FROM proto.t WHERE pk = 60")).parsed_rows
        assert tuple(rows[0][0]) == ("main", None, None)


def test_malformed_bound_value_is_invalid(port):
    with RawClient(port) as c:
        c.startup()
        prep = c.request(PrepareMessage("INSERT INTO proto.t (pk, ck) VALUES (?, ?)"))
        err = c.request(ExecuteMessage(prep.query_id, [b"\x00\x01\x02", struct.pack(">i", 1)], ONE))
        assert isinstance(err, InvalidRequestException)
        err = c.request(ExecuteMessage(prep.query_id, [struct.pack(">i", 1)], ONE))
        assert isinstance(err, InvalidRequestException)
        assert err.message == "There were 2 markers(?) in CQL but 1 bound variables"


def test_register_and_schema_change_events(port):
    with RawClient(port) as listener, RawClient(port) as other:
        listener.startup()
        other.startup()
        assert isinstance(listener.request(RegisterMessage(["SCHEMA_CHANGE", "STATUS_CHANGE"])), ReadyMessage)
        assert other.request(q("CREATE TABLE proto.evt (k int PRIMARY KEY)")).kind == 5
        event = listener.recv()
        assert isinstance(event, EventMessage) and event.stream_id == -1
        assert event.event_args == {"change_type": "CREATED", "target_type": "TABLE", "keyspace": "proto",
                                    "table": "evt"}


def test_register_unknown_event_type(port):
    with RawClient(port) as c:
        c.startup()
        assert isinstance(c.request(RegisterMessage(["NOPE"])), ProtocolException)


def test_v5_keyspace_flag_and_now_in_seconds(port):
    with RawClient(port, version=5) as c:
        c.startup()
        reply = c.request(QueryMessage("SELECT pk FROM t WHERE pk = 60", ONE, keyspace="proto"))
        assert reply.parsed_rows == [(60,)]
        prep = c.request(PrepareMessage("SELECT pk FROM t WHERE pk = 60", keyspace="proto"))
        assert prep.kind == 4
        # now_in_seconds (0x100) is accepted
        text = b"SELECT pk FROM proto.t WHERE pk = 60"
        body = struct.pack(">i", len(text)) + text + struct.pack(">HIi", ONE, 0x100, 1_700_000_000)
        c.send_raw(struct.pack(">BBhBi", 5, 0, 2, 0x07, len(body)) + body)
        assert c.recv().parsed_rows == [(60,)]


def test_v5_metadata_changed_after_alter(port):
    with RawClient(port, version=5) as c:
        c.startup()
        c.request(q("CREATE TABLE proto.meta (k int PRIMARY KEY, a int)"))
        c.request(q("INSERT INTO proto.meta (k, a) VALUES (1, 2)"))
        prep = c.request(PrepareMessage("SELECT * FROM proto.meta"))
        c.request(q("ALTER TABLE proto.meta ADD b int"))
        ex = ExecuteMessage(prep.query_id, [], ONE, skip_meta=True, result_metadata_id=prep.result_metadata_id)
        rows = c.request(ex, result_metadata=prep.column_metadata)
        assert rows.result_metadata_id is not None and rows.result_metadata_id != prep.result_metadata_id
        assert [m[2] for m in rows.column_metadata] == ["k", "a", "b"]
        assert rows.parsed_rows == [(1, 2, None)]


# -- compression ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["lz4", "snappy"])
def test_v4_compressed_frames(port, name):
    from logtide.server import compression

    algo = compression.available().get(name)
    if algo is None:
        pytest.skip(f"{name} is not installed")
    with RawClient(port) as c:
        assert isinstance(c.startup({"COMPRESSION": name}), ReadyMessage)
        text = b"SELECT pk, ck FROM proto.t WHERE pk = 60"
        raw = struct.pack(">i", len(text)) + text + struct.pack(">HB", ONE, 0)
        packed = algo.compress_body(raw)
        c.send_raw(struct.pack(">BBhBi", 4, 0x01, 9, 0x07, len(packed)) + packed)
        version, flags, stream, opcode, body = c.recv_frame()
        assert flags & 0x01 and stream == 9
        msg = ResultMessage.recv_body(io.BytesIO(algo.decompress_body(body)), 4, {}, None, None)
        assert msg.parsed_rows == [(60, 1)]


# -- frame-level errors ----------------------------------------------------------


def test_oversized_frame_is_refused_and_closed(port):
    with RawClient(port) as c:
        c.startup()
        c.send_raw(struct.pack(">BBhBi", 4, 0, 3, 0x07, F.DEFAULT_MAX_FRAME_BODY + 1))
        reply = c.recv()
        assert isinstance(reply, ProtocolException) and "Request is too big" in reply.message
        assert c.is_closed()


def test_version_change_mid_connection_is_refused(port):
    with RawClient(port) as c:
        c.startup()
        c.send_raw(struct.pack(">BBhBi", 3, 0, 3, 0x05, 0))
        reply = c.recv()
        assert isinstance(reply, ProtocolException) and "Invalid message version" in reply.message
        assert c.is_closed()


def test_v5_corrupt_segment_closes(port):
    with RawClient(port, version=5) as c:
        c.startup()
        frame = c.encode(OptionsMessage())
        buf = io.BytesIO()
        c.codec.encode(buf, frame)
        data = bytearray(buf.getvalue())
        data[-1] ^= 0xFF  # break the payload CRC32
        c.sock.sendall(bytes(data))
        reply = c.recv()
        assert isinstance(reply, ProtocolException) and "CRC mismatch" in reply.message
        assert c.is_closed()


def test_unknown_opcode_is_a_protocol_error_on_its_stream(port):
    with RawClient(port) as c:
        c.startup()
        c.send_raw(struct.pack(">BBhBi", 4, 0, 11, 0x33, 0))
        reply = c.recv()
        assert isinstance(reply, ProtocolException) and reply.stream_id == 11
        c.send_raw(struct.pack(">BBhBi", 4, 0, 12, 0x07, 3) + b"\x00\x00\x00")  # truncated QUERY body
        reply = c.recv()
        assert isinstance(reply, ProtocolException) and reply.stream_id == 12
        assert c.request(OptionsMessage()).cql_versions  # still usable


def test_auth_response_without_authentication_is_refused(port):
    with RawClient(port) as c:
        c.startup()
        assert isinstance(c.request(AuthResponseMessage(b"\x00a\x00b")), ProtocolException)


# -- frame and segment units -----------------------------------------------------


def test_crc24_matches_the_driver():
    from cassandra.segment import compute_crc24

    for value, length in ((0, 3), (0x123456, 3), (0xFFFFFF, 3), (0x1234567890, 5)):
        assert F.crc24(value, length) == compute_crc24(value, length)
    rng = random.Random(24)
    for _ in range(2000):
        length = rng.choice((3, 5))
        value = rng.getrandbits(8 * length)
        assert F.crc24(value, length) == compute_crc24(value, length)


@pytest.mark.parametrize("size", [0, 1, 100, F.MAX_SEGMENT_PAYLOAD, F.MAX_SEGMENT_PAYLOAD + 1, 300_000])
def test_segments_decode_with_the_driver(size):
    from cassandra.segment import SegmentCodec

    payload = bytes(i % 251 for i in range(size))
    data = io.BytesIO(F.SegmentCodec().encode(payload))
    driver = SegmentCodec()
    out = bytearray()
    contained = []
    while data.tell() < len(data.getvalue()):
        header = driver.decode_header(data)
        segment = driver.decode(data, header)
        out += segment.payload
        contained.append(segment.is_self_contained)
    assert bytes(out) == payload
    assert contained == ([True] if size <= F.MAX_SEGMENT_PAYLOAD else [False] * len(contained))


def read_frames(chunks: list[bytes], v5_after_first: bool = False) -> list[F.Frame]:
    """The frames a FrameReader cuts out of a stream fed in ``chunks`` (a real asyncio StreamReader)."""
    async def go() -> list[F.Frame]:
        reader = asyncio.StreamReader()
        for chunk in chunks:
            reader.feed_data(chunk)
        reader.feed_eof()
        frames = F.FrameReader(reader)
        out = []
        while True:
            try:
                out.append(await frames.read())
            except asyncio.IncompleteReadError as e:
                if e.partial:
                    raise
                return out
            if v5_after_first and frames.segments is None:
                frames.segments = F.SegmentCodec()
    return asyncio.run(go())


def test_frames_are_cut_alike_from_one_chunk_or_from_bytes_fed_one_at_a_time():
    bodies = [b"", b"x", bytes(range(256)) * 40, b"last"]
    startup = F.HEADER.pack(5, 0, 0, 0x01, 3) + b"abc"
    frames = [F.HEADER.pack(5, 0, i, 0x07, len(b)) + b for i, b in enumerate(bodies)]
    segments = F.SegmentCodec().encode_frames(frames[:2]) + F.SegmentCodec().encode_frames(frames[2:])
    expected = [(0, b"abc")] + [(i, b) for i, b in enumerate(bodies)]
    stream = startup + segments
    for chunks in ([stream], [stream[i:i + 1] for i in range(len(stream))], [stream[:7], stream[7:5000], stream[5000:]]):
        got = read_frames(chunks, v5_after_first=True)
        assert [(f.stream, f.body) for f in got] == expected
    legacy = b"".join(F.HEADER.pack(4, 0, i, 0x07, len(b)) + b for i, b in enumerate(bodies))
    for chunks in ([legacy], [legacy[i:i + 1] for i in range(len(legacy))]):
        assert [(f.stream, f.body) for f in read_frames(chunks)] == [(i, b) for i, b in enumerate(bodies)]


def test_a_frame_cut_short_by_the_end_of_the_stream_is_an_incomplete_read():
    data = F.HEADER.pack(4, 0, 1, 0x07, 10) + b"12345"
    with pytest.raises(asyncio.IncompleteReadError):
        read_frames([data[:3], data[3:]])


def test_cdc_log_table_changes_are_announced_with_their_base(port):
    with RawClient(port) as listener, RawClient(port) as other:
        listener.startup()
        other.startup()
        assert isinstance(listener.request(RegisterMessage(["SCHEMA_CHANGE"])), ReadyMessage)
        assert other.request(q("CREATE TABLE proto.cdcevt (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")).kind == 5
        events = [listener.recv().event_args for _ in range(2)]
        assert {(e["change_type"], e["table"]) for e in events} == {("CREATED", "cdcevt"),
                                                                     ("CREATED", "cdcevt_scylla_cdc_log")}
        assert other.request(q("ALTER TABLE proto.cdcevt ADD w int")).kind == 5
        events = [listener.recv().event_args for _ in range(2)]
        assert {(e["change_type"], e["table"]) for e in events} == {("UPDATED", "cdcevt"),
                                                                     ("UPDATED", "cdcevt_scylla_cdc_log")}
        assert other.request(q("DROP TABLE proto.cdcevt")).kind == 5
        events = [listener.recv().event_args for _ in range(2)]
        assert {(e["change_type"], e["table"]) for e in events} == {("DROPPED", "cdcevt"),
                                                                     ("DROPPED", "cdcevt_scylla_cdc_log")}
