"""Record batch v2 bytes against a golden file (Kafka docs "Record Batch"), CRC-32C checked by kafka-python."""

from __future__ import annotations

from pathlib import Path

from logtide.kafka.records import Record, decode_batches, encode_batch

GOLDEN = Path(__file__).with_name("record_batch_v2.golden.txt")


def hexdump(data: bytes) -> str:
    return "\n".join(data[i:i + 16].hex(" ") for i in range(0, len(data), 16)) + "\n"


def sample() -> bytes:
    return encode_batch([Record(100, 1700000000000, None, b'{"resolved":[1,0]}'),
                         Record(101, 1700000000007, b'{"payload":{"id":1}}', b'{"payload":{"op":"c"}}')])


def test_record_batch_bytes_match_the_golden_file():
    assert hexdump(sample()) == GOLDEN.read_text()


def test_kafka_python_reads_the_batch_and_accepts_its_crc():
    from kafka.record.default_records import DefaultRecordBatch
    batch = DefaultRecordBatch(sample())
    assert batch.validate_crc()
    assert [(r.offset, r.timestamp, r.key) for r in batch] == [
        (100, 1700000000000, None), (101, 1700000000007, b'{"payload":{"id":1}}')]


def test_decode_round_trips_and_a_flipped_bit_fails_the_crc():
    data = sample()
    assert [r.offset for r in decode_batches(data)] == [100, 101]
    broken = bytearray(data)
    broken[-3] ^= 0x01
    try:
        decode_batches(bytes(broken))
    except ValueError as e:
        assert "CRC-32C" in str(e)
    else:
        raise AssertionError("a corrupt batch decoded")


def test_batches_built_straight_from_reader_rows_round_trip_through_kafka_python():
    import random

    from kafka.record.default_records import DefaultRecordBatch

    from logtide.kafka.records import encode_rows
    rows = [(100, 1700000000000, None, b'{"resolved":[1,0]}'),
            (101, 1700000000007, b'{"payload":{"id":1}}', b'{"payload":{"op":"c"}}')]
    assert hexdump(encode_rows(rows)) == GOLDEN.read_text()
    rnd = random.Random(9)
    for _ in range(200):  # sizes around the varint table's edge (16383), multi-byte deltas, null keys and values
        ts, rows = rnd.choice([0, 1700000000000]), []
        for i in range(rnd.randint(1, 30)):
            ts += rnd.choice([0, 1, 100, 20000, 1 << 22])
            rows.append((1000 + i, ts, rnd.choice([None, b"", b"k" * rnd.choice([1, 200, 20000])]),
                         rnd.choice([None, b"v" * rnd.choice([0, 1, 150, 8190, 8191, 16382, 16383, 16384, 70000])])))
        data = encode_rows(rows)
        assert [(r.offset, r.timestamp_ms, r.key, r.value) for r in decode_batches(data)] == rows
        batch = DefaultRecordBatch(data)
        assert batch.validate_crc()
        assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == rows


def test_headers_are_never_encoded():
    import pytest
    with pytest.raises(ValueError, match="headers"):
        encode_batch([Record(0, 1, None, b"v", (("h", b"x"),))])
