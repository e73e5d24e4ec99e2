"""Options of the Spark sources: parsed once, validated with errors that name the option (docs/spark.md).

Spark hands options over as strings; keys are matched without regard to case (Spark 4.0 passes a
plain dict, 4.2+ a case-insensitive one).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .option_error import OptionError
from .tls import NAMES as TLS_NAMES, connector_tls, highest_protocol, pem_file  # OptionError: re-exported

CONSISTENCY_LEVELS = ("ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM",
                      "LOCAL_ONE")


def lowered(options: Mapping[str, str]) -> dict[str, str]:
    """The options with lower-case keys."""
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


# The Spark Cassandra Connector's read settings (as options or in the Spark conf) -> logtide's option
CONNECTOR = {
    "spark.cassandra.connection.host": "host",
    "spark.cassandra.connection.port": "port",
    "spark.cassandra.auth.username": "username",
    "spark.cassandra.auth.password": "password",
    "spark.cassandra.connection.ssl.enabled": "ssl",
    "spark.cassandra.connection.ssl.trustStore.path": "sslCaFile",
    "spark.cassandra.connection.localDC": "localDc",
    "spark.cassandra.input.consistency.level": "consistency",
    "spark.cassandra.input.fetch.sizeInRows": "pageSize",
    "spark.cassandra.read.timeoutMS": "timeout",
}
CONNECTOR_NAMES = ("keyspace", *CONNECTOR, *TLS_NAMES)


def connector_options(options: Mapping[str, str], conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The options with lower-case keys, the Spark Cassandra Connector's names (``keyspace`` + ``table``,
    ``spark.cassandra.*``) turned into logtide's.  A ``spark.cassandra.*`` setting comes from the options,
    else from ``conf`` (the session's Spark conf), as the connector takes it; two names for one thing in the
    options are refused."""
    opts = lowered(options)
    conf = {str(k).lower(): str(v) for k, v in dict(conf or {}).items()}
    connector_tls(opts, conf)
    for name, ours in CONNECTOR.items():
        key, mine = name.lower(), ours.lower()
        if key in opts and mine in opts:
            raise OptionError(f"options {name} and {ours} mean the same: give one")
        value = opts.pop(key, None)
        if value is None and mine not in opts and key in conf and not (mine == "host" and "path" in opts):
            value = conf[key]
        if value is None:
            continue
        if mine == "timeout":
            try:
                value = str(int(value.strip()) / 1000)
            except ValueError:
                raise OptionError(f"option {name}: expected milliseconds, got {value!r}") from None
        opts[mine] = value
    if "keyspace" in opts:
        ks, table = opts.pop("keyspace"), opts.get("table")
        if not table:
            raise OptionError("option table is required with keyspace: the table's name (keyspace and table as the "
                              "Spark Cassandra Connector takes them)")
        if not ks.strip():
            raise OptionError("option keyspace: empty")
        opts["table"] = f"{quote(ks)}.{quote(table)}"  # the connector's names are exact (no CQL case folding)
    return opts


def check_known(opts: Mapping[str, str], known: set[str], source: str) -> None:
    unknown = sorted(set(opts) - known - {"path"})
    if unknown:
        if unknown[0].startswith("spark.cassandra."):
            names = (*CONNECTOR_NAMES, *sorted(k for k in known if k.startswith("spark.cassandra.")))
            raise OptionError(f"{source}: unknown option {unknown[0]!r}: of the Spark Cassandra Connector's settings "
                              f"these mean something here: {', '.join(names)} (docs/spark.md)")
        raise OptionError(f"{source}: unknown option {unknown[0]!r} (known options: {', '.join(sorted(known))})")


def parse_bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    v = opts.get(name.lower())
    if v is None:
        return default
    if v.strip().lower() in ("true", "1", "yes"):
        return True
    if v.strip().lower() in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}: expected true or false, got {v!r}")


def parse_int(opts: Mapping[str, str], name: str, default: int | None, minimum: int = 1) -> int | None:
    v = opts.get(name.lower())
    if v is None:
        return default
    try:
        n = int(v.strip())
    except ValueError:
        raise OptionError(f"option {name}: expected an integer, got {v!r}") from None
    if n < minimum:
        raise OptionError(f"option {name}: must be at least {minimum}, got {n}")
    return n


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?\s*$")
_UNIT_MICROS = {"us": 1, "ms": 1000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000}


def parse_duration_micros(opts: Mapping[str, str], name: str, default: str) -> int:
    """A duration such as ``30s``, ``500ms``, ``0s``, ``2m`` (a bare number is seconds), in microseconds."""
    v = opts.get(name.lower(), default)
    m = _DURATION.match(v)
    if not m:
        raise OptionError(f"option {name}: expected a duration such as 30s, 500ms or 0s, got {v!r}")
    return int(float(m.group(1)) * _UNIT_MICROS[m.group(2) or "s"])


def parse_timestamp_micros(opts: Mapping[str, str], name: str, number_unit: int = 1) -> int | None:
    """A point in time in microseconds: ISO 8601 (``2026-11-24T01:00:00Z``; no zone means UTC) or a number since
    the epoch, in units of ``number_unit`` microseconds (1000: milliseconds)."""
    v = opts.get(name.lower())
    if v is None:
        return None
    s = v.strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s) * number_unit
    try:
        dt = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise OptionError(f"option {name}: expected an ISO 8601 timestamp or "
                          f"{'milliseconds' if number_unit == 1000 else 'microseconds'} since the epoch, "
                          f"got {v!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    delta = dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def parse_login(opts: Mapping[str, str]) -> tuple[str | None, str | None, float]:
    """``username`` and ``password`` (together or neither) and ``timeout`` (seconds, default 60)."""
    username, password = opts.get("username"), opts.get("password")
    if (username is None) != (password is None):
        raise OptionError("options username and password go together")
    try:
        timeout = float(opts.get("timeout", "60"))
    except ValueError:
        raise OptionError(f"option timeout: expected seconds, got {opts['timeout']!r}") from None
    return username, password, timeout


@dataclass(frozen=True)
class Connection:
    """Where a table lives: CQL contact points (``host``) or a local data directory (``path``)."""

    keyspace: str
    table: str
    hosts: tuple[str, ...] = ()
    port: int = 9042
    path: str | None = None
    username: str | None = None
    password: str | None = None
    ssl: bool = False
    ssl_ca_file: str | None = None
    ssl_verify: bool = True
    local_dc: str | None = None
    consistency: str = "LOCAL_ONE"  # the Spark Cassandra Connector's default
    page_size: int = 5000
    timeout: float = 60.0
    ssl_cert_file: str | None = None  # PEM: the client's certificate (chain) and private key
    ssl_key_password: str | None = None
    ssl_highest: str | None = None  # the highest TLS version (``TLSv1_2``), None: the newest

    KEYS = {"host", "port", "table", "username", "password", "ssl", "sslcafile", "sslverify", "localdc",
            "consistency", "pagesize", "timeout", "sslcertfile", "sslkeypassword", "sslprotocol"}

    @classmethod
    def parse(cls, opts: Mapping[str, str]) -> "Connection":
        table = opts.get("table")
        if not table:
            raise OptionError("option table is required: the table to read, as keyspace.table")
        ks, dot, t = table.partition(".")
        if not dot or not ks or not t or "." in t:
            raise OptionError(f"option table: expected keyspace.table, got {table!r}")
        ks, t = _unquote(ks), _unquote(t)
        path = opts.get("path")
        host = opts.get("host")
        if path and host:
            raise OptionError("options host and path exclude each other: read over CQL (host) or a local "
                              "data directory (path)")
        if not path and not host:
            raise OptionError("option host (CQL contact points, comma-separated) or path (a local logtide data "
                              "directory) is required")
        hosts = tuple(h.strip() for h in (host or "").split(",") if h.strip())
        if host and not hosts:
            raise OptionError(f"option host: no contact point in {host!r}")
        port = parse_int(opts, "port", 9042)
        if port is not None and port > 65535:
            raise OptionError(f"option port: must be at most 65535, got {port}")
        consistency = opts.get("consistency", "LOCAL_ONE").upper()
        if consistency not in CONSISTENCY_LEVELS:
            raise OptionError(f"option consistency: expected one of {', '.join(CONSISTENCY_LEVELS)}, "
                              f"got {opts['consistency']!r}")
        username, password, timeout = parse_login(opts)
        ssl = parse_bool(opts, "ssl", False)
        given = [name for name in ("sslCaFile", "sslCertFile", "sslKeyPassword", "sslProtocol") if name.lower() in opts]
        if not ssl and given:
            raise OptionError(f"option {given[0]}: TLS is off: set ssl (spark.cassandra.connection.ssl.enabled) to "
                              f"true")
        if "sslkeypassword" in opts and "sslcertfile" not in opts:
            raise OptionError("option sslKeyPassword: no sslCertFile (spark.cassandra.connection.ssl.keyStore.path) "
                              "whose key it opens")
        return cls(ks, t, hosts, port, path or None, username, password, ssl,
                   pem_file(opts.get("sslcafile"), "sslCaFile (spark.cassandra.connection.ssl.trustStore.path)"),
                   parse_bool(opts, "sslVerify", True), opts.get("localdc"), consistency,
                   parse_int(opts, "pageSize", 5000), timeout,
                   pem_file(opts.get("sslcertfile"), "sslCertFile (spark.cassandra.connection.ssl.keyStore.path)"),
                   opts.get("sslkeypassword"), highest_protocol(opts.get("sslprotocol")))

    @property
    def qualified(self) -> str:
        return f"{quote(self.keyspace)}.{quote(self.table)}"


def _unquote(name: str) -> str:
    if len(name) >= 2 and name[0] == name[-1] == '"':
        return name[1:-1].replace('""', '"')
    return name.lower() if name.lower() == name.lower().strip() and re.fullmatch(r"\w+", name) else name


def quote(name: str) -> str:
    """A CQL identifier, always double-quoted (exact case)."""
    return '"' + name.replace('"', '""') + '"'


def describe(opts: Mapping[str, Any]) -> str:
    """Options for an error message, without the password."""
    return ", ".join(f"{k}={'***' if 'password' in k else v}" for k, v in sorted(opts.items()))
