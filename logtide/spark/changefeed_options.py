"""Options of the ``logtide-changefeed`` source (docs/spark.md "Source 3"), parsed once with errors naming the option."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from .changefeed_topic import KafkaSettings, TopicAddress
from .options import OptionError, check_known, lowered, parse_bool, parse_int, parse_login

KEYS = {"topic", "bootstrap", "path", "cqlhost", "cqlport", "username", "password", "ssl", "sslcafile",
        "tableschema", "mode", "format", "startingoffsets", "startingtimestamp", "endingoffsets",
        "maxrecordspertrigger", "consistent", "raw", "consumer", "timeout"}


def split_topic(topic: str) -> tuple[str, str, str]:
    """``ks/t/name``, ``/ks/t/name`` or ``ks.t.name`` as (keyspace, table, name)."""
    t = topic.strip().strip("/")
    parts = t.split("/") if "/" in t else t.split(".")
    if len(parts) != 3 or not all(parts):
        raise OptionError(f"option topic: expected keyspace/table/changefeed (or keyspace.table.changefeed), "
                          f"got {topic!r}")
    return parts[0], parts[1], parts[2]


def parse_offsets(opts: Mapping[str, str], name: str) -> str | dict[int, int] | None:
    """``earliest``, ``latest`` or a JSON object partition -> offset (-2 earliest, -1 latest)."""
    v = opts.get(name.lower())
    if v is None:
        return None
    s = v.strip()
    if s.lower() in ("earliest", "latest"):
        return s.lower()
    try:
        d = json.loads(s)
        if not isinstance(d, dict):
            raise ValueError
        out = {int(k): int(o) for k, o in d.items()}
    except (ValueError, TypeError):
        raise OptionError(f'option {name}: expected earliest, latest or a JSON object such as {{"0": 12, "1": 0}} '
                          f"(partition -> offset; -2 earliest, -1 latest), got {v!r}") from None
    if any(p < 0 or o < -2 for p, o in out.items()):
        raise OptionError(f"option {name}: partitions must be >= 0 and offsets >= -2, got {v!r}")
    return out


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
    starting_time_ms: int | None
    ending: Any  # None | 'latest' | {partition: offset}
    max_records: int | None
    consistent: bool
    raw: bool
    consumer: str | None

    @classmethod
    def parse(cls, options: Any) -> "ChangefeedSettings":
        opts = lowered(options)
        check_known(opts, KEYS, "logtide-changefeed")
        topic = opts.get("topic")
        if not topic:
            raise OptionError("option topic is required: the changefeed topic, as keyspace/table/changefeed")
        ks, t, name = split_topic(topic)
        path, bootstrap = opts.get("path"), opts.get("bootstrap")
        if bool(path) == bool(bootstrap):
            raise OptionError("exactly one of the options bootstrap (Kafka bootstrap servers host:port[,host:port]) "
                              "and path (a local logtide data directory) is required")
        username, password, timeout = parse_login(opts)
        kafka = None
        if bootstrap:
            hosts = [h.strip() for h in bootstrap.split(",") if h.strip()]
            if not hosts or any(":" not in h or not h.rsplit(":", 1)[1].isdigit() for h in hosts):
                raise OptionError(f"option bootstrap: expected host:port[,host:port], got {bootstrap!r}")
            kafka = KafkaSettings(",".join(hosts), username, password, parse_bool(opts, "ssl", False),
                                  opts.get("sslcafile"), timeout)
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
        starting = parse_offsets(opts, "startingOffsets")
        start_ms = parse_int(opts, "startingTimestamp", None, minimum=0)
        if starting is not None and start_ms is not None:
            raise OptionError("options startingOffsets and startingTimestamp exclude each other")
        ending = parse_offsets(opts, "endingOffsets")
        if ending == "earliest":
            raise OptionError("option endingOffsets: expected latest or a JSON object, got 'earliest'")
        consumer = opts.get("consumer")
        if consumer is not None and (not consumer.strip() or "/" in consumer):
            raise OptionError(f"option consumer: expected a consumer name without '/', got {consumer!r}")
        return cls(address, ks, t, name, cql_host, port or 9042, opts.get("tableschema"), mode, fmt, starting,
                   start_ms, ending, parse_int(opts, "maxRecordsPerTrigger", None),
                   parse_bool(opts, "consistent", False), parse_bool(opts, "raw", False), consumer)
