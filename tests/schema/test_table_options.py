"""Table and keyspace options checked, stored and printed as ScyllaDB does (cf_prop_defs, compaction strategies,
compression parameters, caching, tombstone_gc, speculative_retry, the keyspace tablets option)."""

import pytest

from logtide.errors import ConfigurationException, SyntaxException

from .helpers import apply, run


def options_after(cat, with_clause):
    return run(cat, f"CREATE TABLE t (k int PRIMARY KEY) WITH {with_clause}").table("ks", "t").options


def refused(cat, with_clause, error, message):
    with pytest.raises(error) as info:
        apply(cat, f"CREATE TABLE t (k int PRIMARY KEY) WITH {with_clause}")
    assert str(info.value) == message


@pytest.mark.parametrize("compaction, message", [
    ("{'class': 'SizeTieredCompactionStrategy', 'tombstone_threshold': -0.4}",
     "tombstone_threshold value (-0.4) must be between 0.0 and 1.0"),
    ("{'class': 'LeveledCompactionStrategy', 'tombstone_compaction_interval': -7}",
     "tombstone_compaction_interval value (-7000ms) must be positive"),
    ("{'class': 'LeveledCompactionStrategy', 'unchecked_tombstone_compaction': 'maybe'}",
     'unchecked_tombstone_compaction value (maybe) must be "true" or "false"'),
    ("{'class': 'LeveledCompactionStrategy', 'enabled': 'certainly'}", 'enabled value (certainly) must be "true" or "false"'),
    ("{'class': 'SizeTieredCompactionStrategy', 'min_sstable_size': -1}", "min_sstable_size value (-1) must be non negative"),
    ("{'class': 'SizeTieredCompactionStrategy', 'bucket_low': 0.0}", "bucket_low value (0) must be between 0.0 and 1.0"),
    ("{'class': 'SizeTieredCompactionStrategy', 'bucket_high': 0.7}", "bucket_high value (0.7) must be greater than 1.0"),
    ("{'class': 'SizeTieredCompactionStrategy', 'cold_reads_to_omit': 3.5}",
     "cold_reads_to_omit value (3.5) must be between 0.0 and 1.0"),
    ("{'class': 'SizeTieredCompactionStrategy', 'min_threshold': 1}", "min_threshold value (1) must be bigger or equal to 2"),
    ("{'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'SECONDS'}",
     "Invalid window unit SECONDS for compaction_window_unit"),
    ("{'class': 'TimeWindowCompactionStrategy', 'compaction_window_size': -8}",
     "compaction_window_size value (-8) must be greater than 1"),
    ("{'class': 'TimeWindowCompactionStrategy', 'timestamp_resolution': 'SECONDS'}",
     "Invalid timestamp resolution SECONDS for timestamp_resolution"),
    ("{'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': -5}", "sstable_size_in_mb value (-5) must be positive"),
    ("{'class': 'IncrementalCompactionStrategy', 'space_amplification_goal': 2.2}",
     "space_amplification_goal value (2.2) must be greater than 1.0 and less than or equal to 2.0"),
    ("{'class': 'SizeTieredCompactionStrategy', 'abc': -54.54, 'dog': 3}",
     'Invalid compaction strategy options {"abc": "-54.54", "dog": "3"} for chosen strategy type'),
    ("{'class': 'LeveledCompactionStrategy', 'compaction_window_size': 4}",
     'Invalid compaction strategy options {"compaction_window_size": "4"} for chosen strategy type'),
    ("{'class': 'DateTieredCompactionStrategy'}", "Unable to find compaction strategy class 'DateTieredCompactionStrategy'"),
    ("{'min_threshold': 2}", "Missing sub-option 'class' for the 'compaction' option."),
])
def test_compaction_options_refused_with_scylla_messages(cat, compaction, message):
    refused(cat, f"compaction = {compaction}", ConfigurationException, message)


def test_compaction_options_kept_as_given(cat):
    opts = options_after(cat, "compaction = {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', "
                              "'sstable_size_in_mb': '160', 'enabled': 'false', 'tombstone_threshold': '0.3'}")
    assert opts["compaction"] == {"class": "LeveledCompactionStrategy", "enabled": "false",
                                  "sstable_size_in_mb": "160", "tombstone_threshold": "0.3"}


@pytest.mark.parametrize("given, stored", [
    ("{}", {}),
    ("{'sstable_compression': ''}", {}),
    ("{'sstable_compression': 'SnappyCompressor'}", {"sstable_compression": "org.apache.cassandra.io.compress.SnappyCompressor"}),
    ("{'sstable_compression': 'LZ4WithDictsCompressor', 'chunk_length_in_kb': 16}",
     {"chunk_length_in_kb": "16", "sstable_compression": "LZ4WithDictsCompressor"}),
    ("{'class': 'DeflateCompressor'}", {"sstable_compression": "org.apache.cassandra.io.compress.DeflateCompressor"}),
    ("{'enabled': false}", {}),
])
def test_compression_accepted(cat, given, stored):
    assert options_after(cat, f"compression = {given}")["compression"] == stored


@pytest.mark.parametrize("given, message", [
    ("{'chunk_length_in_kb': 16}", "Missing sub-option 'sstable_compression' for the 'compression' option."),
    ("{'sstable_compression': 'Nope'}", "Unknown sstable_compression: Nope"),
    ("{'sstable_compression': 'LZ4Compressor', 'chunk_length_in_kb': 3}", "chunk_length_in_kb/chunk_length_kb must be a power of 2."),
    ("{'sstable_compression': 'LZ4Compressor', 'chunk_length_in_kb': 256}", "chunk_length_in_kb/chunk_length_kb must be 128 or less."),
    ("{'sstable_compression': 'LZ4Compressor', 'level': 3}", "Unknown compression option 'level'."),
])
def test_compression_refused(cat, given, message):
    refused(cat, f"compression = {given}", ConfigurationException, message)


def test_caching_replaces_the_defaults_and_is_checked(cat):
    assert options_after(cat, "caching = {'rows_per_partition': '10'}")["caching"] == {"keys": "ALL", "rows_per_partition": "10"}
    assert options_after(cat, "caching = {'enabled': 'false', 'keys': 'NONE', 'rows_per_partition': 'NONE'}")["caching"] == \
        {"enabled": "false", "keys": "NONE", "rows_per_partition": "NONE"}
    refused(cat, "caching = {'keys': 'SOME'}", ConfigurationException, "Invalid key value: SOME")
    refused(cat, "caching = {'rows': 'ALL'}", ConfigurationException, "Invalid caching option: rows")


@pytest.mark.parametrize("given, stored", [
    ("'ALWAYS'", "ALWAYS"), ("'none'", "NONE"), ("'99PERCENTILE'", "99.0PERCENTILE"), ("'+100PERCENTILE'", "100.0PERCENTILE"),
    ("'-0PERCENTILE'", "-0.0PERCENTILE"), ("'50.00ms'", "50.00ms"), ("'200ms'", "200.00ms"), ("'0.001percentile'", "0.0PERCENTILE"),
])
def test_speculative_retry_printed_as_scylla(cat, given, stored):
    assert options_after(cat, f"speculative_retry = {given}")["speculative_retry"] == stored


@pytest.mark.parametrize("given, message", [
    ("'101PERCENTILE'", "Invalid value 101PERCENTILE for PERCENTILE option 'speculative_retry': must be between [0.0 and 100.0]"),
    ("'-1ms'", "Invalid value -1MS for option 'speculative_retry': the number of milliseconds must be non-negative and finite"),
    ("'dog'", "cannot convert DOG to speculative_retry\n"),
    ("'xPERCENTILE'", "cannot convert XPERCENTILE to speculative_retry\n"),
])
def test_speculative_retry_refused(cat, given, message):
    refused(cat, f"speculative_retry = {given}", ConfigurationException, message)


def test_tombstone_gc_checked_with_defaults(cat):
    assert options_after(cat, "tombstone_gc = {'mode': 'immediate'}")["tombstone_gc"] == \
        {"mode": "immediate", "propagation_delay_in_seconds": "3600"}
    refused(cat, "tombstone_gc = {'mode': 'never'}", ConfigurationException, "Invalid value for tombstone_gc option mode: never")
    refused(cat, "tombstone_gc = {'delay': '1'}", ConfigurationException, "Invalid tombstone_gc option: delay")


@pytest.mark.parametrize("with_clause, error, message", [
    ("min_index_interval = 0", ConfigurationException, "min_index_interval must be greater than 0"),
    ("min_index_interval = 200 AND max_index_interval = 100", ConfigurationException,
     "max_index_interval must be greater than min_index_interval"),
    ("memtable_flush_period_in_ms = 10", ConfigurationException, "memtable_flush_period_in_ms must be 0 or greater than 60000"),
    ("paxos_grace_seconds = -1", ConfigurationException, "paxos_grace_seconds cannot be smaller than 0, (default 864000)"),
    ("tablets = {'min_tablet_count': 1}", ConfigurationException,
     "tablet options cannot be used when tablets are disabled for the keyspace"),
    ("nope = 1", SyntaxException, "Unknown property 'nope'"),
])
def test_table_property_checks(cat, with_clause, error, message):
    refused(cat, with_clause, error, message)


def test_obsolete_properties_are_accepted_and_ignored(cat):
    opts = options_after(cat, "read_repair_chance = 0.5 AND dclocal_read_repair_chance = 0.1 AND index_interval = 3")
    assert opts["read_repair_chance"] == 0.0 and "index_interval" not in opts


def test_keyspace_tablets_option_only_disabled(cat):
    run(cat, "CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} "
             "AND tablets = {'enabled': false}")
    with pytest.raises(ConfigurationException) as info:
        apply(cat, "CREATE KEYSPACE k2 WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} "
                   "AND tablets = {'enabled': true}")
    assert str(info.value) == "Cannot enable tablets for keyspace since tablets are disabled"
