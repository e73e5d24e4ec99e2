"""One way to run CQL against a table's home: a CQL cluster (cassandra-driver) or a local data directory.

Both return rows as tuples of cassandra-driver-decoded values, so the sources above them do not
care which one they talk to.  Clients are opened where they are used (on the driver or inside an
executor's ``read()``) and never pickled.
"""

from __future__ import annotations

import logging
from typing import Any, Iterator, Sequence

from .options import Connection


class Client:
    """Runs CQL; rows come back as tuples."""

    def rows(self, query: str, params: Sequence[Any] = ()) -> Iterator[tuple]:
        raise NotImplementedError

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
            import ssl

            ctx = ssl.create_default_context(cafile=conn.ssl_ca_file)
            if not conn.ssl_verify:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            kwargs["ssl_context"] = ctx
        self.cluster = Cluster(list(conn.hosts), port=conn.port, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                               connect_timeout=conn.timeout, control_connection_timeout=conn.timeout, **kwargs)
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

    def execute_many(self, statements: list[tuple[str, Sequence[Any]]], concurrency: int = 32) -> None:
        """Run independent writes concurrently; raises the first failure."""
        from cassandra.concurrent import execute_concurrent

        prepared = [(self.prepare(q), tuple(p)) for q, p in statements]
        for ok, result in execute_concurrent(self.session, prepared, concurrency=concurrency,
                                             raise_on_first_error=True):
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

    def close(self) -> None:
        self.db.close()


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
    except Exception as e:  # NoHostAvailable, AuthenticationFailed, ssl errors, ...
        raise ConnectionError(f"cannot connect to {','.join(conn.hosts)}:{conn.port}: {e}") from None
