"""The Kafka-protocol endpoint: serves changefeed topics to Kafka consumers (YDB's Kafka API, logtide flavour).

``KafkaBroker(reader, config, auth)`` is a one-node cluster (node 0) that is
every partition's leader and every group's coordinator.  It runs on an
asyncio loop (``logtide serve`` runs it beside the CQL listener); reads of
the topic store run on its own thread pool.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import ssl
import threading
from dataclasses import dataclass, replace
from typing import Any

from logtide.changefeed.api import TopicReader
from logtide.ratelog import RateLimitedLog
from logtide.server.limits import ConnectionSlots, default_fd_reserve, plan_descriptors
from logtide.server.listener import Listener
from logtide.server.login import LoginGuard
from logtide.server.server import _primary_address

from .acl import GroupAccess
from .batches import BatchCache
from .connection import KafkaConnection
from .groups import Coordinator
from .topics import Topics

log = logging.getLogger("logtide.kafka")

DEFAULT_PORT = 9092
# frames a connection may send before it has logged in (with --auth): the SASL exchange needs a few hundred
# bytes; Kafka's sasl.server.max.receive.size is 512 KiB, the CQL port's limit before login 128 KiB
MAX_PRELOGIN_BYTES = 128 << 10
# frames after login (--kafka-max-request-bytes): Kafka's socket.request.max.bytes is 100 MiB, for brokers
# that take produced batches; consumers' requests are small, and a producer's largest request by default
# (max.request.size, message.max.bytes: about 1 MB) still fits, so that it is answered, not cut off
DEFAULT_MAX_REQUEST_BYTES = 2 << 20


@dataclass
class KafkaConfig:
    """Where and how the Kafka endpoint listens."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT  # 0: an ephemeral port (``logtide serve --kafka-port auto``)
    advertised_host: str | None = None  # what Metadata tells clients; default: the bound address
    tls: ssl.SSLContext | None = None
    threads: int = 16  # threads for reads and commits
    wait_threads: int = 256  # threads for long-poll waits, one per waiting Fetch (apart: waits never starve reads)
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES  # largest request frame after login
    max_prelogin_bytes: int = MAX_PRELOGIN_BYTES  # largest frame before login (with auth)
    auth_timeout: float = 10.0  # seconds to log in (with auth), as the CQL port's --auth-timeout; 0: no limit
    idle_timeout: float = 600.0  # close a connection with no request for this long (connections.max.idle.ms); 0: never
    max_connections: int | None = None  # own cap when no shared ConnectionSlots is given; None: descriptors decide
    log_interval: float = 60.0  # a repeated failure (refusals, oversized frames) is logged once per interval
    max_request_elements: int = 10_000  # array elements one request may hold (docs/kafka.md "Limits")
    session_check_interval: float = 0.5
    batch_cache_bytes: int = 64 << 20  # encoded record batches kept for Fetch (logtide/kafka/batches.py)

    @property
    def reader_threads(self) -> int:
        """Threads that hold a SQLite reader whatever the load (the reads and commits pool)."""
        return self.threads


class KafkaBroker:
    """One Kafka broker over a TopicReader; ``auth`` is logtide's AuthManager (or None)."""

    def __init__(self, reader: TopicReader, config: KafkaConfig | None = None, auth: Any = None,
                 slots: ConnectionSlots | None = None, login: LoginGuard | None = None) -> None:
        """``slots``: the connection cap shared with the CQL port (None: the endpoint's own, from the open
        file limit); ``login``: the password checks shared with it (None: the endpoint's own)."""
        self.config = config or KafkaConfig()
        self.topics = Topics(reader, auth)
        self.auth = auth
        self.auth_required = self.topics.auth is not None
        self.failures = RateLimitedLog(log, self.config.log_interval)
        self.login = login or LoginGuard(auth)
        self._own_login = login is None
        if slots is None:
            plan = plan_descriptors(self.config.max_connections, default_fd_reserve(0), self.config.reader_threads,
                                    self.config.wait_threads)
            slots = ConnectionSlots(plan.connections)
            self.config = replace(self.config, wait_threads=plan.wait_threads)
        self.slots = slots
        self.coordinator = Coordinator()
        self.access = GroupAccess(self.topics, self.coordinator)
        self.batches = BatchCache(reader, self.config.batch_cache_bytes)
        # damaged changefeed records answered CORRUPT_MESSAGE (clients retry at once): a line a minute per partition
        self.damage_log = RateLimitedLog(log)
        self.pool = concurrent.futures.ThreadPoolExecutor(self.config.threads, thread_name_prefix="logtide-kafka")
        self.wait_pool = concurrent.futures.ThreadPoolExecutor(self.config.wait_threads,
                                                               thread_name_prefix="logtide-kafka-wait")
        self.address: tuple[str, int] | None = None
        self.advertised: tuple[str, int] = ("127.0.0.1", 0)
        self._listener: Listener | None = None
        self._tasks: set[asyncio.Task] = set()
        self._expiry: asyncio.Task | None = None
        self.requests: collections.Counter[tuple[int, int]] = collections.Counter()  # (API key, version) served

    async def start(self) -> tuple[str, int]:
        """Bind and start accepting; returns the bound (host, port)."""
        self._listener = Listener("Kafka", self._accept, self.slots, self.failures, self.config.tls,
                                  self.config.auth_timeout)
        self.address = await self._listener.start(self.config.host, self.config.port)
        host = self.config.advertised_host or self.address[0]
        if host in ("0.0.0.0", "::"):
            host = _primary_address()
        self.advertised = (host, self.address[1])
        self._expiry = asyncio.get_running_loop().create_task(self._expire_sessions())
        return self.address

    async def stop(self) -> None:
        if self._listener is None:
            return
        listener, self._listener = self._listener, None
        await listener.close()
        if self._expiry is not None:
            self._expiry.cancel()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=10)
        if self._own_login:
            self.login.shutdown()
        # reads in flight finish (a long-poll wait within WAIT_SLICE) before the caller closes the database
        await asyncio.to_thread(self.wait_pool.shutdown, True, cancel_futures=True)
        await asyncio.to_thread(self.pool.shutdown, True, cancel_futures=True)
        await asyncio.to_thread(self.batches.close)

    async def _expire_sessions(self) -> None:
        while True:
            await asyncio.sleep(self.config.session_check_interval)
            try:
                self.coordinator.expire()
            except Exception:  # never stop checking
                log.exception("group session check failed")

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await KafkaConnection(self, reader, writer).run()
        finally:
            self._tasks.discard(task)

    def stats(self) -> dict[str, int]:
        return {"connections": len(self._tasks), "groups": len(self.coordinator.groups),
                "max_connections": self.slots.cap}


class BackgroundKafka:
    """A KafkaBroker on its own event loop in a daemon thread (tests, benchmarks, embedding)."""

    def __init__(self, reader: TopicReader, config: KafkaConfig | None = None, auth: Any = None) -> None:
        self.broker = KafkaBroker(reader, config or KafkaConfig(port=0), auth)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="logtide-kafka", daemon=True)

    @property
    def bootstrap(self) -> str:
        assert self.broker.address is not None
        return f"{self.broker.advertised[0]}:{self.broker.advertised[1]}"

    def start(self, timeout: float = 30) -> "BackgroundKafka":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.broker.start(), self._loop).result(timeout)
        return self

    def stop(self, timeout: float = 30) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.broker.stop(), self._loop).result(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)

    def stats(self) -> dict[str, int]:
        async def run() -> dict[str, int]:
            return self.broker.stats()
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    def __enter__(self) -> "BackgroundKafka":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
