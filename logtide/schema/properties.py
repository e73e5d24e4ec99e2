"""``WITH`` properties of CREATE/ALTER KEYSPACE and CREATE/ALTER TABLE.

Validation follows Cassandra 4's ``KeyspaceAttributes`` / ``TableAttributes``
/ ``TableParams`` (and ScyllaDB for the options only it has: ``cdc``,
``tombstone_gc``, ``paxos_grace_seconds``).  Values are normalised to the
form DESCRIBE shows them in ScyllaDB 5.x: numbers as int/float, maps as
dicts of strings, strategy classes as their stored names.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from logtide.cdc.options import canonical as cdc_canonical
from logtide.errors import ConfigurationException, InvalidRequest, SyntaxException

LOCATOR_PACKAGE = "org.apache.cassandra.locator."
SIMPLE_STRATEGY = LOCATOR_PACKAGE + "SimpleStrategy"
NETWORK_TOPOLOGY_STRATEGY = LOCATOR_PACKAGE + "NetworkTopologyStrategy"
LOCAL_STRATEGY = LOCATOR_PACKAGE + "LocalStrategy"
EVERYWHERE_STRATEGY = LOCATOR_PACKAGE + "EverywhereStrategy"
KNOWN_STRATEGIES = (SIMPLE_STRATEGY, NETWORK_TOPOLOGY_STRATEGY, LOCAL_STRATEGY, EVERYWHERE_STRATEGY)
LOCAL_DATACENTER = "datacenter1"

KEYSPACE_PROPERTIES = ("replication", "durable_writes")

COMPACTION_PACKAGE = "org.apache.cassandra.db.compaction."
KNOWN_COMPACTIONS = (
    "SizeTieredCompactionStrategy",
    "LeveledCompactionStrategy",
    "TimeWindowCompactionStrategy",
    "DateTieredCompactionStrategy",
    "IncrementalCompactionStrategy",
    "UnifiedCompactionStrategy",
    "NullCompactionStrategy",
)
COMPRESSION_PACKAGE = "org.apache.cassandra.io.compress."

MAX_TTL = 630720000  # 20 years, Cassandra's Attributes.MAX_TTL

def table_defaults() -> dict[str, Any]:
    """The options of a new table before its ``WITH`` clause applies (ScyllaDB 5.x defaults)."""
    return {
        "bloom_filter_fp_chance": 0.01,
        "caching": {"keys": "ALL", "rows_per_partition": "ALL"},
        "comment": "",
        "compaction": {"class": "SizeTieredCompactionStrategy"},
        "compression": {"sstable_compression": COMPRESSION_PACKAGE + "LZ4Compressor"},
        "crc_check_chance": 1.0,
        "default_time_to_live": 0,
        "gc_grace_seconds": 864000,
        "max_index_interval": 2048,
        "memtable_flush_period_in_ms": 0,
        "min_index_interval": 128,
        "speculative_retry": "99.0PERCENTILE",
        "paxos_grace_seconds": 864000,
        "tombstone_gc": {"mode": "timeout", "propagation_delay_in_seconds": "3600"},
        "additional_write_policy": "99p",
        "read_repair": "BLOCKING",
        "dclocal_read_repair_chance": 0.0,
        "read_repair_chance": 0.0,
    }


# option name -> kind; kinds: double, int, string, map, cdc, ignored
TABLE_PROPERTIES: dict[str, str] = {
    "additional_write_policy": "string",
    "bloom_filter_fp_chance": "double",
    "caching": "map",
    "cdc": "cdc",
    "comment": "string",
    "compaction": "map",
    "compression": "map",
    "crc_check_chance": "double",
    "dclocal_read_repair_chance": "double",
    "default_time_to_live": "int",
    "extensions": "map",
    "gc_grace_seconds": "int",
    "id": "string",
    "max_index_interval": "int",
    "memtable": "string",
    "memtable_flush_period_in_ms": "int",
    "min_index_interval": "int",
    "paxos_grace_seconds": "int",
    "read_repair": "string",
    "read_repair_chance": "double",
    "speculative_retry": "string",
    "synchronous_updates": "string",
    "tombstone_gc": "map",
}


# --------------------------------------------------------------------------
# Generic property access (PropertyDefinitions)
# --------------------------------------------------------------------------


def property_dict(options: Iterable[tuple[str, Any]], valid: Iterable[str]) -> dict[str, Any]:
    """Collect ``WITH`` properties, refusing duplicates and unknown names as Cassandra does."""
    valid_names = set(valid)
    result: dict[str, Any] = {}
    for name, value in options:
        if name in result:
            raise SyntaxException(f"Multiple definition for property '{name}'")
        result[name] = value
    for name in result:
        if name not in valid_names:
            raise SyntaxException(f"Unknown property '{name}'")
    return result


def simple_string(name: str, value: Any) -> str:
    """A property value given as a plain term, as the string Cassandra reads."""
    if isinstance(value, dict):
        raise SyntaxException(f"Invalid value for property '{name}'. It should be a string")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def map_of_strings(name: str, value: Any) -> dict[str, str]:
    """A property given as a map, with its values as strings."""
    if not isinstance(value, dict):
        raise SyntaxException(f"Invalid value for property '{name}'. It should be a map.")
    return {str(k): simple_string(name, v) for k, v in value.items()}


def parse_boolean(value: str) -> bool:
    """Cassandra's ``getBoolean``: ``1``, ``true`` or ``yes`` (any case) is true."""
    return value.lower() in ("1", "true", "yes")


def parse_int(name: str, value: Any) -> int:
    text = simple_string(name, value)
    if not re.fullmatch(r"[+-]?\d+", text.strip()):
        raise SyntaxException(f"Invalid integer value {text} for '{name}'")
    number = int(text)
    if not -(2**31) <= number < 2**31:
        raise SyntaxException(f"Invalid integer value {text} for '{name}'")
    return number


def parse_double(name: str, value: Any) -> float:
    text = simple_string(name, value)
    try:
        return float(text)
    except ValueError:
        raise SyntaxException(f"Invalid double value {text} for '{name}'") from None


# --------------------------------------------------------------------------
# Keyspaces
# --------------------------------------------------------------------------


def strategy_class(name: str) -> str:
    """The full class name of a replication strategy given by short or full name."""
    full = name if "." in name else LOCATOR_PACKAGE + name
    if full not in KNOWN_STRATEGIES:
        raise ConfigurationException(f"Unable to find replication strategy class '{full}'")
    return full


def validate_replication_factor(text: str) -> None:
    """Cassandra's ReplicationFactor.fromString checks (transient replicas are not supported)."""
    if not re.fullmatch(r"\d+", text.strip()):
        if re.fullmatch(r"-\d+", text.strip()):
            raise ConfigurationException(f"Replication factor must be non-negative; found {text}")
        raise ConfigurationException(f'For input string: "{text}"')


def replication_options(keyspace: str, given: Mapping[str, str]) -> dict[str, str]:
    """Validate a ``replication`` map and return it as system_schema.keyspaces stores it."""
    if "class" not in given:
        raise ConfigurationException("Missing replication strategy class")
    klass = strategy_class(given["class"])
    options = {k: v for k, v in given.items() if k != "class"}
    if klass == SIMPLE_STRATEGY:
        if "replication_factor" not in options:
            raise ConfigurationException("SimpleStrategy requires a replication_factor strategy option.")
        for key in options:
            if key != "replication_factor":
                raise ConfigurationException(
                    f"Unrecognized strategy option {{{key}}} passed to SimpleStrategy for keyspace {keyspace}"
                )
        validate_replication_factor(options["replication_factor"])
    elif klass == NETWORK_TOPOLOGY_STRATEGY:
        if "replication_factor" in options:
            rf = options.pop("replication_factor")
            options.setdefault(LOCAL_DATACENTER, rf)
        for value in options.values():
            validate_replication_factor(value)
    return {"class": klass, **dict(sorted(options.items()))}


def keyspace_params(
    keyspace: str, options: Iterable[tuple[str, Any]], previous: tuple[Mapping[str, str], bool] | None = None
) -> tuple[dict[str, str], bool]:
    """(replication, durable_writes) from CREATE/ALTER KEYSPACE properties; ``previous`` for ALTER."""
    props = property_dict(options, KEYSPACE_PROPERTIES)
    replication_given = map_of_strings("replication", props["replication"]) if "replication" in props else None
    if previous is None and replication_given is None:
        raise InvalidRequest("Missing mandatory option 'replication'")
    durable = previous[1] if previous else True
    if "durable_writes" in props:
        durable = parse_boolean(simple_string("durable_writes", props["durable_writes"]))
    if previous is not None and not replication_given:
        replication = dict(previous[0])
    else:
        replication = replication_options(keyspace, replication_given or {})
    return replication, durable


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------


def _speculative_retry(value: str) -> str:
    """Normalise speculative_retry as ScyllaDB prints it (``99.0PERCENTILE``, ``50.0ms``, ``ALWAYS``, ``NONE``)."""
    text = value.strip()
    upper = text.upper()
    if upper in ("ALWAYS", "NONE"):
        return upper
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(PERCENTILE|P)", upper)
    if m and 0 <= float(m.group(1)) <= 100:
        return f"{float(m.group(1)):.1f}PERCENTILE"
    m = re.fullmatch(r"(\d+(?:\.\d+)?)MS", upper)
    if m:
        return f"{float(m.group(1)):.1f}ms"
    raise ConfigurationException(f"Invalid value {value} for option 'speculative_retry'")


def _compaction(given: dict[str, str]) -> dict[str, str]:
    if "class" not in given:
        raise ConfigurationException("Missing sub-option 'class' for the 'compaction' option")
    klass = given["class"]
    short = klass[len(COMPACTION_PACKAGE):] if klass.startswith(COMPACTION_PACKAGE) else klass
    if short not in KNOWN_COMPACTIONS:
        full = klass if "." in klass else COMPACTION_PACKAGE + klass
        raise ConfigurationException(f"Unable to find compaction strategy class '{full}'")
    return {"class": short, **{k: v for k, v in sorted(given.items()) if k != "class"}}


def _compression(given: dict[str, str]) -> dict[str, str]:
    options = dict(given)
    klass = options.pop("class", None)
    if klass is None:
        klass = options.pop("sstable_compression", None)
    if options.get("enabled", "true").lower() == "false" or klass == "":
        return {}
    options.pop("enabled", None)
    if klass is None:
        raise ConfigurationException("Missing sub-option 'class' for the 'compression' option.")
    full = klass if "." in klass else COMPRESSION_PACKAGE + klass
    return dict(sorted({"sstable_compression": full, **options}.items()))


def cdc_options(value: Any) -> dict[str, str]:
    """The ``cdc`` option as a full dict of strings (ScyllaDB's cdc::options with defaults)."""
    if isinstance(value, dict):
        given = {str(k): simple_string("cdc", v).lower() if isinstance(v, bool) else simple_string("cdc", v) for k, v in value.items()}
    else:
        given = {"enabled": "true" if parse_boolean(simple_string("cdc", value)) else "false"}
    return cdc_canonical(given)


def _validate_table_params(params: Mapping[str, Any]) -> None:
    """Cassandra's TableParams.validate on the final option values."""
    bf = params["bloom_filter_fp_chance"]
    if bf <= 0 or bf > 1:
        raise ConfigurationException(
            f"bloom_filter_fp_chance must be larger than 0.0 and less than or equal to 1.0 (got {bf})"
        )
    crc = params["crc_check_chance"]
    if crc < 0 or crc > 1:
        raise ConfigurationException(
            f"crc_check_chance must be larger than or equal to 0 and smaller than or equal to 1.0 (got {crc})"
        )
    for name in ("default_time_to_live", "gc_grace_seconds", "memtable_flush_period_in_ms", "paxos_grace_seconds"):
        if params[name] < 0:
            raise ConfigurationException(f"{name} must be greater than or equal to 0 (got {params[name]})")
    if params["default_time_to_live"] > MAX_TTL:
        raise ConfigurationException(
            f"default_time_to_live must be less than or equal to {MAX_TTL} (got {params['default_time_to_live']})"
        )
    if params["min_index_interval"] < 1:
        raise ConfigurationException(f"min_index_interval must be greater than or equal to 1 (got {params['min_index_interval']})")
    if params["max_index_interval"] < params["min_index_interval"]:
        raise ConfigurationException(
            "max_index_interval must be greater than or equal to min_index_interval "
            f"({params['min_index_interval']}) (got {params['max_index_interval']})"
        )


def _convert(name: str, kind: str, value: Any) -> Any:
    if kind == "double":
        return parse_double(name, value)
    if kind == "int":
        return parse_int(name, value)
    if kind == "map":
        given = map_of_strings(name, value)
        if name == "compaction":
            return _compaction(given)
        if name == "compression":
            return _compression(given)
        if name == "caching":
            return {**table_defaults()["caching"], **given}
        return dict(sorted(given.items()))
    text = simple_string(name, value)
    if name == "speculative_retry":
        return _speculative_retry(text)
    if name == "read_repair":
        if text.upper() not in ("BLOCKING", "NONE"):
            raise ConfigurationException(f"Invalid value {text} for option 'read_repair'")
        return text.upper()
    return text


def table_params(
    options: Iterable[tuple[str, Any]],
    previous: Mapping[str, Any] | None,
    previous_cdc: Mapping[str, str] | None,
) -> tuple[dict[str, Any], dict[str, str] | None]:
    """(options, cdc) of a table after applying ``WITH`` properties to ``previous`` (defaults for CREATE)."""
    props = property_dict(options, TABLE_PROPERTIES)
    params = dict(previous) if previous is not None else table_defaults()
    cdc = dict(previous_cdc) if previous_cdc is not None else None
    for name, value in props.items():
        kind = TABLE_PROPERTIES[name]
        if name == "id":
            if previous is not None:
                raise ConfigurationException("Cannot alter table id.")
            continue
        if kind == "cdc":
            cdc = cdc_options(value)
            continue
        params[name] = _convert(name, kind, value)
    _validate_table_params(params)
    return params, cdc


def table_id_option(options: Iterable[tuple[str, Any]]) -> str | None:
    """The ``id`` property of CREATE TABLE, if given."""
    for name, value in options:
        if name == "id":
            return simple_string("id", value)
    return None
