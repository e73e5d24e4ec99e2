"""The server's configuration as ScyllaDB's ``system.config`` shows it (ScyllaDB's ``db/config.cc`` and the
``db_config_table`` of ``db/virtual_tables.cc``).

Each setting has a name, a type as ScyllaDB names it (``bool``, ``integer``, ``double``, ``string``, ``string
list``), a value, the source of that value (``default``; ``cli`` when ``logtide serve`` was given it on its
command line; ``config`` from the ``--config`` file; ``cql`` after an ``UPDATE system.config``), and whether it is
live-updatable.  A value reads as JSON (``"99.0PERCENTILE"``, ``0.5``, ``true``, ``["udf"]``), as ScyllaDB's
``value_as_json``.  Only live-updatable settings can be changed by CQL; the others are refused with ScyllaDB's
messages.  Components read a setting when they use it (``get``) or are told of a change (``watch``).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable

SOURCES = ("default", "config", "cli", "cql")


class ConfigUpdateError(ValueError):
    """An ``UPDATE system.config`` refused: the message is ScyllaDB's (``virtual_table_update_exception``)."""


@dataclass(frozen=True)
class Setting:
    """One setting: its name, ScyllaDB's type name, whether CQL may change it while serving, and its meaning."""

    name: str
    type_name: str
    live: bool
    doc: str


def parse_value(type_name: str, text: str) -> Any:
    """A setting's value from the text ``UPDATE system.config SET value = '...'`` gives (ScyllaDB parses it as
    YAML: ``true``/``false``/``1``/``0`` for a bool, a number, the text itself for a string); ValueError when
    it does not parse."""
    text = text.strip()
    if type_name == "bool":
        lowered = text.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError(text)
    if type_name == "integer":
        return int(text)
    if type_name == "double":
        value = float(text)
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(text)
        return value
    if type_name == "string list":
        value = json.loads(text)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(text)
        return value
    return text


def value_json(type_name: str, value: Any) -> str:
    """A value as ``system.config`` shows it: JSON (a double without a needless ``.0``, as ScyllaDB's)."""
    if type_name == "double" and float(value).is_integer():
        return str(int(value))
    return json.dumps(value)


class LiveConfig:
    """The settings of one server, their values and sources (module docstring); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settings: dict[str, Setting] = {}
        self._values: dict[str, tuple[Any, str]] = {}
        self._checks: dict[str, Callable[[Any], None]] = {}
        self._watchers: dict[str, list[Callable[[Any], None]]] = {}

    def define(self, setting: Setting, default: Any, check: Callable[[Any], None] | None = None) -> None:
        """Add a setting with its default value; ``check(value)`` raises ValueError for a value it refuses."""
        with self._lock:
            self._settings[setting.name] = setting
            self._values[setting.name] = (default, "default")
            if check is not None:
                self._checks[setting.name] = check

    def set(self, name: str, value: Any, source: str) -> None:
        """Set a value from ``source`` (``config``, ``cli``; ``cql`` through :meth:`update`), telling the watchers."""
        if source not in SOURCES:
            raise ValueError(f"unknown configuration source {source!r}")
        check = self._checks.get(name)
        if check is not None:
            check(value)
        with self._lock:
            if name not in self._settings:
                raise KeyError(name)
            self._values[name] = (value, source)
            watchers = list(self._watchers.get(name, ()))
        for fn in watchers:
            fn(value)

    def get(self, name: str) -> Any:
        with self._lock:
            return self._values[name][0]

    def source(self, name: str) -> str:
        """Where the value of ``name`` came from (``SOURCES``)."""
        with self._lock:
            return self._values[name][1]

    def watch(self, name: str, fn: Callable[[Any], None]) -> None:
        """Call ``fn(value)`` after each change of ``name``."""
        with self._lock:
            self._watchers.setdefault(name, []).append(fn)

    def update(self, name: str | None, text: str | None) -> None:
        """``UPDATE system.config SET value = text WHERE name = name``, refused as ScyllaDB refuses it."""
        if not name:
            raise ConfigUpdateError("option name is required")
        if text is None:
            raise ConfigUpdateError("option value is required")
        setting = self._settings.get(name)
        if setting is None:
            raise ConfigUpdateError("no such option")
        if not setting.live:
            raise ConfigUpdateError("option is not live-updateable")
        try:
            value = parse_value(setting.type_name, text)
            self.set(name, value, "cql")
        except (ValueError, TypeError):
            raise ConfigUpdateError("cannot parse option value") from None

    def rows(self) -> list[dict[str, Any]]:
        """The rows of ``system.config``: name, source, type and value (JSON) of each setting, by name."""
        with self._lock:
            items = [(s, self._values[n]) for n, s in self._settings.items()]
        return [{"name": s.name, "source": source, "type": s.type_name, "value": value_json(s.type_name, value)}
                for s, (value, source) in sorted(items, key=lambda item: item[0].name)]
