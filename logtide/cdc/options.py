"""The ``cdc = {...}`` table option (ScyllaDB's ``cdc::options``).

| option    | values                   | default |
|-----------|--------------------------|---------|
| enabled   | true / false             | false   |
| preimage  | true / false / 'full'    | false   |
| postimage | true / false             | false   |
| delta     | 'full' / 'keys'          | 'full'  |
| ttl       | seconds >= 0 (0 = never) | 86400   |

Spec ``000`` calls the keys-only mode ``'enabled': 'keys'``; ScyllaDB spells
it ``'delta': 'keys'`` and so does logtide (see docs/cdc.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..errors import ConfigurationException

TRUE = ("true", "1", "yes", "on")
FALSE = ("false", "0", "no", "off")


def _bool(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    raise ConfigurationException(f"Invalid value for CDC option \"{name}\": {value} (expected true or false)")


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
        """Validate the stored option strings; ConfigurationException names the bad option."""
        if not options:
            return cls()
        pre = options.get("preimage", "false").strip().lower()
        if pre == "full":
            preimage, full = True, True
        else:
            try:
                preimage, full = _bool("preimage", pre), False
            except ConfigurationException:
                raise ConfigurationException(
                    f"Invalid value for CDC option \"preimage\": {options.get('preimage')} "
                    "(expected true, false or 'full')") from None
        delta = options.get("delta", "full").strip().lower()
        if delta not in ("full", "keys"):
            raise ConfigurationException(
                f"Invalid value for CDC option \"delta\": {options.get('delta')} (expected 'full' or 'keys')")
        raw_ttl = options.get("ttl", "86400").strip()
        try:
            ttl = int(raw_ttl)
        except ValueError:
            raise ConfigurationException(
                f"Invalid value for CDC option \"ttl\": {raw_ttl} (expected a non-negative number of seconds)") from None
        if ttl < 0:
            raise ConfigurationException(
                f"Invalid value for CDC option \"ttl\": {raw_ttl} (expected a non-negative number of seconds)")
        return cls(_bool("enabled", options.get("enabled", "false")), preimage, full,
                   _bool("postimage", options.get("postimage", "false")), delta == "keys", ttl)
