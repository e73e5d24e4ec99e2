"""Options of the ``logtide-changefeed`` source (docs/spark.md "Source 3"), parsed once with errors naming the option.

The names are those of Spark's Kafka source (Structured Streaming + Kafka Integration Guide):
``kafka.bootstrap.servers``, ``subscribe`` / ``subscribePattern`` / ``assign``, ``startingOffsets`` /
``endingOffsets`` as ``{"topic": {"0": 12}}``, ``startingTimestamp`` and the ``...ByTimestamp`` forms
in milliseconds, ``maxOffsetsPerTrigger`` / ``minOffsetsPerTrigger`` / ``maxTriggerDelay``,
``failOnDataLoss`` and ``kafka.``-prefixed client settings; logtide's earlier names (``bootstrap``,
``topic``, ``maxRecordsPerTrigger``, offsets as ``{"0": 12}``) stay as aliases.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .changefeed_topic import KafkaSettings, TopicAddress
from .options import OptionError, lowered, parse_bool, parse_duration_micros, parse_int, parse_login

NAMES = ("kafka.bootstrap.servers", "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets",
         "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy", "endingTimestamp",
         "endingOffsetsByTimestamp", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
         "failOnDataLoss", "kafka.*", "path", "consumer", "consistent", "raw", "cqlHost", "cqlPort", "tableSchema",
         "mode", "format", "username", "password", "ssl", "sslCaFile", "timeout",
         "topic", "bootstrap", "maxRecordsPerTrigger")  # the last three: logtide's earlier names
KEYS = {n.lower() for n in NAMES}
# Kafka client settings the reader sets itself (Spark's Kafka source refuses them too)
RESERVED_KAFKA = ("group.id", "auto.offset.reset", "enable.auto.commit", "key.deserializer", "value.deserializer",
                  "interceptor.classes")


def split_topic(topic: str, option: str = "topic") -> tuple[str, str, str]:
    """``ks/t/name``, ``/ks/t/name`` or ``ks.t.name`` as (keyspace, table, name)."""
    t = topic.strip().strip("/")
    parts = t.split("/") if "/" in t else t.split(".")
    if len(parts) != 3 or not all(parts):
        raise OptionError(f"option {option}: expected keyspace/table/changefeed (or keyspace.table.changefeed), "
                          f"got {topic!r}")
    return parts[0], parts[1], parts[2]


def _same_topic(name: str, topic: tuple[str, str, str]) -> bool:
    try:
        return split_topic(name) == topic
    except OptionError:
        return False


def _per_topic(opts: Mapping[str, str], name: str, topic: tuple[str, str, str], example: str) -> dict | None:
    """A JSON object of partition -> number, or Spark's ``{"topic": {partition: number}}`` for the topic read."""
    v = opts.get(name.lower())
    if v is None:
        return None
    kafka_name = ".".join(topic)
    try:
        d = json.loads(v)
        if not isinstance(d, dict):
            raise ValueError
        if d and all(isinstance(x, dict) for x in d.values()):  # Spark's form, keyed by topic
            other = [k for k in d if not _same_topic(k, topic)]
            if other:
                raise OptionError(f"option {name}: topic {other[0]!r} is not the topic read ({kafka_name})")
            d = {p: o for x in d.values() for p, o in x.items()}
        return {int(k): int(o) for k, o in d.items()}
    except OptionError:
        raise
    except (ValueError, TypeError, AttributeError):
        raise OptionError(f"option {name}: expected {example}, got {v!r}") from None


def parse_offsets(opts: Mapping[str, str], name: str, topic: tuple[str, str, str]) -> str | dict[int, int] | None:
    """``earliest``, ``latest``, Spark's ``{"ks.t.name": {"0": 12}}`` or ``{"0": 12}`` (-2 earliest, -1 latest)."""
    v = opts.get(name.lower())
    if v is not None and v.strip().lower() in ("earliest", "latest"):
        return v.strip().lower()
    out = _per_topic(opts, name, topic, f'earliest, latest or JSON such as {{"{".".join(topic)}": {{"0": 12, '
                                        f'"1": -2}}}} (partition -> offset; -2 earliest, -1 latest)')
    if out is not None and any(p < 0 or o < -2 for p, o in out.items()):
        raise OptionError(f"option {name}: partitions must be >= 0 and offsets >= -2, got {v!r}")
    return out


def parse_times(opts: Mapping[str, str], single: str, by_partition: str,
                topic: tuple[str, str, str]) -> int | dict[int, int] | None:
    """``single`` (ms since the epoch, every partition) wins over ``by_partition`` (JSON partition -> ms), as Spark."""
    ms = parse_int(opts, single, None, minimum=0)
    if ms is not None:
        return ms
    out = _per_topic(opts, by_partition, topic, f'JSON such as {{"{".".join(topic)}": {{"0": 1700000000000}}}} '
                                                f"(partition -> milliseconds since the epoch)")
    if out is not None and any(p < 0 or t < 0 for p, t in out.items()):
        raise OptionError(f"option {by_partition}: partitions and timestamps must be >= 0")
    return out


def kafka_client_options(opts: Mapping[str, str], original: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``kafka.``-prefixed options (but ``kafka.bootstrap.servers``) as librdkafka settings
    (:func:`.kafka_config.librdkafka_settings`): Java's ``sasl.jaas.config`` (PlainLoginModule or
    ScramLoginModule, parsed strictly) becomes ``sasl.username`` / ``sasl.password``, a Java keystore is refused
    naming ``kafka.ssl.ca.location``."""
    from .kafka_config import librdkafka_settings

    names = {str(k).lower(): str(k) for k in dict(original)}
    settings: dict[str, str] = {}
    named: dict[str, str] = {}
    for key, value in opts.items():
        if not key.startswith("kafka.") or key == "kafka.bootstrap.servers":
            continue
        setting = names[key][len("kafka."):]
        if setting.lower() in RESERVED_KAFKA:
            raise OptionError(f"option {names[key]}: Kafka option '{setting}' is not supported: the source sets it "
                              f"itself (offsets are tracked by Spark's checkpoint; option consumer names a group "
                              f"to commit to)")
        settings[setting.lower()] = value
        named[setting.lower()] = f"option {names[key]}"
    return tuple(sorted(librdkafka_settings(settings, named).items()))


def _one_of(opts: Mapping[str, str], *names: str) -> str | None:
    given = [n for n in names if n.lower() in opts]
    if len(given) > 1:
        raise OptionError(f"options {' and '.join(given)} mean the same: give one")
    return opts[given[0].lower()] if given else None


def _topic(opts: Mapping[str, str]) -> tuple[str, Any]:
    """The topic option given (name, value): exactly one of subscribe, subscribePattern, assign, topic."""
    given = [n for n in ("subscribe", "subscribePattern", "assign", "topic") if n.lower() in opts]
    if len(given) != 1:
        raise OptionError("exactly one of the options subscribe (the changefeed topic, keyspace.table.changefeed), "
                          "subscribePattern, assign (or topic) is required" +
                          (f", got {', '.join(given)}" if given else ""))
    return given[0], opts[given[0].lower()]


def _assigned(value: str) -> tuple[str, tuple[int, ...]]:
    try:
        d = json.loads(value)
        if not isinstance(d, dict) or len(d) != 1:
            raise ValueError
        (name, parts), = d.items()
        if not isinstance(parts, list) or not parts or not all(isinstance(p, int) and p >= 0 for p in parts):
            raise ValueError
    except ValueError:
        raise OptionError(f'option assign: expected JSON of one topic and its partitions such as '
                          f'{{"ks.t.feed": [0, 1]}}, got {value!r}') from None
    return name, tuple(sorted(set(parts)))


def _subscribed(value: str) -> str:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if len(names) != 1:
        raise OptionError(f"option subscribe: one changefeed topic is read per source (its rows have the table's "
                          f"columns), got {value!r}")
    return names[0]


def _matching(pattern: str, kafka: KafkaSettings | None, path: str | None) -> str:
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise OptionError(f"option subscribePattern: not a regular expression ({e}): {pattern!r}") from None
    if path is not None:
        from ..changefeed.reader import DirectoryTopicReader

        with DirectoryTopicReader(path) as r:
            names = [d.path.strip("/").replace("/", ".") for d in r.topics()]
    else:
        from .changefeed_kafka import topic_names

        assert kafka is not None
        names = topic_names(kafka)
    found = sorted(n for n in names if rx.fullmatch(n))
    if len(found) != 1:
        raise OptionError(f"option subscribePattern: {pattern!r} must match exactly one changefeed topic (one is read "
                          f"per source), matches {', '.join(found) if found else 'none'}")
    return found[0]


@dataclass(frozen=True)
class ChangefeedSettings:
    """The parsed options of one ``logtide-changefeed`` read."""

    address: TopicAddress
    keyspace: str
    table: str
    feed: str
    cql_host: str | None
    cql_port: int
    table_schema: str | None
    mode: str | None
    format: str | None
    starting: Any  # None | 'earliest' | 'latest' | {partition: offset}
    starting_time_ms: Any  # None | ms for every partition | {partition: ms}
    ending: Any  # None | 'latest' | {partition: offset}
    max_records: int | None
    consistent: bool
    raw: bool
    consumer: str | None
    ending_time_ms: Any = None  # None | ms | {partition: ms}
    partitions: tuple[int, ...] | None = None  # assign's partitions (None: all)
    min_records: int | None = None
    max_trigger_delay_us: int = 15 * 60 * 1_000_000
    fail_on_data_loss: bool = True
    no_time_match_fails: bool = True  # startingOffsetsByTimestampStrategy=error
    cql_username: str | None = None
    cql_password: str | None = None

    @classmethod
    def parse(cls, options: Any) -> "ChangefeedSettings":
        opts = lowered(options)
        unknown = sorted(k for k in opts if k not in KEYS and not k.startswith("kafka."))
        if unknown:
            raise OptionError(f"logtide-changefeed: unknown option {unknown[0]!r} (known options: {', '.join(NAMES)})")
        kind, given = _topic(opts)
        path = opts.get("path")
        bootstrap = _one_of(opts, "kafka.bootstrap.servers", "bootstrap")
        if bool(path) == bool(bootstrap):
            raise OptionError("exactly one of the options kafka.bootstrap.servers (or bootstrap: Kafka bootstrap "
                              "servers host:port[,host:port]) and path (a local logtide data directory) is required")
        username, password, timeout = parse_login(opts)
        extra = kafka_client_options(opts, options)
        kafka = None
        if bootstrap:
            hosts = [h.strip() for h in bootstrap.split(",") if h.strip()]
            if not hosts or any(":" not in h or not h.rsplit(":", 1)[1].isdigit() for h in hosts):
                raise OptionError(f"option kafka.bootstrap.servers: expected host:port[,host:port], got {bootstrap!r}")
            kafka = KafkaSettings(",".join(hosts), username, password, parse_bool(opts, "ssl", False),
                                  opts.get("sslcafile"), timeout, extra)
        partitions = None
        if kind == "assign":
            given, partitions = _assigned(given)
        elif kind == "subscribe":
            given = _subscribed(given)
        elif kind == "subscribePattern":
            given = _matching(given, kafka, path or None)
        ks, t, name = topic = split_topic(given, kind)
        address = TopicAddress(f"{ks}/{t}/{name}", kafka, path or None)
        cql_host = opts.get("cqlhost") or (bootstrap.split(",")[0].rsplit(":", 1)[0].strip() if bootstrap else None)
        port = parse_int(opts, "cqlPort", 9042)
        mode, fmt = opts.get("mode"), opts.get("format")
        mode = mode.strip().upper() if mode else None
        fmt = fmt.strip().upper() if fmt else None
        from .changefeed_rows import FORMATS, MODES

        if mode is not None and mode not in MODES:
            raise OptionError(f"option mode: expected one of {', '.join(MODES)}, got {opts['mode']!r}")
        if fmt is not None and fmt not in FORMATS:
            raise OptionError(f"option format: expected one of {', '.join(FORMATS)}, got {opts['format']!r}")
        starting = parse_offsets(opts, "startingOffsets", topic)
        start_ms = parse_times(opts, "startingTimestamp", "startingOffsetsByTimestamp", topic)
        strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise OptionError(f"option startingOffsetsByTimestampStrategy: expected error or latest, got "
                              f"{opts['startingoffsetsbytimestampstrategy']!r}")
        ending = parse_offsets(opts, "endingOffsets", topic)
        if ending == "earliest" or (isinstance(ending, dict) and -2 in ending.values()):
            raise OptionError("option endingOffsets: the ending offset cannot be earliest (-2); expected latest or "
                              "offsets")
        end_ms = parse_times(opts, "endingTimestamp", "endingOffsetsByTimestamp", topic)
        consumer = opts.get("consumer")
        if consumer is not None and (not consumer.strip() or "/" in consumer):
            raise OptionError(f"option consumer: expected a consumer name without '/', got {consumer!r}")
        cap = _one_of(opts, "maxOffsetsPerTrigger", "maxRecordsPerTrigger")
        cap_name = "maxOffsetsPerTrigger" if "maxoffsetspertrigger" in opts else "maxRecordsPerTrigger"
        max_records = parse_int({cap_name.lower(): cap} if cap is not None else {}, cap_name, None)
        min_records = parse_int(opts, "minOffsetsPerTrigger", None)
        if "maxtriggerdelay" in opts and min_records is None:
            raise OptionError("option maxTriggerDelay: goes with minOffsetsPerTrigger")
        if min_records is not None and max_records is not None and min_records > max_records:
            raise OptionError(f"option minOffsetsPerTrigger ({min_records}) must not exceed maxOffsetsPerTrigger "
                              f"({max_records})")
        delay = parse_duration_micros(opts, "maxTriggerDelay", "15m")
        cql_user, cql_password = username, password
        if cql_user is None and kafka is not None:  # the Kafka SASL login serves CQL too, as username/password do
            sasl = dict(extra)
            cql_user, cql_password = sasl.get("sasl.username"), sasl.get("sasl.password")
        return cls(address, ks, t, name, cql_host, port or 9042, opts.get("tableschema"), mode, fmt, starting,
                   start_ms, ending, max_records, parse_bool(opts, "consistent", False), parse_bool(opts, "raw", False),
                   consumer, end_ms, partitions, min_records, delay, parse_bool(opts, "failOnDataLoss", True),
                   strategy == "error", cql_user, cql_password)
