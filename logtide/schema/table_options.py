"""Map-valued table options as ScyllaDB reads, checks and prints them.

``compaction`` (``compaction/*_compaction_strategy.cc``: each strategy's
``validate_options``), ``compression`` (``sstables/compressor.cc``
``compression_parameters``), ``caching`` (``schema/caching_options.cc``),
``tombstone_gc`` (``tombstone_gc_options.cc``) and ``speculative_retry``
(``schema/schema.cc``).  Each function takes the option as given (strings)
and returns it in the form ScyllaDB stores and DESCRIBE prints, or raises
ScyllaDB's error.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from logtide.errors import ConfigurationException, SyntaxException

COMPACTION_PACKAGE = "org.apache.cassandra.db.compaction."
COMPRESSION_PACKAGE = "org.apache.cassandra.io.compress."
# ScyllaDB's compaction_strategy::type names
COMPACTION_STRATEGIES = (
    "NullCompactionStrategy",
    "SizeTieredCompactionStrategy",
    "LeveledCompactionStrategy",
    "TimeWindowCompactionStrategy",
    "InMemoryCompactionStrategy",
    "IncrementalCompactionStrategy",
)
# compression_parameters: algorithm names; the *WithDicts ones are printed without the package
COMPRESSORS = ("LZ4Compressor", "LZ4WithDictsCompressor", "DeflateCompressor", "SnappyCompressor",
               "ZstdCompressor", "ZstdWithDictsCompressor")
UNQUALIFIED_COMPRESSORS = ("LZ4WithDictsCompressor", "ZstdWithDictsCompressor")
DEFAULT_COMPRESSOR = "LZ4WithDictsCompressor"
ZSTD_LEVELS = (-131072, 22)  # ZSTD_minCLevel(), ZSTD_maxCLevel()


# --------------------------------------------------------------------------
# C library number parsing, as ScyllaDB's property_definitions uses it
# --------------------------------------------------------------------------

_C_LONG = re.compile(r"\s*([+-]?\d+)")
_C_DOUBLE = re.compile(r"\s*([+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))", re.IGNORECASE)


def c_long(key: str, text: str) -> int:
    """``std::stol``: leading blanks, an optional sign and digits; trailing text is ignored."""
    m = _C_LONG.match(text)
    if m is None or not -(2**63) <= int(m.group(1)) < 2**63:
        raise SyntaxException(f"Invalid long value {text} for '{key}'")
    return int(m.group(1))


def c_int(key: str, text: str) -> int:
    """``std::stoi`` (a 32-bit result)."""
    m = _C_LONG.match(text)
    if m is None or not -(2**31) <= int(m.group(1)) < 2**31:
        raise SyntaxException(f"Invalid integer value {text} for '{key}'")
    return int(m.group(1))


def c_double(key: str, text: str) -> float:
    """``std::stod``: a leading floating-point number; trailing text is ignored."""
    m = _C_DOUBLE.match(text)
    if m is None:
        raise SyntaxException(f"Invalid double value {text} for '{key}'")
    return float(m.group(1))


def fmt_number(value: float) -> str:
    """A double as ``fmt::format("{}")`` prints it: shortest round-trip form, no ``.0`` on whole numbers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value)) if value != 0 or math.copysign(1, value) > 0 else "-0"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').rjust(2, '0')}"
    return text


def _leading(pattern: re.Pattern[str], text: str, convert: type, message: str) -> Any:
    """The number ``pattern`` finds at the start of ``text`` (as the C library reads it), or SyntaxException(message)."""
    m = pattern.match(text)
    if m is None:
        raise SyntaxException(message)
    return convert(m.group(1))


# --------------------------------------------------------------------------
# compaction
# --------------------------------------------------------------------------


def _get_double(options: dict[str, str], key: str, default: float) -> float:
    return c_double(key, options[key]) if key in options else default


def _get_long(options: dict[str, str], key: str, default: int) -> int:
    return c_long(key, options[key]) if key in options else default


def _check_true_false(options: dict[str, str], key: str) -> None:
    if key in options and options[key] not in ("true", "false"):
        raise ConfigurationException(f'{key} value ({options[key]}) must be "true" or "false"')


def _common(options: dict[str, str], checked: set[str]) -> None:
    threshold = _get_double(options, "tombstone_threshold", 0.2)
    if threshold < 0.0 or threshold > 1.0:
        raise ConfigurationException(f"tombstone_threshold value ({fmt_number(threshold)}) must be between 0.0 and 1.0")
    interval = _get_long(options, "tombstone_compaction_interval", 86400)
    if interval <= 0:
        raise ConfigurationException(f"tombstone_compaction_interval value ({interval * 1000}ms) must be positive")
    _check_true_false(options, "unchecked_tombstone_compaction")
    _check_true_false(options, "enabled")
    checked.update(("tombstone_threshold", "tombstone_compaction_interval", "unchecked_tombstone_compaction", "enabled"))


def _min_max_threshold(options: dict[str, str], checked: set[str]) -> None:
    for key, default in (("min_threshold", 4), ("max_threshold", 32)):
        value = _get_long(options, key, default)
        if value < 2:
            raise ConfigurationException(f"{key} value ({value}) must be bigger or equal to 2")
        checked.add(key)


def _tiered(options: dict[str, str], checked: set[str], low_default: float, high_default: float) -> None:
    """The size-tiered options, shared by the incremental strategy."""
    for key in ("min_sstable_size", "min_sstable_age"):
        value = _get_long(options, key, 0)
        if value < 0:
            raise ConfigurationException(f"{key} value ({value}) must be non negative")
        checked.add(key)
    low = _get_double(options, "bucket_low", low_default)
    if low <= 0.0 or low >= 1.0:
        raise ConfigurationException(f"bucket_low value ({fmt_number(low)}) must be between 0.0 and 1.0")
    high = _get_double(options, "bucket_high", high_default)
    if high <= 1.0:
        raise ConfigurationException(f"bucket_high value ({fmt_number(high)}) must be greater than 1.0")
    if high <= low:
        raise ConfigurationException(f"bucket_high value ({fmt_number(high)}) is less than or equal to the "
                                     f"bucket_low value ({fmt_number(low)})")
    checked.update(("bucket_low", "bucket_high"))


def _size_tiered(options: dict[str, str], checked: set[str]) -> None:
    _tiered(options, checked, 0.5, 1.5)
    cold = _get_double(options, "cold_reads_to_omit", 0.05)
    if cold < 0.0 or cold > 1.0:
        raise ConfigurationException(f"cold_reads_to_omit value ({fmt_number(cold)}) must be between 0.0 and 1.0")
    checked.add("cold_reads_to_omit")
    _min_max_threshold(options, checked)


def _leveled(options: dict[str, str], checked: set[str]) -> None:
    _size_tiered(options, checked)
    size = _get_long(options, "sstable_size_in_mb", 160)
    if size <= 0:
        raise ConfigurationException(f"sstable_size_in_mb value ({size}) must be positive")
    checked.add("sstable_size_in_mb")


def _time_window(options: dict[str, str], checked: set[str]) -> None:
    unit = options.get("compaction_window_unit")
    if unit is not None and unit not in ("MINUTES", "HOURS", "DAYS"):
        raise ConfigurationException(f"Invalid window unit {unit} for compaction_window_unit")
    size = _get_long(options, "compaction_window_size", 1)
    if size <= 0:
        raise ConfigurationException(f"compaction_window_size value ({size}) must be greater than 1")
    if "expired_sstable_check_frequency_seconds" in options:
        text = options["expired_sstable_check_frequency_seconds"]
        if _C_LONG.match(text) is None:
            raise SyntaxException(f"Invalid long value {text} for expired_sstable_check_frequency_seconds")
    resolution = options.get("timestamp_resolution")
    if resolution is not None and resolution not in ("MICROSECONDS", "MILLISECONDS"):
        raise ConfigurationException(f"Invalid timestamp resolution {resolution} for timestamp_resolution")
    checked.update(("compaction_window_unit", "compaction_window_size", "expired_sstable_check_frequency_seconds",
                    "timestamp_resolution", "unsafe_aggressive_sstable_expiration"))
    _min_max_threshold(options, checked)
    _check_true_false(options, "enable_optimized_twcs_queries")
    checked.add("enable_optimized_twcs_queries")


def _incremental(options: dict[str, str], checked: set[str]) -> None:
    _tiered(options, checked, 0.7071, 1.4142)
    c_int("sstable_size_in_mb", options["sstable_size_in_mb"]) if "sstable_size_in_mb" in options else None
    checked.add("sstable_size_in_mb")
    if "space_amplification_goal" in options:
        goal = c_double("space_amplification_goal", options["space_amplification_goal"])
        if goal <= 1.0 or goal > 2.0:
            raise ConfigurationException(f"space_amplification_goal value ({fmt_number(goal)}) must be greater than "
                                         "1.0 and less than or equal to 2.0")
    checked.add("space_amplification_goal")
    _min_max_threshold(options, checked)


_STRATEGY_CHECKS = {
    "SizeTieredCompactionStrategy": _size_tiered,
    "LeveledCompactionStrategy": _leveled,
    "TimeWindowCompactionStrategy": _time_window,
    "IncrementalCompactionStrategy": _incremental,
}


def compaction(given: dict[str, str]) -> dict[str, str]:
    """The ``compaction`` map checked as ScyllaDB checks it; ``class`` by its short name, the other options as given."""
    if "class" not in given:
        raise ConfigurationException("Missing sub-option 'class' for the 'compaction' option.")
    name = given["class"]
    at = name.find(COMPACTION_PACKAGE)
    short = name[at + len(COMPACTION_PACKAGE):] if at >= 0 else name
    if short not in COMPACTION_STRATEGIES:
        raise ConfigurationException(f"Unable to find compaction strategy class '{name}'")
    options = {k: v for k, v in given.items() if k != "class"}
    check = _STRATEGY_CHECKS.get(short)
    if check is not None:
        checked: set[str] = set()
        _common(options, checked)
        check(options, checked)
        unchecked = {k: v for k, v in sorted(options.items()) if k not in checked}
        if unchecked:
            text = ", ".join(f'"{k}": "{v}"' for k, v in unchecked.items())
            raise ConfigurationException(f"Invalid compaction strategy options {{{text}}} for chosen strategy type")
    for key in ("min_threshold", "max_threshold"):
        if key in options and c_int(key, options[key]) <= 0:
            raise ConfigurationException("Disabling compaction by setting compaction thresholds to 0 has been "
                                         "deprecated, set the compaction option 'enabled' to false instead.")
    return {"class": short, **dict(sorted(options.items()))}


# --------------------------------------------------------------------------
# compression
# --------------------------------------------------------------------------


def compression(given: dict[str, str]) -> dict[str, str]:
    """``compression``: ``{}`` turns compression off; otherwise ``sstable_compression`` is required.

    Cassandra 4's spelling is read too: ``class`` for ``sstable_compression``, ``'enabled': 'false'`` for off.
    """
    given = dict(given)
    if "class" in given and "sstable_compression" not in given:
        given["sstable_compression"] = given.pop("class")
    if given.pop("enabled", "true").lower() == "false":
        return {}
    if not given:
        return {}
    if "sstable_compression" not in given:
        raise ConfigurationException("Missing sub-option 'sstable_compression' for the 'compression' option.")
    name = given["sstable_compression"]
    out: dict[str, str] = {}
    if name:
        short = name[len(COMPRESSION_PACKAGE):] if name.startswith(COMPRESSION_PACKAGE) else name
        if short not in COMPRESSORS:
            raise ConfigurationException(f"Unknown sstable_compression: {name}")
        out["sstable_compression"] = short if short in UNQUALIFIED_COMPRESSORS else COMPRESSION_PACKAGE + short
    else:
        short = ""
    used = {"sstable_compression", "chunk_length_kb", "chunk_length_in_kb", "crc_check_chance"}
    chunk = given.get("chunk_length_in_kb", given.get("chunk_length_kb"))
    if chunk is not None:
        kb = _leading(_C_LONG, chunk, int, f"Invalid integer value {chunk} for chunk_length_in_kb")
        if not -(2**31) <= kb < 2**31:
            raise SyntaxException(f"Invalid integer value {chunk} for chunk_length_in_kb")
        if kb <= 0:
            raise ConfigurationException("Invalid negative or null for chunk_length_in_kb/chunk_length_kb")
        if kb & (kb - 1):
            raise ConfigurationException("chunk_length_in_kb/chunk_length_kb must be a power of 2.")
        if kb > 128:
            raise ConfigurationException("chunk_length_in_kb/chunk_length_kb must be 128 or less.")
        out["chunk_length_in_kb"] = str(kb)
    if "crc_check_chance" in given:
        text = given["crc_check_chance"]
        chance = _leading(_C_DOUBLE, text, float, f"Invalid double value {text} for crc_check_chance")
        if chance < 0.0 or chance > 1.0:
            raise ConfigurationException("crc_check_chance must be between 0.0 and 1.0.")
        out["crc_check_chance"] = f"{chance:.6f}"
    if short.startswith("Zstd"):
        used.add("compression_level")
        if "compression_level" in given:
            text = given["compression_level"]
            m = _C_LONG.match(text)
            if m is None:
                raise ConfigurationException(f"Invalid integer value {text} for compression_level")
            level = int(m.group(1))
            if not ZSTD_LEVELS[0] <= level <= ZSTD_LEVELS[1]:
                raise ConfigurationException(f"{ZSTD_LEVELS[0]} must be between {ZSTD_LEVELS[1]} and "
                                             f"compression_level, got {level}")
            out["compression_level"] = str(level)
    for key in sorted(given):
        if key not in used:
            raise ConfigurationException(f"Unknown compression option '{key}'.")
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------
# caching, tombstone_gc, speculative_retry
# --------------------------------------------------------------------------


def caching(given: dict[str, str] | str) -> dict[str, str]:
    """``caching``: ``keys`` ALL|NONE, ``rows_per_partition`` ALL|NONE|a count, ``enabled``; a JSON string also."""
    if isinstance(given, str):
        try:
            parsed = json.loads(given)
        except ValueError:
            raise ConfigurationException(f"Invalid caching option: {given}") from None
        if not isinstance(parsed, dict):
            raise ConfigurationException(f"Invalid caching option: {given}")
        given = {str(k): str(v) for k, v in parsed.items()}
    keys, rows, enabled = "ALL", "ALL", True
    for key, value in given.items():
        if key == "keys":
            keys = value
        elif key == "rows_per_partition":
            rows = value
        elif key == "enabled":
            enabled = value == "true"
        else:
            raise ConfigurationException(f"Invalid caching option: {key}")
    if keys not in ("ALL", "NONE"):
        raise ConfigurationException(f"Invalid key value: {keys}")
    if rows not in ("ALL", "NONE") and not (re.fullmatch(r"\d+", rows) and int(rows) < 2**64):
        raise ConfigurationException(f"Invalid key value: {rows}")
    out = {"keys": keys, "rows_per_partition": rows}
    if not enabled:
        out["enabled"] = "false"
    return dict(sorted(out.items()))


def tombstone_gc(given: dict[str, str]) -> dict[str, str]:
    """``tombstone_gc``: ``mode`` (timeout, repair, disabled, immediate) and ``propagation_delay_in_seconds``."""
    mode, delay = "timeout", 3600
    for key, value in given.items():
        if key == "mode":
            if value not in ("disabled", "repair", "timeout", "immediate"):
                raise ConfigurationException(f"Invalid value for tombstone_gc option mode: {value}")
            mode = value
        elif key == "propagation_delay_in_seconds":
            if not re.fullmatch(r"[+-]?\d+", value) or int(value) < 0 or int(value) >= 2**63:
                raise ConfigurationException(f"Invalid value for tombstone_gc option propagation_delay_in_seconds: {value}")
            delay = int(value)
        else:
            raise ConfigurationException(f"Invalid tombstone_gc option: {key}")
    return {"mode": mode, "propagation_delay_in_seconds": str(delay)}


def speculative_retry(value: str) -> str:
    """``speculative_retry``: NONE, ALWAYS, ``<ms>ms`` or ``<percent>PERCENTILE`` (any case), as ScyllaDB prints it."""
    text = value.upper()
    if text in ("NONE", "ALWAYS"):
        return text

    def number(suffix: str) -> float:
        head = text[: len(text) - len(suffix)]
        if not re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:E[+-]?\d+)?|[+-]?(?:INF|INFINITY|NAN)", head):
            raise ConfigurationException(f"cannot convert {text} to speculative_retry\n")
        return float(head)

    if text.endswith("MS"):
        ms = number("MS")
        if not math.isfinite(ms) or ms < 0.0:
            raise ConfigurationException(f"Invalid value {text} for option 'speculative_retry': the number of "
                                         "milliseconds must be non-negative and finite")
        return f"{ms:.2f}ms"
    if text.endswith("PERCENTILE"):
        fraction = number("PERCENTILE") / 100
        if not math.isfinite(fraction) or fraction < 0.0 or fraction > 1.0:
            raise ConfigurationException(f"Invalid value {text} for PERCENTILE option 'speculative_retry': must be "
                                         "between [0.0 and 100.0]")
        return f"{100 * fraction:.1f}PERCENTILE"
    raise ConfigurationException(f"cannot convert {text} to speculative_retry\n")
