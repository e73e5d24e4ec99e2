"""One way to run CQL against a table's home: a CQL cluster (cassandra-driver) or a local data directory.

Both return rows as tuples of cassandra-driver-decoded values, so the sources above them do not
care which one they talk to.  Clients are opened where they are used (on the driver or inside an
executor's ``read()``) and never pickled.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import logging
import re
import threading
from typing import Any, Iterable, Iterator, Sequence

from .options import Connection, OptionError


class Client:
    """Runs CQL; rows come back as tuples."""

    def rows(self, query: str, params: Sequence[Any] = ()) -> Iterator[tuple]:
        raise NotImplementedError

    def pages(self, query: str, params: Sequence[Any] = ()) -> Iterator[list]:
        """The rows in pages (lists of tuples): what the executors consume, a page at a time."""
        page: list = []
        for row in self.rows(query, params):
            page.append(row)
            if len(page) >= 5000:
                yield page
                page = []
        if page:
            yield page

    def pages_of_each(self, query: str, params: Iterable[Sequence[Any]]) -> Iterator[list]:
        """The pages of ``query`` run with each of ``params`` in turn (one query after another)."""
        for p in params:
            yield from self.pages(query, p)

    def execute(self, query: str, params: Sequence[Any] = ()) -> None:
        for _ in self.rows(query, params):
            pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class CqlClient(Client):
    """A cassandra-driver session on the contact points (token-aware routing, DC-aware when localDc is given)."""

    def __init__(self, conn: Connection) -> None:
        from cassandra import ConsistencyLevel
        from cassandra.auth import PlainTextAuthProvider
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import DCAwareRoundRobinPolicy, RoundRobinPolicy, TokenAwarePolicy
        from cassandra.query import tuple_factory

        logging.getLogger("cassandra").setLevel(logging.ERROR)
        child = DCAwareRoundRobinPolicy(conn.local_dc) if conn.local_dc else RoundRobinPolicy()
        profile = ExecutionProfile(load_balancing_policy=TokenAwarePolicy(child), request_timeout=conn.timeout,
                                   consistency_level=getattr(ConsistencyLevel, conn.consistency),
                                   row_factory=tuple_factory)
        kwargs: dict[str, Any] = {}
        if conn.username is not None:
            kwargs["auth_provider"] = PlainTextAuthProvider(conn.username, conn.password)
        if conn.ssl:
            from .tls import client_context

            kwargs["ssl_context"] = client_context(conn.ssl_ca_file, conn.ssl_verify, conn.ssl_cert_file,
                                                   conn.ssl_key_password, conn.ssl_highest)
        self.cluster = Cluster(list(conn.hosts), port=conn.port, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                               connect_timeout=conn.timeout, control_connection_timeout=conn.timeout,
                               idle_heartbeat_timeout=max(30, conn.timeout), **kwargs)
        self.session = self.cluster.connect()
        self.page_size = conn.page_size
        self._prepared: dict[str, Any] = {}

    def prepare(self, query: str) -> Any:
        p = self._prepared.get(query)
        if p is None:
            p = self._prepared[query] = self.session.prepare(query)
        return p

    def rows(self, query: str, params: Sequence[Any] = ()) -> Iterator[tuple]:
        stmt = self.prepare(query)
        stmt.fetch_size = self.page_size
        yield from self.session.execute(stmt, tuple(params))

    def pages(self, query: str, params: Sequence[Any] = ()) -> Iterator[list]:
        """Pages as the driver decodes them; the next page is requested before this one is handed
        out, so the node produces page N+1 while the executor converts page N."""
        stmt = self.prepare(query)
        stmt.fetch_size = self.page_size
        future = self.session.execute_async(stmt, tuple(params))
        while True:
            result = future.result()
            page = result.current_rows
            future = None
            if result.paging_state is not None:
                future = self.session.execute_async(stmt, tuple(params), paging_state=result.paging_state)
            if page:
                yield page
            if future is None:
                return

    def pages_of_each(self, query: str, params: Iterable[Sequence[Any]], ahead: int = 8) -> Iterator[list]:
        """The pages of ``query`` run with each of ``params``, in that order, with the first pages of up
        to ``ahead`` queries in flight: small queries (a CDC stream's window) overlap their round
        trips instead of waiting for one another."""
        stmt = self.prepare(query)
        stmt.fetch_size = self.page_size
        todo = iter([tuple(p) for p in params])
        in_flight: collections.deque = collections.deque()

        def launch() -> None:
            p = next(todo, None)
            if p is not None:
                in_flight.append((p, self.session.execute_async(stmt, p)))

        for _ in range(ahead):
            launch()
        while in_flight:
            p, future = in_flight.popleft()
            launch()
            while future is not None:
                result = future.result()
                page = result.current_rows
                future = None
                if result.paging_state is not None:
                    future = self.session.execute_async(stmt, p, paging_state=result.paging_state)
                if page:
                    yield page

    def execute_many(self, statements: list[tuple[str, Sequence[Any]]], concurrency: int = 32) -> None:
        """Run independent writes concurrently; raises the first failure."""
        from cassandra.concurrent import execute_concurrent

        prepared = [(self.prepare(q), tuple(p)) for q, p in statements]
        for ok, result in execute_concurrent(self.session, prepared, concurrency=concurrency,
                                             raise_on_first_error=True):
            if not ok:
                raise result

    def execute_partition_batches(self, groups: Iterable[list[tuple[str, Sequence[Any]]]], concurrency: int = 8,
                                  max_statements: int = 32, max_bytes: int = 24_000) -> None:
        """Run groups of writes, each group aimed at ONE partition, as UNLOGGED batches (at most
        ``max_statements`` statements and about ``max_bytes`` of values each, below Cassandra's
        50 KB batch limit), the batches concurrently; raises the first failure.

        Each statement keeps its own ``USING TIMESTAMP``/``TTL`` (a batch without a timestamp of its
        own lets its statements carry theirs), so the outcome does not depend on the order the
        writes arrive in: only for writes whose order does not matter, as timestamped ones."""
        from cassandra.concurrent import execute_concurrent
        from cassandra.query import BatchStatement, BatchType

        def requests() -> Iterator[tuple[Any, Any]]:
            for group in groups:
                pending: list = []
                size = 0
                for q, p in group:
                    pending.append((self.prepare(q), tuple(p)))
                    size += sum(len(v) if isinstance(v, (str, bytes, bytearray)) else 16 for v in p)
                    if len(pending) >= max_statements or size >= max_bytes:
                        yield _batch(pending)
                        pending, size = [], 0
                if pending:
                    yield _batch(pending)

        def _batch(statements: list) -> tuple[Any, Any]:
            if len(statements) == 1:
                return statements[0]
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            for stmt, params in statements:
                batch.add(stmt, params)
            return batch, None

        # prepared here, in the caller's thread: execute_concurrent pulls the next request from the
        # driver's event-loop thread, where a blocking prepare would wait on itself
        for ok, result in execute_concurrent(self.session, list(requests()), concurrency=concurrency,
                                             raise_on_first_error=True, results_generator=True):
            if not ok:
                raise result

    def close(self) -> None:
        self.cluster.shutdown()


class LocalClient(Client):
    """A read-only logtide database on a local data directory (each SELECT reads one SQLite snapshot)."""

    def __init__(self, conn: Connection) -> None:
        import logtide

        self.db = logtide.open(conn.path, readonly=True)
        self.session = self.db.session()

    def rows(self, query: str, params: Sequence[Any] = ()) -> Iterator[tuple]:
        yield from (tuple(r) for r in self.session.execute(query, list(params) if params else None))

    def pages(self, query: str, params: Sequence[Any] = ()) -> Iterator[list]:
        """The rows of one SELECT (one snapshot) in pages of plain value lists, decoded a page at a time."""
        from ..query.select_result import SelectResult

        result = self.session.execute(query, list(params) if params else None)
        values = result.value_lists() if isinstance(result, SelectResult) else (tuple(r) for r in result)
        while True:
            page = list(itertools.islice(values, 5000))
            if not page:
                return
            yield page

    def close(self) -> None:
        self.db.close()


class _Shared:
    """The CQL clients of one executor process, one per connection, kept for the process's life.

    Opening a cassandra-driver Cluster (control connection, topology and schema) costs far more
    than a token range or a micro-batch's writes, and Spark reuses its Python workers, so every
    task of a worker shares one client per connection (the Spark Cassandra Connector does the same)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clients: dict[Connection, CqlClient] = {}
        atexit.register(self.close)

    def get(self, conn: Connection) -> "CqlClient":
        with self.lock:
            client = self.clients.get(conn)
            if client is None:
                client = self.clients[conn] = open_client(conn)
            return client

    def drop(self, conn: Connection) -> None:
        with self.lock:
            client = self.clients.pop(conn, None)
        if client is not None:
            client.close()

    def close(self) -> None:
        with self.lock:
            clients, self.clients = list(self.clients.values()), {}
        for c in clients:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - shutting down at exit
                pass


_SHARED = _Shared()  # per process by design: see _Shared


class _Borrowed(Client):
    """A shared client lent to one task: closing it leaves the connection open for the next task
    (a failure drops it, so the next task reconnects)."""

    def __init__(self, conn: Connection, client: CqlClient) -> None:
        self.conn = conn
        self.client = client
        self.session = client.session

    def rows(self, query: str, params: Sequence[Any] = ()) -> Iterator[tuple]:
        return self.client.rows(query, params)

    def pages(self, query: str, params: Sequence[Any] = ()) -> Iterator[list]:
        return self.client.pages(query, params)

    def pages_of_each(self, query: str, params: Iterable[Sequence[Any]]) -> Iterator[list]:
        return self.client.pages_of_each(query, params)

    def execute_many(self, statements: list[tuple[str, Sequence[Any]]], concurrency: int = 32) -> None:
        self.client.execute_many(statements, concurrency)

    def execute_partition_batches(self, groups: Iterable[list[tuple[str, Sequence[Any]]]],
                                  concurrency: int = 8) -> None:
        self.client.execute_partition_batches(groups, concurrency)

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is not None and not issubclass(exc_type, GeneratorExit):
            _SHARED.drop(self.conn)


def shared_client(conn: Connection) -> Client:
    """A client for executor tasks: over CQL, this process's one client for ``conn`` (opened once,
    kept across tasks); a local data directory is opened afresh (each read sees its current state)."""
    if conn.path:
        return open_client(conn)
    return _Borrowed(conn, _SHARED.get(conn))


class ConnectionRefused(ConnectionError):
    """The server answered and refused the client: its login or its TLS settings are wrong."""


def open_client(conn: Connection) -> Client:
    """A client for the connection's host (CQL) or path (local data directory)."""
    from ..errors import CqlError

    if conn.path:
        try:
            return LocalClient(conn)
        except (FileNotFoundError, CqlError) as e:
            raise ConnectionError(f"cannot open the logtide data directory {conn.path}: {e}") from None
    try:
        return CqlClient(conn)
    except OptionError:  # a client certificate file that does not open: the option's own message
        raise
    except Exception as e:  # NoHostAvailable, AuthenticationFailed, ssl errors, ...
        reasons = connect_failures(e)
        error = ConnectionRefused if all(refused for _, refused in reasons) else ConnectionError
        raise error(f"cannot connect to {','.join(conn.hosts)}:{conn.port}: "
                    f"{'; '.join(dict.fromkeys(text for text, _ in reasons))}") from None


def connect_failures(e: BaseException) -> list[tuple[str, bool]]:
    """Why cassandra-driver could not connect, per host, in words naming the option to look at, and whether the
    server refused the client: a refused login (``username``/``password``), an untrusted TLS certificate
    (``sslCaFile``/``sslVerify``), TLS against a plain server (``ssl``); else the driver's own message."""
    from cassandra.cluster import NoHostAvailable

    return [_failure(x) for x in (list(e.errors.values()) if isinstance(e, NoHostAvailable) and e.errors else [e])]


def _failure(e: BaseException) -> tuple[str, bool]:
    from cassandra import AuthenticationFailed

    from .errors import login_refused, untrusted_certificate

    text = str(e)
    if isinstance(e, AuthenticationFailed):
        if "requires authentication" in text:
            return "the server requires a login: set the options username and password", True
        said = re.search(r'message="(.*)"', text)
        return login_refused(said.group(1) if said else text), True
    verify = re.search(r"certificate verify failed: ([^(]*?)\s*\(_ssl", text)
    if verify:
        return untrusted_certificate(verify.group(1)), True
    if "WRONG_VERSION_NUMBER" in text or "record layer failure" in text:
        return f"TLS handshake failed, is the server TLS? (option ssl): {text}", True
    return text, False
