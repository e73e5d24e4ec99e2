"""The ``cdc = {...}`` table option, read as ScyllaDB's ``cdc::options`` reads it (cdc/log.cc).

| option    | accepted values (any case)      | stored as              | default |
|-----------|---------------------------------|------------------------|---------|
| enabled   | true / 1 / false / 0            | 'true' / 'false'       | false   |
| preimage  | true / 1 / false / 0 / full     | 'true' / 'false' / 'full' | false |
| postimage | true / 1 / false / 0            | 'true' / 'false'       | false   |
| delta     | full / keys                     | 'full' / 'keys'        | full    |
| ttl       | an integer >= 0 (C ``stoi``)    | its decimal digits     | 86400   |

Option names are case-insensitive too.  Every other spelling is refused with
ScyllaDB's message (ConfigurationException, 0x2300); ``canonical`` gives the
stored (and DESCRIBEd) form, ScyllaDB's ``cdc::options::to_map``.

Spec ``000`` calls the keys-only mode ``'enabled': 'keys'``; ScyllaDB spells
it ``'delta': 'keys'`` and so does logtide (see docs/cdc.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from ..errors import ConfigurationException

DEFAULTS: dict[str, str] = {"delta": "full", "enabled": "false", "postimage": "false", "preimage": "false",
                            "ttl": "86400"}
_LEGACY = {"yes": "true", "on": "true", "no": "false", "off": "false"}
_INT32_MAX = (1 << 31) - 1
_STOI = re.compile(r"\s*([+-]?\d+)")


def _flag(key: str, raw: str) -> bool:
    v = raw.lower()
    if v in ("true", "1"):
        return True
    if v in ("false", "0"):
        return False
    raise ConfigurationException(f'Invalid value for CDC option "{key}": {raw}')


def _ttl(raw: str) -> int:
    """C++ ``std::stoi``: leading spaces, a sign, digits; anything after them is ignored."""
    m = _STOI.match(raw)
    if m is None:
        raise ConfigurationException(f'Invalid value for CDC option "ttl": {raw}')
    n = int(m.group(1))
    if not -_INT32_MAX - 1 <= n <= _INT32_MAX:
        raise ConfigurationException("Invalid CDC option: ttl too large")
    if n < 0:
        raise ConfigurationException("Invalid CDC option: ttl must be >= 0")
    return n


def canonical(given: Mapping[str, str]) -> dict[str, str]:
    """The stored form of the given options over the defaults; ConfigurationException as ScyllaDB words it."""
    out = dict(DEFAULTS)
    for raw_key, raw in given.items():
        key, val = raw_key.lower(), raw.lower()
        if key in ("enabled", "postimage"):
            out[key] = "true" if _flag(key, raw) else "false"
        elif key == "preimage":
            out[key] = "full" if val == "full" else ("true" if _flag(key, raw) else "false")
        elif key == "delta":
            if val not in ("full", "keys"):
                raise ConfigurationException(f'Invalid value for CDC option "delta": {raw}')
            out[key] = val
        elif key == "ttl":
            out[key] = str(_ttl(raw))
        else:
            raise ConfigurationException(f"Invalid CDC option: {raw_key}")
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class CdcOptions:
    """Validated CDC options of one table."""

    enabled: bool = False
    preimage: bool = False
    full_preimage: bool = False
    postimage: bool = False
    delta_keys_only: bool = False
    ttl: int = 86400

    @classmethod
    def parse(cls, options: Mapping[str, str] | None) -> "CdcOptions":
        """The options of stored (or given) option strings; ConfigurationException names the bad option."""
        if not options:
            return cls()
        # a catalog written before logtide refused them may hold yes/no/on/off: read them as before
        o = canonical({k: _LEGACY.get(v.strip().lower(), v) for k, v in options.items()})
        return cls(o["enabled"] == "true", o["preimage"] != "false", o["preimage"] == "full",
                   o["postimage"] == "true", o["delta"] == "keys", int(o["ttl"]))


def extension_blob(options: Mapping[str, str]) -> bytes:
    """The ``cdc`` entry of ``system_schema.tables.extensions``: ScyllaDB's serialized ``map<sstring, sstring>``
    (a little-endian uint32 count, then each key and value as a little-endian uint32 length and UTF-8 bytes)."""
    items = canonical(options)
    out = bytearray(len(items).to_bytes(4, "little"))
    for k, v in items.items():
        for s in (k.encode(), v.encode()):
            out += len(s).to_bytes(4, "little") + s
    return bytes(out)
