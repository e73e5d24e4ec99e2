"""``WITH`` properties of CREATE/ALTER KEYSPACE and CREATE/ALTER TABLE.

Keyspaces follow Cassandra 4's ``KeyspaceAttributes`` (plus ScyllaDB's
``tablets`` option); tables follow ScyllaDB's ``cf_prop_defs`` (its keywords,
its checks and messages; the map-valued options in ``table_options``), still
accepting Cassandra 4's own names (``read_repair``, ``additional_write_policy``,
``memtable``, ``extensions``).  Values are normalised to the form DESCRIBE
shows them in ScyllaDB: numbers as int/float, maps as dicts of strings,
strategy classes as their stored names.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from logtide.schema.cdc_options import canonical as cdc_canonical
from logtide.errors import ConfigurationException, InvalidRequest, SyntaxException
from logtide.schema import table_options

LOCATOR_PACKAGE = "org.apache.cassandra.locator."
SIMPLE_STRATEGY = LOCATOR_PACKAGE + "SimpleStrategy"
NETWORK_TOPOLOGY_STRATEGY = LOCATOR_PACKAGE + "NetworkTopologyStrategy"
LOCAL_STRATEGY = LOCATOR_PACKAGE + "LocalStrategy"
EVERYWHERE_STRATEGY = LOCATOR_PACKAGE + "EverywhereStrategy"
KNOWN_STRATEGIES = (SIMPLE_STRATEGY, NETWORK_TOPOLOGY_STRATEGY, LOCAL_STRATEGY, EVERYWHERE_STRATEGY)
LOCAL_DATACENTER = "datacenter1"

KEYSPACE_PROPERTIES = ("replication", "durable_writes", "tablets", "storage")

MAX_TTL = 630720000  # 20 years, Cassandra's Attributes.MAX_TTL

def table_defaults() -> dict[str, Any]:
    """The options of a new table before its ``WITH`` clause applies (ScyllaDB 5.x defaults)."""
    return {
        "bloom_filter_fp_chance": 0.01,
        "caching": {"keys": "ALL", "rows_per_partition": "ALL"},
        "comment": "",
        "compaction": {"class": "SizeTieredCompactionStrategy"},
        "compression": {"sstable_compression": table_options.DEFAULT_COMPRESSOR},
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


# option name -> kind; kinds: double, int, string, map, cdc, obsolete (accepted and ignored, as ScyllaDB does)
TABLE_PROPERTIES: dict[str, str] = {
    "additional_write_policy": "string",
    "bloom_filter_fp_chance": "double",
    "caching": "map",
    "cdc": "cdc",
    "comment": "string",
    "compaction": "map",
    "compression": "map",
    "crc_check_chance": "double",
    "dclocal_read_repair_chance": "obsolete",
    "default_time_to_live": "int",
    "extensions": "map",
    "gc_grace_seconds": "int",
    "id": "string",
    "index_interval": "obsolete",
    "max_index_interval": "int",
    "memtable": "string",
    "memtable_flush_period_in_ms": "int",
    "min_index_interval": "int",
    "paxos_grace_seconds": "int",
    "populate_io_cache_on_flush": "obsolete",
    "read_repair": "string",
    "read_repair_chance": "obsolete",
    "replicate_on_write": "obsolete",
    "speculative_retry": "string",
    "synchronous_updates": "string",
    "tablets": "tablets",
    "tombstone_gc": "map",
}
# ScyllaDB's utils::bloom_calculations::min_supported_bloom_filter_fp_chance()
MIN_BLOOM_FILTER_FP_CHANCE = 6.71e-05
MEMTABLE_FLUSH_PERIOD_MIN = 60000


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


def replication_options(keyspace: str, given: Mapping[str, str], previous: Mapping[str, str] | None = None) -> dict[str, str]:
    """Validate a ``replication`` map and return it as system_schema.keyspaces stores it.

    As ScyllaDB (``ks_prop_defs``): no class means NetworkTopologyStrategy; NetworkTopologyStrategy expands
    ``replication_factor`` to every data center (there is one, ``datacenter1``), takes one replica per rack
    when given no factor at all, refuses an unknown data center and drops data centers given 0 replicas.
    """
    given = dict(given)
    klass = strategy_class(given.pop("class", "NetworkTopologyStrategy"))
    options = given
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
        for dc, value in options.items():
            if value.startswith("["):
                raise ConfigurationException(f"Using rack list for '{dc}' is not allowed because the keyspace is not "
                                             "using tablets")
        if "replication_factor" in options:
            rf = options.pop("replication_factor")
            validate_replication_factor(rf)
            options.setdefault(LOCAL_DATACENTER, rf)
        elif not options and not previous:
            options[LOCAL_DATACENTER] = "1"  # one rack
        for dc, value in options.items():
            validate_replication_factor(value)
            if dc != LOCAL_DATACENTER:
                raise ConfigurationException(f"Unrecognized strategy option {{{dc}}} passed to NetworkTopologyStrategy")
        options = {dc: v for dc, v in options.items() if int(v) != 0}
    return {"class": klass, **dict(sorted(options.items()))}


def keyspace_params(
    keyspace: str, options: Iterable[tuple[str, Any]], previous: tuple[Mapping[str, str], bool] | None = None
) -> tuple[dict[str, str], bool]:
    """(replication, durable_writes) from CREATE/ALTER KEYSPACE properties; ``previous`` for ALTER."""
    props = property_dict(options, KEYSPACE_PROPERTIES)
    replication_given = map_of_strings("replication", props["replication"]) if "replication" in props else None
    if "tablets" in props:
        tablets_option(map_of_strings("tablets", props["tablets"]))
    if "storage" in props:
        storage_option(map_of_strings("storage", props["storage"]))
    durable = previous[1] if previous else True
    if "durable_writes" in props:
        durable = parse_boolean(simple_string("durable_writes", props["durable_writes"]))
    if previous is not None:
        if not replication_given:
            return dict(previous[0]), durable
        if "class" not in replication_given:
            raise ConfigurationException("Missing replication strategy class")
        return replication_options(keyspace, replication_given, previous[0]), durable
    return replication_options(keyspace, replication_given or {}), durable


def storage_option(given: Mapping[str, str]) -> None:
    """ScyllaDB's keyspace ``storage`` option: logtide keeps data locally, so only ``{'type': 'LOCAL'}`` is accepted."""
    kind = given.get("type", "LOCAL")
    extra = sorted(k for k in given if k != "type")
    if kind == "LOCAL":
        if extra:
            raise InvalidRequest(f"Extraneous options for LOCAL: {','.join(extra)}; allowed: ")
        return
    if kind in ("S3", "GS"):
        raise InvalidRequest("Keyspace storage options not supported in the cluster")
    raise InvalidRequest(f"Unknown storage type: {kind}")


def tablets_option(given: Mapping[str, str]) -> None:
    """ScyllaDB's keyspace ``tablets`` option: logtide has no tablets, so only ``{'enabled': false}`` is accepted."""
    for key, value in given.items():
        if key == "enabled":
            if value.lower() == "true":
                raise ConfigurationException("Cannot enable tablets for keyspace since tablets are disabled")
            if value.lower() != "false":
                raise ConfigurationException(f"Invalid value '{value}' for 'tablets' option 'enabled'")
        elif key == "initial":
            raise ConfigurationException("Cannot enable tablets for keyspace since tablets are disabled")
        else:
            raise ConfigurationException(f"Unrecognized tablets option: '{key}'")


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------


def cdc_options(value: Any) -> dict[str, str]:
    """The ``cdc`` option as a full dict of strings (ScyllaDB's cdc::options with defaults)."""
    if isinstance(value, dict):
        given = {str(k): simple_string("cdc", v).lower() if isinstance(v, bool) else simple_string("cdc", v) for k, v in value.items()}
    else:
        given = {"enabled": "true" if parse_boolean(simple_string("cdc", value)) else "false"}
    return cdc_canonical(given)


def _validate_table_params(params: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """ScyllaDB's ``cf_prop_defs::validate`` on the final option values (``given``: the options this statement set)."""
    if "bloom_filter_fp_chance" in given:
        bf = params["bloom_filter_fp_chance"]
        if bf <= MIN_BLOOM_FILTER_FP_CHANCE or bf > 1:
            raise ConfigurationException(
                f"bloom_filter_fp_chance must be larger than {table_options.fmt_number(MIN_BLOOM_FILTER_FP_CHANCE)} "
                f"and less than or equal to 1.0 (got {table_options.fmt_number(bf)})"
            )
    crc = params["crc_check_chance"]
    if crc < 0 or crc > 1:
        raise ConfigurationException("crc_check_chance must be between 0.0 and 1.0.")
    for name, default in (("default_time_to_live", 0), ("paxos_grace_seconds", 864000)):
        if params[name] < 0:
            raise ConfigurationException(f"{name} cannot be smaller than 0, (default {default})")
    if params["gc_grace_seconds"] < 0:
        raise ConfigurationException(f"gc_grace_seconds must be greater than or equal to 0 (got {params['gc_grace_seconds']})")
    if params["default_time_to_live"] > MAX_TTL:
        raise ConfigurationException(
            f"default_time_to_live must be less than or equal to {MAX_TTL} (got {params['default_time_to_live']})"
        )
    if params["min_index_interval"] < 1:
        raise ConfigurationException("min_index_interval must be greater than 0")
    if params["max_index_interval"] < params["min_index_interval"]:
        raise ConfigurationException("max_index_interval must be greater than min_index_interval")
    period = params["memtable_flush_period_in_ms"]
    if period != 0 and period < MEMTABLE_FLUSH_PERIOD_MIN:
        raise ConfigurationException(f"memtable_flush_period_in_ms must be 0 or greater than {MEMTABLE_FLUSH_PERIOD_MIN}")


def _convert(name: str, kind: str, value: Any) -> Any:
    if kind == "double":
        return parse_double(name, value)
    if kind == "int":
        return parse_int(name, value)
    if kind == "map":
        if name == "caching" and not isinstance(value, dict):
            return table_options.caching(simple_string(name, value))
        given = map_of_strings(name, value)
        if name == "compaction":
            return table_options.compaction(given)
        if name == "compression":
            return table_options.compression(given)
        if name == "caching":
            return table_options.caching(given)
        if name == "tombstone_gc":
            return table_options.tombstone_gc(given)
        return dict(sorted(given.items()))
    text = simple_string(name, value)
    if name == "speculative_retry":
        return table_options.speculative_retry(text)
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
    """(options, cdc) of a table after applying ``WITH`` properties to ``previous`` (defaults for CREATE).
    ``synchronous_updates`` is a view's property (``views.view_options`` takes it out first), refused on a table
    as ScyllaDB refuses it (``create_table_statement``, ``alter_table_statement``)."""
    props = property_dict(options, TABLE_PROPERTIES)
    if "synchronous_updates" in props:
        raise InvalidRequest("The synchronous_updates option is only applicable to materialized views, not to base "
                             "tables")
    params = dict(previous) if previous is not None else table_defaults()
    cdc = dict(previous_cdc) if previous_cdc is not None else None
    for name, value in props.items():
        kind = TABLE_PROPERTIES[name]
        if kind == "obsolete":
            continue
        if name == "id":
            if previous is not None:
                raise ConfigurationException("Cannot alter table id.")
            continue
        if kind == "tablets":
            map_of_strings(name, value)
            raise ConfigurationException("tablet options cannot be used when tablets are disabled for the keyspace")
        if kind == "cdc":
            cdc = cdc_options(value)
            continue
        params[name] = _convert(name, kind, value)
    _validate_table_params(params, props)
    return params, cdc


def table_id_option(options: Iterable[tuple[str, Any]]) -> str | None:
    """The ``id`` property of CREATE TABLE, if given."""
    for name, value in options:
        if name == "id":
            return simple_string("id", value)
    return None
