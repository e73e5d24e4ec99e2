"""``logtide serve``: options, the optional TOML config file, startup checks and logging."""

from __future__ import annotations

import argparse
import logging
import os
import ssl
import sys
import tomllib
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("logtide.server")

CONFIG_KEYS = {
    "data_dir": str, "host": str, "port": int, "auth": bool, "superuser": str,
    "superuser_password_file": str, "tls_cert": str, "tls_key": str, "workers": int, "synchronous": str,
    "kafka_host": str, "kafka_port": int,
}
DEFAULTS: dict[str, Any] = {"host": "127.0.0.1", "port": 9042, "auth": False, "workers": 8, "synchronous": "FULL",
                            "kafka_host": "127.0.0.1", "kafka_port": 9092}


class StartupError(Exception):
    """A configuration the server refuses to start with (the message says why)."""


@dataclass
class ServeSettings:
    """Everything ``logtide serve`` needs, after merging the config file and the command line."""

    data_dir: str
    host: str
    port: int
    auth: bool
    superuser: str | None
    superuser_password_file: str | None
    tls_cert: str | None
    tls_key: str | None
    workers: int
    synchronous: str
    topology: Any = None  # logtide.cdc.streams.Topology from --vnodes/--shards, or None
    kafka_host: str = "127.0.0.1"
    kafka_port: int = 9092  # 0: no Kafka endpoint; -1: a free port (--kafka-port auto)


def add_serve(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide serve``."""
    p = subparsers.add_parser(
        "serve",
        parents=[parent],
        help="serve the database over the CQL native protocol (v3, v4, v5)",
        description="Serve the database in --data-dir to Cassandra/ScyllaDB drivers and cqlsh over the CQL "
        "native protocol. Binds to loopback unless --host says otherwise. Stops cleanly on SIGINT/SIGTERM.",
    )
    p.add_argument("--config", metavar="FILE", help="TOML file with any of: " + ", ".join(sorted(CONFIG_KEYS))
                   + " (command-line options win)")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to listen on (default 9042; 0 picks a free one)")
    p.add_argument("--auth", action="store_true", default=None,
                   help="require logins (PasswordAuthenticator) and check permissions")
    p.add_argument("--superuser", metavar="NAME", help="bootstrap superuser, created if missing")
    p.add_argument("--superuser-password-file", metavar="FILE",
                   help="file whose first line is the bootstrap superuser's password")
    p.add_argument("--tls-cert", metavar="FILE", help="PEM certificate (chain): serve over TLS")
    p.add_argument("--tls-key", metavar="FILE", help="PEM private key for --tls-cert")
    p.add_argument("--workers", type=int, help="threads running statements (default 8)")
    p.add_argument("--synchronous", choices=("FULL", "NORMAL", "OFF"),
                   help="SQLite durability: FULL (default) survives power loss, NORMAL survives crashes")
    p.add_argument("--kafka-host", help="address the Kafka endpoint listens on (default 127.0.0.1)")
    p.add_argument("--kafka-port", type=kafka_port, metavar="PORT",
                   help="port of the Kafka endpoint serving changefeed topics (default 9092; 0 disables it; "
                   "'auto' picks a free one)")
    p.set_defaults(run=run_serve)
    return p


def kafka_port(text: str) -> int:
    """``--kafka-port``: a port, 0 (no Kafka endpoint) or 'auto' (a free port, as -1)."""
    if text == "auto":
        return -1
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number or 'auto'") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range 0..65535")
    return port


def settings_from(ns: argparse.Namespace) -> ServeSettings:
    """Merge defaults, the config file and the command line (later wins)."""
    merged: dict[str, Any] = dict(DEFAULTS)
    if ns.config:
        merged.update(load_config(ns.config))
    for key in CONFIG_KEYS:
        value = getattr(ns, key, None)
        if value is not None and key != "data_dir":
            merged[key] = value
    from logtide.cli import default_data_dir
    from logtide.cli import topology as cli_topology

    data_dir = ns.data_dir
    if "data_dir" in merged and ns.data_dir == default_data_dir(os.environ):
        data_dir = merged["data_dir"]  # --data-dir not given: the config file's
    return ServeSettings(
        data_dir=data_dir, host=merged["host"], port=merged["port"], auth=bool(merged["auth"]),
        superuser=merged.get("superuser"), superuser_password_file=merged.get("superuser_password_file"),
        tls_cert=merged.get("tls_cert"), tls_key=merged.get("tls_key"), workers=merged["workers"],
        synchronous=merged["synchronous"].upper(),
        topology=cli_topology(ns), kafka_host=merged["kafka_host"], kafka_port=merged["kafka_port"],
    )


def load_config(path: str) -> dict[str, Any]:
    """The settings of a TOML config file, checked against CONFIG_KEYS."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise StartupError(f"cannot read config file {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise StartupError(f"invalid config file {path}: {e}") from None
    out = {}
    for key, value in doc.items():
        expected = CONFIG_KEYS.get(key)
        if expected is None:
            raise StartupError(f"unknown setting {key!r} in {path}; known: {', '.join(sorted(CONFIG_KEYS))}")
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise StartupError(f"setting {key!r} in {path} must be a {expected.__name__}")
        out[key] = value
    return out


def read_password(path: str) -> str:
    """The first line of a password file, without its line ending."""
    try:
        with open(path, encoding="utf-8") as f:
            password = f.readline().rstrip("\r\n")
    except OSError as e:
        raise StartupError(f"cannot read superuser password file {path}: {e.strerror}") from None
    if not password:
        raise StartupError(f"superuser password file {path} is empty")
    return password


def tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise StartupError("TLS needs both --tls-cert and --tls-key")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise StartupError(f"cannot load TLS certificate/key: {e}") from None
    return ctx


def run_serve(ns: argparse.Namespace) -> int:
    """Entry point of ``logtide serve``; returns the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    try:
        settings = settings_from(ns)
        return serve(settings)
    except StartupError as e:
        print(f"logtide serve: error: {e}", file=sys.stderr)
        return 2


def serve(settings: ServeSettings) -> int:
    """Open the database, set up auth and TLS, and serve until signalled."""
    import logtide
    from logtide import auth as auth_mod
    from logtide.errors import CqlError

    from .running import serve_until_signalled
    from .server import ServerConfig

    if (settings.superuser is None) != (settings.superuser_password_file is None):
        raise StartupError("--superuser and --superuser-password-file go together")
    password = read_password(settings.superuser_password_file) if settings.superuser_password_file else None
    ssl_ctx = tls_context(settings.tls_cert, settings.tls_key)
    os.makedirs(settings.data_dir, exist_ok=True)
    try:
        db = logtide.open(settings.data_dir, synchronous=settings.synchronous, topology=settings.topology)
    except CqlError as e:
        raise StartupError(f"cannot open data directory {settings.data_dir}: {e}") from None
    try:
        auth_mod.attach(db, settings.auth, settings.superuser, password)
    except auth_mod.AuthSetupError as e:
        db.close()
        raise StartupError(str(e)) from None
    config = ServerConfig(host=settings.host, port=settings.port, workers=settings.workers, tls=ssl_ctx)
    kafka = None
    if settings.kafka_port:
        from logtide.kafka import KafkaConfig
        kafka = KafkaConfig(host=settings.kafka_host, port=max(settings.kafka_port, 0), tls=ssl_ctx)

    def announce(server: Any) -> None:
        host, port = server.address
        host = f"[{host}]" if ":" in host else host
        log.info("listening on %s:%d, data directory %s (CQL native protocol v3/v4/v5; TLS %s; authentication %s)",
                 host, port, os.path.abspath(settings.data_dir), "on" if ssl_ctx else "off",
                 "on" if settings.auth else "off")

    try:
        serve_until_signalled(db, config, announce, kafka)
    except OSError as e:
        db.close()
        raise StartupError(f"cannot listen on {settings.host}:{settings.port}: {e.strerror or e}") from None
    return 0
