"""The ``logtide-changefeed`` source fails the query with the message when it meets a damaged record.

One record of a changefeed had a bit flipped (``tests/storage/test_feed_checksums.py``); reading the topic
from the data directory fails naming changefeed, partition and offset, and over Kafka with the broker's
CORRUPT_MESSAGE (no row of altered data reaches Spark either way); reading up to the record still works.
"""

from __future__ import annotations

import re

import pytest

from logtide.changefeed.reader import DirectoryTopicReader
from tests.storage.test_feed_checksums import DBZ_FEED, damage_record, locate, make_feeds

from .conftest import serve
from .test_changefeed_source import kafka_port, read


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    data = tmp_path_factory.mktemp("cf-damage") / "d"
    make_feeds(data)
    with DirectoryTopicReader(data) as r:
        _, offset = locate(r, DBZ_FEED, 5)
    damage_record(data, DBZ_FEED, 0, offset)
    return data, offset


def test_a_local_read_fails_with_the_damage_named_and_reads_up_to_it(spark, damaged):
    data, offset = damaged
    with pytest.raises(Exception) as err:
        read(spark, {"topic": DBZ_FEED, "path": str(data)}).collect()
    message = str(err.value)
    assert f"DamagedFeed: Damaged record in changefeed {DBZ_FEED}, partition 0, offset {offset}: checksum " \
           "mismatch" in message
    assert "changefeed/storage.py" not in message  # the message, not logtide's traceback
    before = read(spark, {"topic": DBZ_FEED, "path": str(data), "endingOffsets": f'{{"0": {offset}}}'}).collect()
    assert sorted(r._offset for r in before) == list(range(offset))
    after = read(spark, {"topic": DBZ_FEED, "path": str(data), "startingOffsets": f'{{"0": {offset + 1}}}'}).collect()
    assert sorted(r._offset for r in after) == list(range(offset + 1, 12))


def test_a_read_over_kafka_fails_with_the_brokers_corrupt_message(spark, damaged):
    data, offset = damaged
    srv = serve(data, "--kafka-port", "auto")
    try:
        opts = {"topic": DBZ_FEED, "bootstrap": f"127.0.0.1:{kafka_port(srv)}", "cqlPort": str(srv.port)}
        with pytest.raises(Exception) as err:
            read(spark, opts).collect()
        assert re.search(rf"reading {re.escape(DBZ_FEED.replace('/', '.'))} partition 0: .*failed at offset "
                         rf"{offset}.*Broker: Invalid message", str(err.value)), str(err.value)[-2000:]
        assert any(f"Damaged record in changefeed {DBZ_FEED}, partition 0, offset {offset}" in x for x in srv.lines)
    finally:
        srv.stop()
