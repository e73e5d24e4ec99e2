"""The asyncio CQL server: listening, connections, the worker pool, events and a clean stop.

``Server(db, config)`` serves an open Database.  Writes are committed in
groups by one committer thread (``committer``); other statements run on
``config.workers`` threads shared fairly between connections (``scheduler``).
``stop()`` stops accepting, lets statements in flight finish and answer,
closes every connection, shuts the pool down and, when the server owns it,
closes the Database.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from logtide.ratelog import RateLimitedLog
from logtide.metrics import ServerMetrics
from logtide.result import SchemaChange
from logtide.schema.system_schema import NodeInfo

from . import compression as compression_mod
from .committer import Committer
from .connection import Connection
from .frame import DEFAULT_MAX_AUTH_FRAME_BODY, DEFAULT_MAX_FRAME_BODY
from .limits import ConnectionSlots, default_fd_reserve, plan_descriptors
from .listener import Listener
from .login import LoginGuard, LoginLimits
from .prepared import DEFAULT_CAPACITY, PreparedCache
from .scheduler import WorkerPool
from .schema_events import DEFAULT_TIMEOUT as SCHEMA_CATCH_UP_TIMEOUT, SchemaEvents
from .statements import StatementRunner

log = logging.getLogger("logtide.server")

CQL_VERSION = "3.4.5"
R = TypeVar("R")


@dataclass
class ServerConfig:
    """Where and how to serve."""

    host: str = "127.0.0.1"
    port: int = 9042
    workers: int = 8
    max_in_flight: int = 1024  # statements per connection before reading pauses
    max_frame_body: int = DEFAULT_MAX_FRAME_BODY
    # frames before a session starts (STARTUP, AUTH_RESPONSE): Cassandra's native_transport_max_auth_message_size
    max_auth_frame_body: int = DEFAULT_MAX_AUTH_FRAME_BODY
    max_connections: int | None = None  # None: as many as file descriptors allow (see limits)
    fd_reserve: int | None = None  # descriptors kept for storage; None: limits.default_fd_reserve(workers)
    auth_timeout: float = 10.0  # seconds a connection has to start a session (STARTUP, login); 0: no limit
    idle_timeout: float = 0.0  # close a session idle this long (no request, none running); 0: never
    login: LoginLimits = LoginLimits()
    log_interval: float = 60.0  # a repeated failure is logged once per interval
    prepared_capacity: int = DEFAULT_CAPACITY
    shutdown_timeout: float = 30.0
    # seconds the loop waits for a statement on an idle worker (see scheduler); None: 2 ms, or 0 when
    # every commit is fsynced (synchronous=FULL), where a write outlasts the wait and group commit wants
    # the loop free to hand more writes over
    handoff_wait: float | None = None
    tls: ssl.SSLContext | None = None  # serve over TLS with this context
    # seconds a DDL answer waits for listeners to read the tables it changed implicitly (schema_events)
    schema_catch_up_timeout: float = SCHEMA_CATCH_UP_TIMEOUT


class Server:
    """A CQL native-protocol (v3, v4, v5) server for one Database."""

    def __init__(self, db: Any, config: ServerConfig | None = None, close_db: bool = False,
                 slots: ConnectionSlots | None = None) -> None:
        """``slots``: the connection cap shared with other ports (``logtide serve``: the Kafka endpoint);
        None: this server's own, from ``config`` and the open file limit."""
        self.db = db
        self.config = config or ServerConfig()
        self.close_db = close_db
        self.auth = getattr(db, "auth", None)
        self.compressions = compression_mod.available()
        self.runner = StatementRunner(db, PreparedCache(self.config.prepared_capacity))
        self.connections: set[Connection] = set()
        self.schema_events = SchemaEvents(db, self.config.schema_catch_up_timeout)
        self.tasks: set[Any] = set()  # statements in flight on every connection
        self._conn_tasks: set[asyncio.Task] = set()
        self.workers: WorkerPool | None = None
        self.committer: Committer | None = None  # writes (see committer): one thread, one wake-up per group
        self.slots = slots
        self._listener: Listener | None = None
        self._stopped: asyncio.Event | None = None
        self.address: tuple[str, int] | None = None
        self.failures = RateLimitedLog(log, self.config.log_interval)
        self._login: LoginGuard | None = None
        self.max_connections = 0
        self.metrics = ServerMetrics(self)  # this server's own Prometheus registry
        self.kafka: Any = None  # the Kafka endpoint beside it (logtide serve), read by the console

    # -- lifecycle ------------------------------------------------------------
    async def start(self) -> tuple[str, int]:
        """Bind and start accepting; returns the bound (host, port)."""
        if self.config.workers < 1:
            raise ValueError(f"workers must be at least 1, not {self.config.workers}")
        if self.slots is None:
            reserve = self.config.fd_reserve
            self.slots = ConnectionSlots(plan_descriptors(
                self.config.max_connections,
                default_fd_reserve(self.config.workers) if reserve is None else reserve).connections)
        self.max_connections = self.slots.cap
        self._stopped = asyncio.Event()
        self._listener = Listener("CQL", self._accept, self.slots, self.failures, self.config.tls,
                                  self.config.auth_timeout)
        self.address = await self._listener.start(self.config.host, self.config.port)
        # no connection can have run yet: its callbacks come on a later loop iteration
        wait = self.config.handoff_wait
        if wait is None:
            wait = 0.0 if getattr(self.db.store, "synchronous", "FULL") == "FULL" else 0.002
        self.workers = WorkerPool(asyncio.get_running_loop(), self.config.workers, "logtide-cql", wait)
        self.committer = Committer(asyncio.get_running_loop(), self.db.committer.run_group,
                                   self.db.committer.max_group, wait)
        self._publish_node_info()
        return self.address

    def _publish_node_info(self) -> None:
        """Make ``system.local`` report the bound address and port (read by the engine as ``db.node_info``).

        The CDC generations and the tokens are not part of it: a session reads them from the
        Database at query time, so the generation tables follow every generation there is."""
        assert self.address is not None
        host, port = self.address
        if host in ("0.0.0.0", "::"):
            host = _primary_address()
        self.db.node_info = NodeInfo(host_id=self.db.host_id, broadcast_address=host, listen_address=host,
                                     rpc_address=host, native_port=port, clients=self._client_rows)
        config = self.db.config  # system.config shows the port bound (--port 0 picks one)
        config.set("native_transport_port", port, config.source("native_transport_port"))

    def _client_rows(self) -> list[dict[str, Any]]:
        """``system.clients``: this server's CQL connections, by address and port."""
        from .connection import client_row

        return sorted((client_row(c) for c in list(self.connections)), key=lambda r: (r["address"], r["port"]))

    async def wait_stopped(self) -> None:
        assert self._stopped is not None
        await self._stopped.wait()

    async def stop(self) -> None:
        """Stop accepting, finish statements in flight, close connections, the pool and (if owned) the db."""
        if self._listener is None or self._stopped is None or self._stopped.is_set():
            return
        await self._listener.close()
        self.schema_events.release_all()  # answers held for schema listeners go out before connections close
        for task in list(self._conn_tasks):
            task.cancel()  # each connection stops reading, then waits for its statements
        if self._conn_tasks:
            await asyncio.wait(set(self._conn_tasks), timeout=self.config.shutdown_timeout + 5)
        if self.workers is not None:
            await asyncio.to_thread(self.workers.shutdown, self.config.shutdown_timeout)
        if self.committer is not None:
            await asyncio.to_thread(self.committer.shutdown, self.config.shutdown_timeout)
        if self._login is not None:
            self._login.shutdown()
        self.metrics.close()
        if self.close_db:
            self.db.close()
        self._stopped.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(self, reader, writer)
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(conn)
        self._conn_tasks.add(task)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            self._conn_tasks.discard(task)

    # -- services for connections -----------------------------------------------
    @property
    def login(self) -> LoginGuard:
        """Password checks (made on the first login: the auth manager may be attached after the server)."""
        if self._login is None:
            self._login = LoginGuard(getattr(self.db, "auth", None) or self.auth, self.config.login)
        return self._login

    def post_blocking(self, owner: Any, fn: Callable[[], R], done: Callable[[bool, Any], None]) -> None:
        """Queue ``fn()`` in the worker pool for ``owner`` (a connection); ``done(ok, result or exception)``
        is called on the loop when it finishes."""
        assert self.workers is not None
        self.workers.post(owner, fn, done)

    def supported_options(self) -> dict[str, list[str]]:
        """SUPPORTED's options (native protocol spec, section 4.2.4): the CQL version, the compressions there
        are, the protocol versions, and ScyllaDB's ``SCYLLA_HOST_ID`` (the node's ``system.local`` host id, so a
        driver knows the node without a query); none of ScyllaDB's sharding keys, so ScyllaDB's drivers stay
        out of shard-aware mode (docs/server.md)."""
        return {
            "CQL_VERSION": [CQL_VERSION],
            "COMPRESSION": list(self.compressions),
            "PROTOCOL_VERSIONS": ["3/v3", "4/v4", "5/v5"],
            "SCYLLA_HOST_ID": [str(self.db.host_id)],
        }

    def register(self, conn: Connection) -> None:
        self.schema_events.register(conn)

    def unregister(self, conn: Connection) -> None:
        self.schema_events.unregister(conn)

    def broadcast_schema_change(self, change: SchemaChange) -> None:
        """Push a SCHEMA_CHANGE event to every connection that REGISTERed for it."""
        self.schema_events.broadcast(change)

    def stats(self) -> dict[str, int]:
        """Open connections, statement tasks in flight and prepared statements (for tests and monitoring)."""
        return {"connections": len(self.connections), "max_connections": self.max_connections,
                "tasks": len(self.tasks),
                "connection_tasks": len(self._conn_tasks),
                "queued": (self.workers.pending() if self.workers else 0)
                + (self.committer.pending() if self.committer else 0),
                "running": (self.workers.busy if self.workers else 0)
                + (self.committer.committing if self.committer else 0),
                "prepared": len(self.runner.cache)}


def _primary_address() -> str:
    """This host's address for clients when bound to a wildcard address."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
