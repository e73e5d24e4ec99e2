"""A changefeed's settings: the ``WITH (...)`` of ``ADD CHANGEFEED`` (spec ``004``, "Changefeed options").

Every setting YDB accepts is accepted here, with YDB's literal types, its
defaults and its error messages, in the order YDB checks them: first each
setting's literal type as the YQL parser checks it (``Literal of String type
is expected for mode``), then each value as the query processor reads it
(``Unknown changefeed mode: X``, ``retention_period must be positive``), then
the combinations the scheme shard refuses (``DEBEZIUM_JSON format
incompatible with specified stream mode``).  Where YDB has no message (a
retention above 30 days, a barrier interval under one second) logtide words
its own; ``docs/changefeeds.md`` lists each one.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

from ..cql.ast import SettingValue
from ..errors import InvalidRequest

MODES = ("KEYS_ONLY", "UPDATES", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES")
FORMATS = ("JSON", "DEBEZIUM_JSON", "DYNAMODB_STREAMS_JSON")

DEFAULT_RETENTION_SECONDS = 24 * 3600
MAX_RETENTION_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True)
class ChangefeedOptions:
    """A changefeed's validated settings (spec ``004``, "Changefeed options").

    ``barriers_interval_ms`` is None when barriers are off; YDB keeps whole
    seconds, so it is always a multiple of 1000.  ``partitions`` is
    TOPIC_MIN_ACTIVE_PARTITIONS (default 1: a logtide table is one YDB table
    partition).
    """

    mode: str
    format: str
    virtual_timestamps: bool = False
    barriers_interval_ms: int | None = None
    retention_seconds: int = DEFAULT_RETENTION_SECONDS
    initial_scan: bool = False
    partitions: int = 1
    aws_region: str = ""
    schema_changes: bool = False

    def to_doc(self) -> dict:
        """The options as a JSON-able dict, for the catalog."""
        return asdict(self)

    @classmethod
    def from_doc(cls, d: Mapping[str, object]) -> "ChangefeedOptions":
        """The options :meth:`to_doc` wrote (unknown keys, from a newer logtide, are ignored)."""
        names = cls.__dataclass_fields__.keys()
        return cls(**{k: v for k, v in d.items() if k in names})  # type: ignore[arg-type]

    def settings_ddl(self) -> str:
        """The ``WITH (...)`` body as YDB's SHOW CREATE prints it; :func:`parse_settings` reads it back unchanged."""
        parts = [f"MODE = '{self.mode}'", f"FORMAT = '{self.format}'"]
        if self.virtual_timestamps:
            parts.append("VIRTUAL_TIMESTAMPS = TRUE")
        if self.barriers_interval_ms is not None:
            parts.append(f"BARRIERS_INTERVAL = Interval('{format_interval(self.barriers_interval_ms // 1000)}')")
        if self.schema_changes:
            parts.append("SCHEMA_CHANGES = TRUE")
        if self.initial_scan:
            parts.append("INITIAL_SCAN = TRUE")
        if self.aws_region:
            parts.append("AWS_REGION = '" + self.aws_region.replace("'", "''") + "'")  # a CQL string literal
        parts.append(f"RETENTION_PERIOD = Interval('{format_interval(self.retention_seconds)}')")
        parts.append(f"TOPIC_MIN_ACTIVE_PARTITIONS = {self.partitions}")
        return ", ".join(parts)


def format_interval(seconds: int) -> str:
    """Whole seconds as the shortest ``PT..`` ISO-8601 duration YDB's docs use (``PT24H``, ``PT10S``)."""
    if seconds % 3600 == 0:
        return f"PT{seconds // 3600}H"
    if seconds % 60 == 0:
        return f"PT{seconds // 60}M"
    return f"PT{seconds}S"


_INTERVAL = re.compile(
    r"(?P<sign>-)?P(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?"
    r"(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)(?:\.(?P<f>\d{1,6}))?S)?)?"
)


def parse_interval_us(text: str) -> int | None:
    """An ISO-8601 duration as YQL's ``Interval('...')`` reads it, in microseconds; None if malformed.

    Weeks, days, hours, minutes and seconds with up to 6 fractional digits;
    no years or months (they have no fixed length), as in YQL.
    """
    m = _INTERVAL.fullmatch(text.strip())
    if m is None or text.strip().rstrip("T").endswith("P") or text.strip().endswith("T"):
        return None
    g = m.groupdict()
    seconds = (
        int(g["w"] or 0) * 7 * 86400
        + int(g["d"] or 0) * 86400
        + int(g["h"] or 0) * 3600
        + int(g["m"] or 0) * 60
        + int(g["s"] or 0)
    )
    us = seconds * 1_000_000 + int((g["f"] or "").ljust(6, "0") or 0)
    return -us if g["sign"] else us


_STRING, _BOOL, _INT, _INTERVAL_KIND = "String", "Bool", "integer", "Interval"

# setting name (lower case) -> literal type YDB's parser demands
_LITERAL: dict[str, str] = {
    "sink_type": _STRING,
    "mode": _STRING,
    "format": _STRING,
    "initial_scan": _BOOL,
    "user_sids": _BOOL,
    "virtual_timestamps": _BOOL,
    "barriers_interval": _INTERVAL_KIND,
    "resolved_timestamps": _INTERVAL_KIND,
    "schema_changes": _BOOL,
    "retention_period": _INTERVAL_KIND,
    "topic_auto_partitioning": _STRING,
    "topic_max_active_partitions": _INT,
    "topic_min_active_partitions": _INT,
    "aws_region": _STRING,
}
_KIND = {_STRING: "string", _BOOL: "bool", _INT: "int", _INTERVAL_KIND: "interval"}
# the settings in the order docs/changefeeds.md lists them, for "valid settings: ..."
SETTING_NAMES = ("MODE", "FORMAT", "VIRTUAL_TIMESTAMPS", "BARRIERS_INTERVAL", "RESOLVED_TIMESTAMPS", "RETENTION_PERIOD",
                 "INITIAL_SCAN", "TOPIC_MIN_ACTIVE_PARTITIONS", "AWS_REGION", "SCHEMA_CHANGES",
                 "TOPIC_MAX_ACTIVE_PARTITIONS", "TOPIC_AUTO_PARTITIONING", "USER_SIDS", "SINK_TYPE")
# a value of the right literal type for each setting, shown after a literal-type error
_EXAMPLE = {"sink_type": "'local'", "mode": "'UPDATES'", "format": "'JSON'", "topic_auto_partitioning": "'DISABLED'",
            "aws_region": "'us-east-1'", "barriers_interval": "Interval('PT10S')",
            "resolved_timestamps": "Interval('PT10S')", "retention_period": "Interval('PT24H')",
            "topic_min_active_partitions": "1", "topic_max_active_partitions": "1"}


def _checked(name: str, value: SettingValue) -> object:
    """The setting's value, after YDB's parser check of its literal type."""
    key = name.lower()
    literal = _LITERAL.get(key)
    if literal is None:
        raise InvalidRequest(f"Unknown changefeed setting: {name} (valid settings: {', '.join(SETTING_NAMES)})")
    if value.kind != _KIND[literal] or (literal == _INT and isinstance(value.value, bool)):
        example = _EXAMPLE.get(key, "TRUE or FALSE")
        raise InvalidRequest(f"Literal of {literal} type is expected for {name} (got {value.text}; "
                             f"write {name} = {example})")
    return value.value


def _interval_seconds(name: str, value: SettingValue, kqp_name: str) -> int:
    """A positive ``Interval`` setting in whole seconds (YDB drops the fraction, so it must reach 1 s)."""
    us = parse_interval_us(str(value.value))
    if us is None:
        raise InvalidRequest(f"Invalid value '{value.value}' of Interval literal for {name}")
    if us <= 0:
        raise InvalidRequest(f"{kqp_name} must be positive (got {name} = {value.text})")
    if us < 1_000_000:
        raise InvalidRequest(f"{name.upper()} must be at least 1 second: YDB keeps whole seconds of {value.text}")
    return us // 1_000_000


def _choice(values: Mapping[str, tuple[str, SettingValue, object]], key: str, allowed: Sequence[str]) -> str | None:
    """The upper-cased value of MODE or FORMAT, None if absent; ``Unknown changefeed <key>: X (valid <key>s: ...)``
    if not allowed."""
    if key not in values:
        return None
    raw = str(values[key][2])
    if raw.upper() not in allowed:
        raise InvalidRequest(f"Unknown changefeed {key}: {raw} (valid {key}s: {', '.join(allowed)})")
    return raw.upper()


def parse_settings(settings: Sequence[tuple[str, SettingValue]]) -> ChangefeedOptions:
    """The options of ``ADD CHANGEFEED name WITH (settings)``; raises InvalidRequest with YDB's message.

    Names are case-insensitive; a setting given twice keeps its last value (as
    YDB's parser does); MODE and FORMAT are required.
    """
    values: dict[str, tuple[str, SettingValue, object]] = {}
    for name, value in settings:
        raw = _checked(name, value)
        key = name.lower()
        if key == "resolved_timestamps":
            key = "barriers_interval"
        values[key] = (name, value, raw)

    if "sink_type" in values:
        raw = str(values["sink_type"][2])
        if raw.lower() != "local":
            raise InvalidRequest(f"Unknown changefeed sink type: {raw} (the only sink type is 'local')")

    mode = _choice(values, "mode", MODES)
    fmt = _choice(values, "format", FORMATS)

    barriers_ms = None
    if "barriers_interval" in values:
        name, value, _ = values["barriers_interval"]
        barriers_ms = _interval_seconds(name, value, "barriers_interval") * 1000

    retention = DEFAULT_RETENTION_SECONDS
    if "retention_period" in values:
        name, value, _ = values["retention_period"]
        retention = _interval_seconds(name, value, "retention_period")
        if retention > MAX_RETENTION_SECONDS:
            raise InvalidRequest(f"{name.upper()} {value.text} is longer than the maximum of 30 days (PT720H)")

    partitions = 1
    for key in ("topic_min_active_partitions", "topic_max_active_partitions"):
        if key in values:
            name, value, raw = values[key]
            if int(raw) <= 0:  # type: ignore[call-overload]
                raise InvalidRequest(f"Topic partitions count must be greater than 0 (got {name} = {value.text})")
            if key == "topic_min_active_partitions":
                partitions = int(raw)  # type: ignore[call-overload]

    if "topic_auto_partitioning" in values:
        name, _, raw = values["topic_auto_partitioning"]
        state = str(raw).lower()
        if state not in ("enabled", "disabled"):
            raise InvalidRequest(f"Unknown {name.upper()} value: {raw} (expected 'ENABLED' or 'DISABLED')")
        if state == "enabled":
            raise InvalidRequest(
                f"{name.upper()} = 'ENABLED' is not supported: a logtide changefeed topic has a fixed partition count"
            )

    if "user_sids" in values and values["user_sids"][2] is True:
        name = values["user_sids"][0]
        raise InvalidRequest(f"{name.upper()} = TRUE is not supported: logtide records carry no user identity")

    def flag(key: str) -> bool:
        return bool(values[key][2]) if key in values else False

    aws_region = str(values["aws_region"][2]) if "aws_region" in values else ""

    if mode is None:
        raise InvalidRequest(f"Invalid stream mode: 0 (MODE is required: one of {', '.join(MODES)})")
    if fmt is None:
        raise InvalidRequest(f"Invalid stream format: 0 (FORMAT is required: one of {', '.join(FORMATS)})")

    opts = ChangefeedOptions(
        mode=mode,
        format=fmt,
        virtual_timestamps=flag("virtual_timestamps"),
        barriers_interval_ms=barriers_ms,
        retention_seconds=retention,
        initial_scan=flag("initial_scan"),
        partitions=partitions,
        aws_region=aws_region,
        schema_changes=flag("schema_changes"),
    )
    check_combination(opts)
    return opts


def check_combination(opts: ChangefeedOptions) -> None:
    """Refuse what YDB's scheme shard refuses, with its messages, in its order (each followed by what to write)."""
    if opts.mode == "UPDATES" and opts.format in ("DYNAMODB_STREAMS_JSON", "DEBEZIUM_JSON"):
        raise InvalidRequest(f"{opts.format} format incompatible with specified stream mode (FORMAT = "
                             f"'{opts.format}' takes MODE = 'KEYS_ONLY', 'NEW_IMAGE', 'OLD_IMAGE' or "
                             f"'NEW_AND_OLD_IMAGES', not 'UPDATES')")
    if opts.aws_region and opts.format != "DYNAMODB_STREAMS_JSON":
        raise InvalidRequest(f"AWS_REGION option incompatible with specified stream format (AWS_REGION is for "
                             f"FORMAT = 'DYNAMODB_STREAMS_JSON' only, not '{opts.format}')")
    for on, name in ((opts.virtual_timestamps, "VIRTUAL_TIMESTAMPS"),
                     (opts.barriers_interval_ms is not None, "RESOLVED_TIMESTAMPS"),
                     (opts.schema_changes, "SCHEMA_CHANGES")):
        if on and opts.format != "JSON":
            shown = "BARRIERS_INTERVAL/RESOLVED_TIMESTAMPS" if name == "RESOLVED_TIMESTAMPS" else name
            raise InvalidRequest(f"{name} incompatible with specified stream format ({shown} is for "
                                 f"FORMAT = 'JSON' only, not '{opts.format}')")
