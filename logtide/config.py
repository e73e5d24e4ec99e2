"""The TOML config file every ``logtide`` subcommand reads with ``--config FILE``.

One file serves every subcommand: each takes the settings it has an option
for and ignores the rest (``host`` means nothing to ``logtide status``), so
``logtide serve --config F`` and ``logtide status --config F`` agree on
``data_dir``.  Keys are the long option names with ``_`` for ``-``.  Options
given on the command line win over the file, the file over the defaults.
An unknown key, or a value of the wrong type, is an error naming the file.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from typing import Any, Mapping, Sequence



class Port:
    """The type of a port setting: ``port_value`` of the text or integer (docs/server.md, "Ports")."""


# setting -> type; shared by every subcommand that has the option
SETTINGS: dict[str, type] = {
    "data_dir": str, "vnodes": int, "shards": int,
    "host": str, "port": Port, "auth": bool, "superuser": str, "superuser_password_file": str,
    "tls_cert": str, "tls_key": str, "workers": int, "synchronous": str, "metrics_port": Port,
    "max_connections": int, "auth_timeout": float, "idle_timeout": float, "kafka_host": str, "kafka_port": Port,
    "kafka_advertised_host": str,
    "kafka_max_request_bytes": int, "kafka_idle_timeout": float, "console": bool,
    "alternator_ttl_period_in_seconds": float,
}
TYPE_NAMES = {int: "an integer", str: "a string", bool: "true or false", float: "a number",
              Port: 'a port number (0 to 65535; 0 picks a free one), "auto" (the same as 0) or "off"'}
OFF = "off"  # a port setting that turns its endpoint off (Kafka, metrics; never CQL)


def port_value(value: int | str) -> int | str:
    """A port setting: 0 to 65535, 0 or ``auto`` for a free port (the one chosen is logged), or ``off`` (``OFF``).

    One rule for ``--port``, ``--kafka-port`` and ``--metrics-port`` and their config keys; a ValueError
    names what is wrong (whether ``off`` is allowed is the command's to say)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("auto", OFF):
            return 0 if text == "auto" else OFF
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a port: give 0 to 65535 (0 or auto: a free port) or off") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r} is not a port: give 0 to 65535 (0 or auto: a free port) or off")
    if not 0 <= value <= 65535:
        raise ValueError(f"port {value} is out of range: give 0 to 65535 (0 or auto: a free port) or off")
    return value


def port(text: str) -> int | str:
    """An argparse type: a port option (``port_value``)."""
    try:
        return port_value(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def integer(text: str) -> int:
    """An argparse type: an integer option value ("must be an integer, got 'x'" otherwise)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None


def number(text: str) -> float:
    """An argparse type: a number of seconds or similar ("must be a number, got 'x'" otherwise)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


class ConfigError(Exception):
    """A config file that cannot be read or holds a bad setting (the message names the file)."""


def load_config(path: str) -> dict[str, Any]:
    """The settings of a TOML config file, checked against SETTINGS."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"invalid config file {path}: {e}") from None
    out = {}
    for key, value in doc.items():
        expected = SETTINGS.get(key)
        if expected is None:
            raise ConfigError(f"unknown setting {key!r} in {path}; known: {', '.join(sorted(SETTINGS))}")
        if expected is Port:
            try:
                out[key] = port_value(value)
            except ValueError:
                raise ConfigError(f"setting {key!r} in {path} must be {TYPE_NAMES[Port]}, got {value!r}") from None
            continue
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"setting {key!r} in {path} must be {TYPE_NAMES[expected]}, got {value!r}")
        out[key] = value
    return out


def default_config(environ: Mapping[str, str]) -> str | None:
    """The config file a command reads without ``--config``: ``$LOGTIDE_CONFIG`` (which must exist), else
    ``$XDG_CONFIG_HOME/logtide/logtide.toml`` or ``~/.config/logtide/logtide.toml`` when it exists (the XDG Base
    Directory convention); None when there is none."""
    given = environ.get("LOGTIDE_CONFIG")
    if given:
        if not os.path.isfile(given):
            raise ConfigError(f"cannot read config file {given} (from LOGTIDE_CONFIG): no such file")
        return given
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".config")
    path = os.path.join(base, "logtide", "logtide.toml")
    return path if os.path.isfile(path) else None


class ConfigAction(argparse.Action):
    """``--config FILE``: fill every option of this subcommand that the command line did not set."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        path = str(values)
        setattr(namespace, self.dest, path)
        try:
            settings = load_config(path)
        except ConfigError as e:
            parser.error(str(e))
        from_file = set(getattr(namespace, "config_keys", ()))
        for key, value in settings.items():
            if hasattr(namespace, key) and getattr(namespace, key) == parser.get_default(key):
                setattr(namespace, key, value)
                from_file.add(key)
        namespace.config_keys = frozenset(from_file)  # what the file set (system.config's source "config")


def add_config_option(parser: argparse.ArgumentParser, keys: Sequence[str] = ("data_dir", "vnodes", "shards")) -> None:
    """Add ``--config FILE`` to a (parent) parser."""
    parser.add_argument("--config", metavar="FILE", action=ConfigAction,
                        help="TOML file of settings (" + ", ".join(sorted(SETTINGS)) + "); each command uses "
                             "those it has options for; command-line options win")
