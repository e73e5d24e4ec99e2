"""``logtide serve``: options, the optional TOML config file, startup checks and logging."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import re
import ssl
import sys
from dataclasses import dataclass
from typing import Any

from logtide.config import OFF, integer, number, port

from .startup import PortSetting, StartupError, bracket

log = logging.getLogger("logtide.server")

SERVE_KEYS = ("host", "port", "auth", "superuser", "superuser_password_file", "tls_cert", "tls_key", "workers",
              "synchronous", "metrics_port", "max_connections", "auth_timeout", "idle_timeout", "kafka_host",
              "kafka_port", "kafka_advertised_host", "kafka_max_request_bytes", "kafka_idle_timeout", "console",
              "alternator_ttl_period_in_seconds")
DEFAULTS: dict[str, Any] = {"host": "127.0.0.1", "port": 9042, "auth": False, "workers": 8, "synchronous": "FULL",
                            "metrics_port": 9180, "max_connections": None, "auth_timeout": 10.0, "idle_timeout": 0.0,
                            "kafka_host": "127.0.0.1", "kafka_port": 9092, "kafka_advertised_host": None,
                            "kafka_max_request_bytes": 2 << 20, "kafka_idle_timeout": 600.0, "console": True,
                            "alternator_ttl_period_in_seconds": 86400.0}
SYNCHRONOUS = ("FULL", "NORMAL", "OFF")
MIN_KAFKA_REQUEST_BYTES = 128 << 10  # never below what a client may send before login
MAX_KAFKA_REQUEST_BYTES = 1 << 30


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
    max_connections: int | None = None
    auth_timeout: float = 10.0
    idle_timeout: float = 0.0
    metrics_port: int | None = None  # None: no metrics endpoint (--metrics-port off); 0: a free port
    topology: Any = None  # logtide.cdc.streams.Topology from --vnodes/--shards, or None
    kafka_host: str = "127.0.0.1"
    kafka_port: int | None = 9092  # None: no Kafka endpoint (--kafka-port off); 0: a free port
    kafka_advertised_host: str | None = None  # the name Kafka clients are told to connect to (None: the bound one)
    kafka_max_request_bytes: int = 2 << 20  # largest Kafka request after login (socket.request.max.bytes)
    kafka_idle_timeout: float = 600.0  # close a Kafka connection with no request this long (connections.max.idle.ms)
    console: bool = True  # serve the web console beside /metrics (docs/console.md)
    alternator_ttl_period_in_seconds: float = 86400.0  # the per-row TTL's expiration scan period (ScyllaDB's name)
    sources: dict[str, str] | None = None  # setting -> "cli" or "config": where a value given came from


def add_serve(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide serve``."""
    p = subparsers.add_parser(
        "serve",
        parents=[parent],
        description="Serve the database in --data-dir to Cassandra/ScyllaDB drivers and cqlsh over the CQL "
        "native protocol. Binds to loopback unless --host says otherwise. Stops cleanly on SIGINT/SIGTERM.",
    )
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=cql_port, help="port to listen on (default 9042; 0 or auto picks a free one)")
    p.add_argument("--auth", action="store_true", default=None,
                   help="require logins (PasswordAuthenticator) and check permissions")
    p.add_argument("--superuser", metavar="NAME", help="bootstrap superuser, created if missing")
    p.add_argument("--superuser-password-file", metavar="FILE",
                   help="file whose first line is the bootstrap superuser's password")
    p.add_argument("--tls-cert", metavar="FILE", help="PEM certificate (chain): serve over TLS")
    p.add_argument("--tls-key", metavar="FILE", help="PEM private key for --tls-cert")
    p.add_argument("--workers", type=integer, help="threads running reads and other statements; writes have one committer thread (default 8)")
    p.add_argument("--synchronous", choices=SYNCHRONOUS,
                   help="SQLite durability: FULL (default) survives power loss, NORMAL survives crashes")
    p.add_argument("--max-connections", type=integer, metavar="N",
                   help="connections open at once, past which new ones are closed (default: as many as the "
                        "open file limit allows, keeping descriptors for storage)")
    p.add_argument("--auth-timeout", type=number, metavar="SECONDS",
                   help="close a connection that has not started a session (STARTUP and login) in this time "
                        "(default 10; 0: never)")
    p.add_argument("--idle-timeout", type=number, metavar="SECONDS",
                   help="close a session that sent no request for this long (default 0: never, as Cassandra's "
                        "native_transport_idle_timeout)")
    p.add_argument("--metrics-port", type=port, metavar="PORT",
                   help="serve Prometheus metrics over HTTP at http://HOST:PORT/metrics (default 9180, "
                        "ScyllaDB's; 0 or auto picks a free one; off: no metrics)")
    p.add_argument("--console", type=on_off, metavar="on|off",
                   help="serve the web console at http://HOST:METRICS-PORT/ beside /metrics (default on; off: "
                        "only /metrics)")
    p.add_argument("--kafka-host", help="address the Kafka endpoint listens on (default 127.0.0.1)")
    p.add_argument("--kafka-port", type=port, metavar="PORT",
                   help="port of the Kafka endpoint serving changefeed topics (default 9092; 0 or auto picks a "
                        "free one; off: no Kafka endpoint)")
    p.add_argument("--kafka-advertised-host", metavar="HOST",
                   help="host name or address Kafka clients are told to connect to, for a server they reach by "
                   "another name (Kafka's advertised.listeners; default: the --kafka-host address, or this "
                   "host's primary address when that is a wildcard)")
    p.add_argument("--kafka-max-request-bytes", type=integer, metavar="BYTES",
                   help="largest request a logged-in Kafka client may send (default 2097152, 2 MiB; Kafka's "
                        "socket.request.max.bytes); before login the limit is 128 KiB")
    p.add_argument("--kafka-idle-timeout", type=number, metavar="SECONDS",
                   help="close a Kafka connection that sent no request for this long (default 600, Kafka's "
                        "connections.max.idle.ms; 0: never)")
    p.add_argument("--alternator-ttl-period-in-seconds", type=number, metavar="SECONDS",
                   help="scan every table with a per-row TTL column for expired rows once in this period "
                        "(default 86400, ScyllaDB's; system.config alternator_ttl_period_in_seconds)")
    p.set_defaults(run=run_serve)
    return p


def on_off(text: str | bool) -> bool:
    """``--console``: on or off (true/false in the config file)."""
    if isinstance(text, bool):
        return text
    value = text.strip().lower()
    if value in ("on", "true", "yes"):
        return True
    if value in ("off", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"give on or off, not {text!r}")


def cql_port(text: str) -> int:
    """``--port``: a port, or 0/auto for a free one; never off (CQL is the server)."""
    value = port(text)
    if value == OFF:
        raise argparse.ArgumentTypeError("CQL cannot be off: it is the server (0 or auto picks a free port)")
    return value


def listeners(s: "ServeSettings") -> list[PortSetting]:
    """The ports of ``s`` that are on: CQL, then Kafka and metrics (metrics on the CQL host)."""
    out = [PortSetting("--port", s.host, s.port, False)]
    if s.kafka_port is not None:
        out.append(PortSetting("--kafka-port", s.kafka_host, s.kafka_port, True))
    if s.metrics_port is not None:
        out.append(PortSetting("--metrics-port", s.host, s.metrics_port, True))
    return out


def check_ports(wanted: list[PortSetting]) -> None:
    """Bind every fixed port (0 is any free one: nothing to check) as the servers will, all at once, then
    release them: a taken port is a StartupError naming it and its option before anything is created."""
    import socket

    held: list[socket.socket] = []
    try:
        for listener in wanted:
            if listener.port == 0:
                continue
            try:
                infos = socket.getaddrinfo(listener.host, listener.port, type=socket.SOCK_STREAM,
                                           flags=socket.AI_PASSIVE)
            except socket.gaierror as e:
                raise StartupError(listener.refused(OSError(e.errno, e.strerror))) from None
            for family, kind, proto, _, address in dict.fromkeys(infos):
                sock = socket.socket(family, kind, proto)
                held.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's and http.server's
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                try:
                    sock.bind(address)
                    sock.listen()
                except OSError as e:
                    raise StartupError(listener.refused(e)) from None
    finally:
        for sock in held:
            sock.close()


def settings_from(ns: argparse.Namespace) -> ServeSettings:
    """Defaults, then the config file and the command line (already merged into ``ns`` by ``--config``)."""
    from logtide.cli import topology as cli_topology

    merged: dict[str, Any] = dict(DEFAULTS)
    for key in SERVE_KEYS:
        value = getattr(ns, key, None)
        if value is not None:
            merged[key] = value
    synchronous = merged["synchronous"].upper()
    if synchronous not in SYNCHRONOUS:
        raise StartupError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, got {merged['synchronous']!r}")
    if merged["port"] == OFF:
        raise StartupError("port = \"off\" is refused: CQL is the server (0 or \"auto\" picks a free port)")
    for key in ("metrics_port", "kafka_port"):
        if merged[key] == OFF:
            merged[key] = None
    from_file = getattr(ns, "config_keys", frozenset())
    sources = {key: ("config" if key in from_file else "cli") for key in SERVE_KEYS
               if getattr(ns, key, None) is not None}
    return ServeSettings(
        data_dir=ns.data_dir, host=merged["host"], port=merged["port"], auth=bool(merged["auth"]),
        superuser=merged.get("superuser"), superuser_password_file=merged.get("superuser_password_file"),
        tls_cert=merged.get("tls_cert"), tls_key=merged.get("tls_key"), workers=merged["workers"],
        synchronous=synchronous, metrics_port=merged["metrics_port"], max_connections=merged["max_connections"],
        auth_timeout=float(merged["auth_timeout"]), idle_timeout=float(merged["idle_timeout"]),
        topology=cli_topology(ns), kafka_host=merged["kafka_host"], kafka_port=merged["kafka_port"],
        kafka_advertised_host=merged["kafka_advertised_host"],
        kafka_max_request_bytes=merged["kafka_max_request_bytes"],
        kafka_idle_timeout=float(merged["kafka_idle_timeout"]), console=console_setting(merged["console"]),
        alternator_ttl_period_in_seconds=float(merged["alternator_ttl_period_in_seconds"]), sources=sources,
    )


def console_setting(value: Any) -> bool:
    """``console`` from the command line (already a bool) or the config file (a bool, or "on"/"off")."""
    try:
        return on_off(value)
    except (argparse.ArgumentTypeError, AttributeError):
        raise StartupError(f"console must be on or off (true or false), not {value!r}") from None


def check_settings(s: ServeSettings) -> None:
    """Refuse values no server can run with (StartupError naming the setting)."""
    for listener in listeners(s):
        if not 0 <= listener.port <= 65535:
            raise StartupError(f"{listener.flag} {listener.port} is out of range: give 0 to 65535 (0 picks a free "
                               "port)" + (" or off" if listener.can_be_off else ""))
    if s.workers < 1:
        raise StartupError(f"workers must be at least 1, not {s.workers}")
    if s.max_connections is not None and s.max_connections < 1:
        raise StartupError(f"max_connections must be at least 1, not {s.max_connections}")
    period = s.alternator_ttl_period_in_seconds
    if not 0 < period < float("inf"):
        raise StartupError(f"alternator_ttl_period_in_seconds must be a positive number of seconds, not {period}")
    for name in ("auth_timeout", "idle_timeout", "kafka_idle_timeout"):
        value = getattr(s, name)
        if not value >= 0 or value == float("inf"):
            raise StartupError(f"{name} must be a number of seconds, 0 or more, not {value}")
    if not MIN_KAFKA_REQUEST_BYTES <= s.kafka_max_request_bytes <= MAX_KAFKA_REQUEST_BYTES:
        raise StartupError(f"kafka_max_request_bytes must be between {MIN_KAFKA_REQUEST_BYTES} and "
                           f"{MAX_KAFKA_REQUEST_BYTES} (1 GiB), not {s.kafka_max_request_bytes}")
    if s.kafka_advertised_host is not None and not is_host_name(s.kafka_advertised_host):
        raise StartupError(f"kafka_advertised_host must be a host name or an IP address, not "
                           f"{s.kafka_advertised_host!r}")


_HOST_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def is_host_name(text: str) -> bool:
    """A DNS name (letters, digits, hyphens and, as container names have them, underscores; dot-separated
    labels of at most 63) or an IPv4/IPv6 address."""
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    labels = text[:-1].split(".") if text.endswith(".") else text.split(".")
    return 0 < len(text) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels)


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
    for what, path in (("certificate", cert), ("private key", key)):
        try:
            with open(path, "rb"):
                pass
        except OSError as e:
            raise StartupError(f"cannot read TLS {what} file {path}: {e.strerror}") from None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        reason = getattr(e, "reason", None) or e
        if not _holds_pem_certificate(cert):
            raise StartupError(f"cannot load TLS certificate {cert}: it holds no PEM certificate ({reason})") from None
        raise StartupError(f"cannot load TLS private key {key} for certificate {cert}: {reason}") from None
    return ctx


def _holds_pem_certificate(path: str) -> bool:
    """True when the file's first PEM certificate block decodes."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read()
        start = text.index("-----BEGIN CERTIFICATE-----")
        end = text.index("-----END CERTIFICATE-----", start) + len("-----END CERTIFICATE-----")
        ssl.PEM_cert_to_DER_cert(text[start:end])
        return True
    except (OSError, ValueError):
        return False


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_serve(ns: argparse.Namespace) -> int:
    """Entry point of ``logtide serve``; returns the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    try:
        settings = settings_from(ns)
        check_settings(settings)
        return serve(settings)
    except StartupError as e:
        print(f"logtide serve: error: {e}", file=sys.stderr)
        return 2


def serve(settings: ServeSettings) -> int:
    """Open the database, set up auth and TLS, and serve until signalled."""
    import logtide
    from logtide import auth as auth_mod
    from logtide.errors import CqlError, StorageFailure

    from logtide.version import package_version

    from .runtime_file import RuntimeFile
    from .running import serve_until_signalled
    from .server import ServerConfig

    if (settings.superuser is None) != (settings.superuser_password_file is None):
        raise StartupError("--superuser and --superuser-password-file go together")
    password = read_password(settings.superuser_password_file) if settings.superuser_password_file else None
    ssl_ctx = tls_context(settings.tls_cert, settings.tls_key)
    check_ports(listeners(settings))  # before the data directory is opened, or created
    try:
        db = logtide.open(settings.data_dir, synchronous=settings.synchronous, topology=settings.topology)
    except StorageFailure as e:  # its message names the directory and the problem
        raise StartupError(str(e)) from None
    except CqlError as e:
        raise StartupError(f"cannot open data directory {settings.data_dir}: {e}") from None
    configure(db, settings)
    try:
        auth_mod.attach(db, settings.auth, settings.superuser, password)
    except auth_mod.AuthSetupError as e:
        db.close()
        raise StartupError(str(e)) from None
    config = ServerConfig(host=settings.host, port=settings.port, workers=settings.workers, tls=ssl_ctx,
                          max_connections=settings.max_connections, auth_timeout=settings.auth_timeout,
                          idle_timeout=settings.idle_timeout)
    if not settings.auth and not is_loopback(settings.host):
        log.warning("listening on %s without --auth: anyone who can reach this address can read and change "
                    "every table; give --auth (and --superuser) or bind to 127.0.0.1", settings.host)
    runtime = RuntimeFile(settings.data_dir)
    kafka = None
    if settings.kafka_port is not None:
        from logtide.kafka import KafkaConfig
        kafka = KafkaConfig(host=settings.kafka_host, port=settings.kafka_port, tls=ssl_ctx,
                            advertised_host=settings.kafka_advertised_host,
                            max_request_bytes=settings.kafka_max_request_bytes, auth_timeout=settings.auth_timeout,
                            idle_timeout=settings.kafka_idle_timeout)

    def announce(server: Any) -> None:
        host, port = server.address
        metrics_port = start_metrics(server, settings)
        console = f"; console http://{bracket(host)}:{metrics_port}/" if metrics_port and settings.console else ""
        log.info("logtide %s listening on %s:%d, data directory %s (CQL native protocol v3/v4/v5; TLS %s; "
                 "authentication %s; metrics %s%s)", package_version(), bracket(host), port,
                 os.path.abspath(settings.data_dir), "on" if ssl_ctx else "off", "on" if settings.auth else "off",
                 f"http://{bracket(host)}:{metrics_port}/metrics" if metrics_port else "off", console)
        runtime.write(host, port, metrics_port)

    try:
        serve_until_signalled(db, config, announce, kafka)
    except OSError as e:  # taken since check_ports (the Kafka endpoint and metrics raise StartupError)
        db.close()
        raise StartupError(listeners(settings)[0].refused(e)) from None
    except ValueError as e:  # a limit the server cannot run with (the open file limit)
        db.close()
        raise StartupError(str(e)) from None
    finally:
        runtime.remove()
    return 0


def configure(db: Any, settings: ServeSettings) -> None:
    """What ``system.config`` shows of this server's settings (``engine.settings``), each with its source: the
    row TTL's scan period (which the scan follows), the address and port, authentication."""
    sources = settings.sources or {}

    def put(name: str, value: Any, *keys: str) -> None:
        given = [sources[k] for k in keys if k in sources]
        db.config.set(name, value, "cli" if "cli" in given else given[0] if given else "default")

    put("alternator_ttl_period_in_seconds", settings.alternator_ttl_period_in_seconds,
        "alternator_ttl_period_in_seconds")
    put("listen_address", settings.host, "host")
    put("rpc_address", settings.host, "host")
    put("native_transport_port", settings.port, "port")
    put("authenticator", "PasswordAuthenticator" if settings.auth else "AllowAllAuthenticator", "auth")
    put("authorizer", "CassandraAuthorizer" if settings.auth else "AllowAllAuthorizer", "auth")
    if settings.topology is not None:  # --vnodes or --shards given (the value is the data directory's)
        db.config.set("num_tokens", db.generations.current.topology.vnodes, "cli")


def start_metrics(server: Any, settings: ServeSettings) -> int:
    """Serve the server's metrics, and the web console unless ``--console off``, over HTTP on the CQL host;
    the bound port, or 0 (``--metrics-port off``).

    A port that cannot be bound is fatal, as for CQL and Kafka (one rule for the three ports)."""
    if settings.metrics_port is None:
        return 0
    from logtide.console import start_console

    if settings.console and not settings.auth and not is_loopback(settings.host):
        log.warning("the web console on %s is served without --auth: anyone who can reach this address sees every "
                    "table, log and changefeed; give --auth, bind to 127.0.0.1 or give --console off", settings.host)
    try:
        return start_console(server, settings.host, settings.metrics_port, settings.console,
                             getattr(server, "kafka", None)).port
    except OSError as e:
        raise StartupError(listeners(settings)[-1].refused(e)) from None
