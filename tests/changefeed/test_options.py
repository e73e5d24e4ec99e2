"""Changefeed settings: YDB's literal types, defaults, validation messages and SHOW CREATE form (spec 004)."""

from __future__ import annotations

import re

import pytest

from logtide.schema.changefeed_options import (
    ChangefeedOptions,
    SettingValue,
    format_interval,
    parse_interval_us,
    parse_settings,
)
from logtide.errors import InvalidRequest


def s(text: str) -> SettingValue:
    return SettingValue("string", text, f"'{text}'")


def b(flag: bool) -> SettingValue:
    return SettingValue("bool", flag, "TRUE" if flag else "FALSE")


def i(n: int) -> SettingValue:
    return SettingValue("int", n, str(n))


def iv(text: str) -> SettingValue:
    return SettingValue("interval", text, f"Interval('{text}')")


BASE = [("MODE", s("UPDATES")), ("FORMAT", s("JSON"))]


def parse(*extra, base=BASE):
    return parse_settings(list(base) + list(extra))


def refused(message: str, *settings) -> None:
    with pytest.raises(InvalidRequest) as e:
        parse_settings(list(settings))
    assert str(e.value) == message


def test_defaults_of_every_setting():
    o = parse()
    assert o == ChangefeedOptions(mode="UPDATES", format="JSON")
    assert (o.virtual_timestamps, o.barriers_interval_ms, o.retention_seconds, o.initial_scan, o.partitions,
            o.aws_region, o.schema_changes) == (False, None, 86400, False, 1, "", False)


def test_every_setting_read():
    o = parse(("VIRTUAL_TIMESTAMPS", b(True)), ("BARRIERS_INTERVAL", iv("PT10S")), ("INITIAL_SCAN", b(True)),
              ("RETENTION_PERIOD", iv("PT12H")), ("TOPIC_MIN_ACTIVE_PARTITIONS", i(4)), ("SCHEMA_CHANGES", b(True)))
    assert o == ChangefeedOptions("UPDATES", "JSON", True, 10_000, 43_200, True, 4, "", True)


def test_names_and_mode_format_values_are_case_insensitive():
    o = parse_settings([("mode", s("new_and_old_images")), ("Format", s("debezium_json")), ("initial_Scan", b(True))])
    assert (o.mode, o.format, o.initial_scan) == ("NEW_AND_OLD_IMAGES", "DEBEZIUM_JSON", True)


@pytest.mark.parametrize("mode", ["KEYS_ONLY", "UPDATES", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"])
@pytest.mark.parametrize("fmt", ["JSON", "DEBEZIUM_JSON", "DYNAMODB_STREAMS_JSON"])
def test_mode_format_matrix(mode, fmt):
    settings = [("MODE", s(mode)), ("FORMAT", s(fmt))]
    if mode == "UPDATES" and fmt != "JSON":
        with pytest.raises(InvalidRequest, match=f"^{fmt} format incompatible with specified stream mode "):
            parse_settings(settings)
    else:
        assert parse_settings(settings) == ChangefeedOptions(mode, fmt)


def test_resolved_timestamps_is_an_alias_of_barriers_interval():
    assert parse(("RESOLVED_TIMESTAMPS", iv("PT1M"))).barriers_interval_ms == 60_000
    assert parse(("barriers_interval", iv("PT1M"))).barriers_interval_ms == 60_000


def test_barriers_interval_keeps_whole_seconds():
    assert parse(("BARRIERS_INTERVAL", iv("PT1.9S"))).barriers_interval_ms == 1000


def test_aws_region_with_dynamodb_format():
    o = parse_settings([("MODE", s("NEW_IMAGE")), ("FORMAT", s("DYNAMODB_STREAMS_JSON")), ("AWS_REGION", s("eu-1"))])
    assert o.aws_region == "eu-1"


def test_compatibility_settings_accepted():
    o = parse(("SINK_TYPE", s("local")), ("USER_SIDS", b(False)), ("TOPIC_AUTO_PARTITIONING", s("disabled")),
              ("TOPIC_MAX_ACTIVE_PARTITIONS", i(3)))
    assert o == ChangefeedOptions("UPDATES", "JSON")


def test_a_repeated_setting_keeps_its_last_value():
    assert parse(("MODE", s("KEYS_ONLY"))).mode == "KEYS_ONLY"


# every message, as YDB words it ------------------------------------------------------------------------

LITERAL_TYPE_CASES = [
    ("mode", i(1), "Literal of String type is expected for mode (got 1; write mode = 'UPDATES')"),
    ("FORMAT", b(True), "Literal of String type is expected for FORMAT (got TRUE; write FORMAT = 'JSON')"),
    ("VIRTUAL_TIMESTAMPS", s("true"),
     "Literal of Bool type is expected for VIRTUAL_TIMESTAMPS (got 'true'; write VIRTUAL_TIMESTAMPS = TRUE or FALSE)"),
    ("INITIAL_SCAN", i(1), "Literal of Bool type is expected for INITIAL_SCAN (got 1; write INITIAL_SCAN = TRUE or FALSE)"),
    ("SCHEMA_CHANGES", s("x"),
     "Literal of Bool type is expected for SCHEMA_CHANGES (got 'x'; write SCHEMA_CHANGES = TRUE or FALSE)"),
    ("USER_SIDS", s("x"), "Literal of Bool type is expected for USER_SIDS (got 'x'; write USER_SIDS = TRUE or FALSE)"),
    ("BARRIERS_INTERVAL", s("PT1S"), "Literal of Interval type is expected for BARRIERS_INTERVAL (got 'PT1S'; "
                                     "write BARRIERS_INTERVAL = Interval('PT10S'))"),
    ("Resolved_Timestamps", i(10), "Literal of Interval type is expected for Resolved_Timestamps (got 10; "
                                   "write Resolved_Timestamps = Interval('PT10S'))"),
    ("RETENTION_PERIOD", s("PT1H"), "Literal of Interval type is expected for RETENTION_PERIOD (got 'PT1H'; "
                                    "write RETENTION_PERIOD = Interval('PT24H'))"),
    ("TOPIC_MIN_ACTIVE_PARTITIONS", s("2"), "Literal of integer type is expected for TOPIC_MIN_ACTIVE_PARTITIONS "
                                            "(got '2'; write TOPIC_MIN_ACTIVE_PARTITIONS = 1)"),
    ("TOPIC_MIN_ACTIVE_PARTITIONS", b(True), "Literal of integer type is expected for TOPIC_MIN_ACTIVE_PARTITIONS "
                                             "(got TRUE; write TOPIC_MIN_ACTIVE_PARTITIONS = 1)"),
    ("TOPIC_MAX_ACTIVE_PARTITIONS", SettingValue("other", "1.5", "1.5"),
     "Literal of integer type is expected for TOPIC_MAX_ACTIVE_PARTITIONS (got 1.5; write TOPIC_MAX_ACTIVE_PARTITIONS = 1)"),
    ("AWS_REGION", i(1), "Literal of String type is expected for AWS_REGION (got 1; write AWS_REGION = 'us-east-1')"),
    ("SINK_TYPE", SettingValue("other", "NULL", "NULL"),
     "Literal of String type is expected for SINK_TYPE (got NULL; write SINK_TYPE = 'local')"),
]


@pytest.mark.parametrize("name,value,message", LITERAL_TYPE_CASES)
def test_literal_type_messages_keep_ydbs_words_and_show_a_value_to_write(name, value, message):
    refused(message, *BASE, (name, value))


VALID_SETTINGS = ("valid settings: MODE, FORMAT, VIRTUAL_TIMESTAMPS, BARRIERS_INTERVAL, RESOLVED_TIMESTAMPS, "
                  "RETENTION_PERIOD, INITIAL_SCAN, TOPIC_MIN_ACTIVE_PARTITIONS, AWS_REGION, SCHEMA_CHANGES, "
                  "TOPIC_MAX_ACTIVE_PARTITIONS, TOPIC_AUTO_PARTITIONING, USER_SIDS, SINK_TYPE")


@pytest.mark.parametrize("name,value,message", [
    ("TRACE_IDS", b(True), f"Unknown changefeed setting: TRACE_IDS ({VALID_SETTINGS})"),
    ("Colour", s("red"), f"Unknown changefeed setting: Colour ({VALID_SETTINGS})"),
    ("MODE", s("DIFF"), "Unknown changefeed mode: DIFF (valid modes: KEYS_ONLY, UPDATES, NEW_IMAGE, OLD_IMAGE, "
                        "NEW_AND_OLD_IMAGES)"),
    ("MODE", s("NEW_IMAGES"), "Unknown changefeed mode: NEW_IMAGES (valid modes: KEYS_ONLY, UPDATES, NEW_IMAGE, "
                              "OLD_IMAGE, NEW_AND_OLD_IMAGES)"),
    ("FORMAT", s("avro"), "Unknown changefeed format: avro (valid formats: JSON, DEBEZIUM_JSON, DYNAMODB_STREAMS_JSON)"),
    ("SINK_TYPE", s("kafka"), "Unknown changefeed sink type: kafka (the only sink type is 'local')"),
    ("BARRIERS_INTERVAL", iv("PT0S"), "barriers_interval must be positive (got BARRIERS_INTERVAL = Interval('PT0S'))"),
    ("RESOLVED_TIMESTAMPS", iv("-PT5S"),
     "barriers_interval must be positive (got RESOLVED_TIMESTAMPS = Interval('-PT5S'))"),
    ("RETENTION_PERIOD", iv("PT0S"), "retention_period must be positive (got RETENTION_PERIOD = Interval('PT0S'))"),
    ("TOPIC_MIN_ACTIVE_PARTITIONS", i(0),
     "Topic partitions count must be greater than 0 (got TOPIC_MIN_ACTIVE_PARTITIONS = 0)"),
    ("TOPIC_MIN_ACTIVE_PARTITIONS", i(-2),
     "Topic partitions count must be greater than 0 (got TOPIC_MIN_ACTIVE_PARTITIONS = -2)"),
    ("TOPIC_MAX_ACTIVE_PARTITIONS", i(0),
     "Topic partitions count must be greater than 0 (got TOPIC_MAX_ACTIVE_PARTITIONS = 0)"),
])
def test_value_messages_keep_ydbs_words_and_list_what_is_valid(name, value, message):
    refused(message, *BASE, (name, value))


def test_logtide_own_messages():
    refused("BARRIERS_INTERVAL must be at least 1 second: YDB keeps whole seconds of Interval('PT0.5S')",
            *BASE, ("BARRIERS_INTERVAL", iv("PT0.5S")))
    refused("RETENTION_PERIOD must be at least 1 second: YDB keeps whole seconds of Interval('PT0.1S')",
            *BASE, ("RETENTION_PERIOD", iv("PT0.1S")))
    refused("RETENTION_PERIOD Interval('PT721H') is longer than the maximum of 30 days (PT720H)",
            *BASE, ("RETENTION_PERIOD", iv("PT721H")))
    refused("Invalid value 'P1Y' of Interval literal for RETENTION_PERIOD", *BASE, ("RETENTION_PERIOD", iv("P1Y")))
    refused("Invalid value 'soon' of Interval literal for BARRIERS_INTERVAL", *BASE, ("BARRIERS_INTERVAL", iv("soon")))
    refused("Unknown TOPIC_AUTO_PARTITIONING value: maybe (expected 'ENABLED' or 'DISABLED')",
            *BASE, ("TOPIC_AUTO_PARTITIONING", s("maybe")))
    refused("TOPIC_AUTO_PARTITIONING = 'ENABLED' is not supported: a logtide changefeed topic has a fixed partition count",
            *BASE, ("TOPIC_AUTO_PARTITIONING", s("enabled")))
    refused("USER_SIDS = TRUE is not supported: logtide records carry no user identity", *BASE, ("USER_SIDS", b(True)))
    refused("Invalid stream mode: 0 (MODE is required: one of KEYS_ONLY, UPDATES, NEW_IMAGE, OLD_IMAGE, "
            "NEW_AND_OLD_IMAGES)", ("FORMAT", s("JSON")))
    refused("Invalid stream format: 0 (FORMAT is required: one of JSON, DEBEZIUM_JSON, DYNAMODB_STREAMS_JSON)",
            ("MODE", s("UPDATES")))
    refused("SCHEMA_CHANGES incompatible with specified stream format (SCHEMA_CHANGES is for FORMAT = 'JSON' only, "
            "not 'DEBEZIUM_JSON')",
            ("MODE", s("NEW_IMAGE")), ("FORMAT", s("DEBEZIUM_JSON")), ("SCHEMA_CHANGES", b(True)))


def test_thirty_days_is_the_maximum_retention():
    assert parse(("RETENTION_PERIOD", iv("P30D"))).retention_seconds == 30 * 86400


@pytest.mark.parametrize("fmt", ["DEBEZIUM_JSON", "DYNAMODB_STREAMS_JSON"])
def test_refused_combinations(fmt):
    image = ("MODE", s("NEW_IMAGE"))
    refused(f"VIRTUAL_TIMESTAMPS incompatible with specified stream format (VIRTUAL_TIMESTAMPS is for "
            f"FORMAT = 'JSON' only, not '{fmt}')", image, ("FORMAT", s(fmt)), ("VIRTUAL_TIMESTAMPS", b(True)))
    barriers = (f"RESOLVED_TIMESTAMPS incompatible with specified stream format (BARRIERS_INTERVAL/RESOLVED_TIMESTAMPS "
                f"is for FORMAT = 'JSON' only, not '{fmt}')")
    refused(barriers, image, ("FORMAT", s(fmt)), ("BARRIERS_INTERVAL", iv("PT10S")))
    refused(barriers, image, ("FORMAT", s(fmt)), ("RESOLVED_TIMESTAMPS", iv("PT10S")))
    refused(f"{fmt} format incompatible with specified stream mode (FORMAT = '{fmt}' takes MODE = 'KEYS_ONLY', "
            f"'NEW_IMAGE', 'OLD_IMAGE' or 'NEW_AND_OLD_IMAGES', not 'UPDATES')", ("MODE", s("UPDATES")),
            ("FORMAT", s(fmt)))
    if fmt != "DYNAMODB_STREAMS_JSON":
        refused(f"AWS_REGION option incompatible with specified stream format (AWS_REGION is for FORMAT = "
                f"'DYNAMODB_STREAMS_JSON' only, not '{fmt}')", image, ("FORMAT", s(fmt)), ("AWS_REGION", s("eu-1")))


def test_aws_region_refused_with_json():
    refused("AWS_REGION option incompatible with specified stream format (AWS_REGION is for FORMAT = "
            "'DYNAMODB_STREAMS_JSON' only, not 'JSON')", *BASE, ("AWS_REGION", s("eu-1")))


def test_an_empty_aws_region_is_no_region():
    assert parse(("AWS_REGION", s(""))).aws_region == ""


def test_a_literal_type_error_comes_before_a_combination_error():
    refused("Literal of Bool type is expected for INITIAL_SCAN (got 'yes'; write INITIAL_SCAN = TRUE or FALSE)",
            ("MODE", s("UPDATES")), ("FORMAT", s("DEBEZIUM_JSON")), ("INITIAL_SCAN", s("yes")))


# intervals -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,us", [
    ("PT12H", 12 * 3600 * 10**6), ("PT24H", 86400 * 10**6), ("P1D", 86400 * 10**6), ("PT10S", 10**7),
    ("PT0.5S", 500_000), ("P1W", 7 * 86400 * 10**6), ("P1DT2H3M4.000005S", (93784 * 10**6) + 5),
    ("-PT1S", -10**6), ("pt1h", None), ("P", None), ("PT", None), ("P1Y", None), ("P1M", None), ("PT1.1234567S", None),
    ("", None),
])
def test_iso8601_intervals(text, us):
    assert parse_interval_us(text) == us


@pytest.mark.parametrize("seconds,text", [(86400, "PT24H"), (43200, "PT12H"), (600, "PT10M"), (10, "PT10S"),
                                          (2592000, "PT720H"), (90, "PT90S")])
def test_interval_text(seconds, text):
    assert format_interval(seconds) == text


# SHOW CREATE form ----------------------------------------------------------------------------------------

_SETTING = re.compile(r"\s*(\w+)\s*=\s*('(?:[^']|'')*'|Interval\('[^']*'\)|TRUE|FALSE|-?\d+)\s*(?:,|$)")


def reparse(ddl: str) -> ChangefeedOptions:
    """Read a settings_ddl() text back as the DDL parser would hand it over."""
    settings, pos = [], 0
    while pos < len(ddl):
        m = _SETTING.match(ddl, pos)
        assert m, ddl[pos:]
        name, lit = m.groups()
        if lit.startswith("'"):
            value = SettingValue("string", lit[1:-1].replace("''", "'"), lit)
        elif lit.startswith("Interval"):
            value = SettingValue("interval", lit[10:-2], lit)
        elif lit in ("TRUE", "FALSE"):
            value = SettingValue("bool", lit == "TRUE", lit)
        else:
            value = SettingValue("int", int(lit), lit)
        settings.append((name, value))
        pos = m.end()
    return parse_settings(settings)


ROUND_TRIP = [
    ChangefeedOptions("UPDATES", "JSON"),
    ChangefeedOptions("KEYS_ONLY", "JSON", virtual_timestamps=True, barriers_interval_ms=10_000,
                      retention_seconds=43_200, initial_scan=True, partitions=3, schema_changes=True),
    ChangefeedOptions("NEW_AND_OLD_IMAGES", "DEBEZIUM_JSON", retention_seconds=30 * 86400),
    ChangefeedOptions("OLD_IMAGE", "DYNAMODB_STREAMS_JSON", aws_region="it's-1", retention_seconds=61),
    ChangefeedOptions("NEW_IMAGE", "JSON", barriers_interval_ms=90_000, retention_seconds=600),
]


@pytest.mark.parametrize("opts", ROUND_TRIP)
def test_settings_ddl_round_trip(opts):
    assert reparse(opts.settings_ddl()) == opts


@pytest.mark.parametrize("opts", ROUND_TRIP)
def test_catalog_document_round_trip(opts):
    assert ChangefeedOptions.from_doc(opts.to_doc()) == opts


def test_settings_ddl_text():
    opts = ChangefeedOptions("UPDATES", "JSON", virtual_timestamps=True, barriers_interval_ms=10_000)
    assert opts.settings_ddl() == (
        "MODE = 'UPDATES', FORMAT = 'JSON', VIRTUAL_TIMESTAMPS = TRUE, BARRIERS_INTERVAL = Interval('PT10S'), "
        "RETENTION_PERIOD = Interval('PT24H'), TOPIC_MIN_ACTIVE_PARTITIONS = 1")


def test_from_doc_ignores_unknown_keys():
    assert ChangefeedOptions.from_doc({"mode": "UPDATES", "format": "JSON", "future": 1}) == ChangefeedOptions(
        "UPDATES", "JSON")
